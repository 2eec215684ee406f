"""What the agent can write in one turn: the rule a turn of several calls obeys, and the oracle's batches.

A turn may hold several calls (run in order, as BFCL's parallel calls are), but an agent writes the
whole turn before it sees any result. So no call of a turn may use a value that only the turn's own
results show: a string argument (a path, an id, an email) that the agent has not seen (the
conversation so far: the task's opening, the user's requests, the tool results of earlier turns),
that the service holds, and that a result of the turn shows (a path ``find_files`` returned, an
event id from ``search_events``, a message id a delete echoes). The env refuses such a turn of
several calls as an invalid action before anything changes (``unseen_value``), and an answer that
states a fact the agent never saw fails its user turn (the env's Rewards), so neither merging the
oracle's calls into fewer turns nor leaving its lookups out beats its turn count, ``oracle_turns``:
the dependency depth of its solution under that rule (``layers``).

Only strings are followed: numbers are too short to tell one source from another (a 2 in a result
is not the 2 of "two shares"), so an amount copied from a listing counts as written by the agent.
A value is shown in a text where it stands as a whole token (``e6`` is not shown by ``e60``).
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
from typing import Any, Iterator, Sequence

from budgetgym.core import ToolCall


def leaves(value: Any) -> Iterator[str]:
    """The non-empty strings inside a call's arguments, in order; an absolute path in the normal form
    the file system reads it in (``/docs/./a.md`` and ``//docs/a.md`` are ``/docs/a.md``), or a
    respelling would use a path that only the turn's own results show."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, str) and value.strip():
        yield "/" + posixpath.normpath(value).lstrip("/") if value.startswith("/") else value


@functools.lru_cache(maxsize=4096)
def _token(value: str) -> re.Pattern[str]:
    # The value as written in a request and as a JSON result escapes it, as a whole token.
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    spellings = "|".join(re.escape(s) for s in dict.fromkeys((value, escaped)))
    return re.compile(rf"(?<!\w)(?:{spellings})(?!\w)")


def shown(value: str, text: str) -> bool:
    """Whether ``text`` shows the string ``value`` as a whole token (raw or JSON-escaped)."""
    if value not in text and json.dumps(value, ensure_ascii=False)[1:-1] not in text:
        return False  # the common case, without a regular expression
    return _token(value).search(text) is not None


def unseen_value(calls: Sequence[ToolCall], results: Sequence[str], seen: str, before: str) -> tuple[int, str] | None:
    """The first value a call of one turn uses that the agent cannot know yet, as (the call's index,
    the value), or None when the turn obeys the rule: a string the agent has not seen (``seen``),
    that the service held before the turn (``before``: its state as JSON text) and that a result of
    the same turn shows (``results``, the calls' results as the agent will see them). A value of the
    agent's own (a new file's name, a message in its words) is not in the service before the turn."""
    for index, call in enumerate(calls):
        for value in leaves(call.arguments):
            if not shown(value, seen) and shown(value, before) and any(shown(value, result) for result in results):
                return index, value
    return None


def layers(calls: Sequence[ToolCall], results: Sequence[str], seen: str) -> list[int]:
    """The earliest turn (1-based) each of ``calls`` can be made in under the rule, given each call's
    result (``results``) and what the agent has seen so far (``seen``)."""
    depth: list[int] = []
    for index, call in enumerate(calls):
        needs = 1
        for value in leaves(call.arguments):
            if not shown(value, seen):
                needs = max([needs, *(depth[i] + 1 for i in range(index) if shown(value, results[i]))])
        depth.append(needs)
    return depth
