"""JSON Schemas of the function-calling env's fast-restore state, and the checks a schema cannot say.

A snapshot's ``state`` is ``{"backend": <the service's state dict>, "user_turn": int, "turn_calls":
[[tool, arguments], ...]}``. Before a restore changes anything, the core validates it against
:func:`state_schema` (one a domain: the domain decides the backend's schema), and the env runs
:func:`task_problem` (the task's bounds: its user turns, tools and budget) and
:func:`backend_problem` for what a schema cannot express (the current folder exists, a message is
filed under its own id, ...). A state that passes them all is one the tools could have made.
"""

from __future__ import annotations

import posixpath
from typing import Any, Mapping

from budgetgym.core.tasks import Task

_TEXT = {"type": "string"}
_COUNT = {"type": "integer", "minimum": 0}
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_TIME = {"type": "string", "pattern": r"^\d{2}:\d{2}$"}


def _record(properties: Mapping[str, Any], required: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties),
            "required": list(properties if required is None else required), "additionalProperties": False}


def _table(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": value}


BACKEND_SCHEMAS: dict[str, dict[str, Any]] = {
    "filesystem": _record({
        "cwd": _TEXT,
        "dirs": {"type": "array", "items": _TEXT, "uniqueItems": True},
        "files": _table(_TEXT),
    }),
    "messaging": _record({
        "owner": _TEXT,
        "contacts": _table(_record({"email": {"type": ["string", "null"]}, "phone": {"type": ["string", "null"]}})),
        "messages": _table(_record({
            "id": _TEXT, "folder": {"enum": ["inbox", "sent"]}, "from": _TEXT, "to": _TEXT, "text": _TEXT,
            "read": {"type": "boolean"}, "trashed": {"type": "boolean"},
        })),
        "next_id": _COUNT,
    }),
    "calendar": _record({
        "today": _DATE,
        "events": _table(_record({
            "id": _TEXT, "title": _TEXT, "date": _DATE, "start": _TIME, "end": _TIME,
            "attendees": {"type": "array", "items": _TEXT},
        })),
        "next_id": _COUNT,
    }),
    "banking": _record({
        "customer": _TEXT,
        "accounts": _table(_record({"number": _TEXT, "balance": {"type": "integer"}})),
        "payees": _table(_record({"account_number": _TEXT})),
        "payments": _table(_record({
            "id": _TEXT, "payee": _TEXT, "from_account": _TEXT, "amount": {"type": "integer", "minimum": 1},
            "status": {"enum": ["pending", "cancelled"]},
        })),
        "prices": _table({"type": "integer", "minimum": 1}),
        "holdings": _table(_COUNT),
        "transactions": {"type": "array", "items": _record({
            "id": _TEXT, "account": _TEXT, "amount": {"type": "number"}, "description": _TEXT,
        })},
        "next_id": _COUNT,
    }),
}


def state_schema(domain: str) -> dict[str, Any]:
    """The schema of the fast-restore state of a task of ``domain``: the service's state, the user
    turn, and the current user turn's calls. One schema a domain, so the validator compiled for it
    serves every task of the domain; the task's own bounds are :func:`task_problem`'s."""
    return _STATE_SCHEMAS[domain]


_STATE_SCHEMAS = {domain: _record({
    "backend": backend,
    "user_turn": _COUNT,
    "turn_calls": {"type": "array",
                   "items": {"type": "array", "minItems": 2, "maxItems": 2, "prefixItems": [_TEXT, {"type": "object"}]}},
}) for domain, backend in BACKEND_SCHEMAS.items()}


def task_problem(task: Task, state: Mapping[str, Any], calls_per_turn: int) -> str | None:
    """What makes a schema-valid state impossible for ``task``, or None: a user turn past its turns,
    more calls than ``calls_per_turn`` a turn over its full budget, a call to a tool it does not offer."""
    if state["user_turn"] > len(task["turns"]):
        return f"user_turn is {state['user_turn']}, but the task has {len(task['turns'])} user turns"
    if len(state["turn_calls"]) > calls_per_turn * task.max_turns:
        return (f"{len(state['turn_calls'])} calls in the user turn, more than {calls_per_turn} a turn "
                f"over the task's {task.max_turns} turns")
    tools = task["tools"]
    unknown = next((name for name, _ in state["turn_calls"] if name not in tools), None)
    if unknown is not None:
        return f"a call to {unknown!r}, which the task does not offer"
    return None


def backend_problem(domain: str, state: Mapping[str, Any]) -> str | None:
    """What makes a schema-valid backend state impossible for the service, or None."""
    if domain == "filesystem":
        dirs = set(state["dirs"])
        normpath = posixpath.normpath
        for path in (*state["dirs"], *state["files"]):
            if path == "/":
                continue
            if path[:1] != "/" or "//" in path or normpath(path) != path:
                return f"the path {path!r} is not absolute and normal"
            if (path.rpartition("/")[0] or "/") not in dirs:  # posixpath.dirname of a normal absolute path
                return f"the folder of {path!r} does not exist"
        if "/" not in dirs:
            return "the root folder is missing"
        if state["cwd"] not in dirs:
            return f"the current folder {state['cwd']!r} does not exist"
        if dirs & set(state["files"]):
            return "a path is both a folder and a file"
    for table in ("messages", "events", "payments"):
        for key, item in state.get(table, {}).items():
            if item["id"] != key:
                return f"{table} entry {key!r} holds the id {item['id']!r}"
    if domain == "banking":
        for payment in state["payments"].values():
            if payment["from_account"] not in state["accounts"]:
                return f"payment {payment['id']!r} is from an unknown account"
        if any(symbol not in state["prices"] for symbol in state["holdings"]):
            return "a holding has no price"
    if domain == "calendar":
        for event in state["events"].values():
            if not event["start"] < event["end"]:
                return f"event {event['id']!r} ends before it starts"
    return None
