"""Helpers for JSON-shaped backend state, shared by every family with an in-memory backend."""

from __future__ import annotations

import pickle
from typing import Any


def copy_state(state: Any) -> Any:
    """A deep copy of a JSON state. Pickle round-trips plain dicts and lists in C, several times
    faster than ``copy.deepcopy`` or a JSON round trip; reset and restore both pay for one."""
    return pickle.loads(pickle.dumps(state, pickle.HIGHEST_PROTOCOL))
