"""Bounded caches: a dict that keeps at most ``limit`` entries, the oldest forgotten first.

What an env derives from values it sees again and again (a page's actions, a turn's parse, a checked
snapshot) is kept in a plain dict, bounded so that a long run of new values cannot grow it without
end. Insertion order is the age: the first key is the oldest.
"""

from __future__ import annotations

from typing import Any, TypeVar

V = TypeVar("V")


def keep_bounded(cache: dict[Any, Any], key: Any, value: V, limit: int) -> V:
    """Store ``value`` under ``key`` in ``cache``, the oldest entry forgotten first once it holds
    ``limit``; return ``value``."""
    if len(cache) >= limit:
        del cache[next(iter(cache))]
    cache[key] = value
    return value
