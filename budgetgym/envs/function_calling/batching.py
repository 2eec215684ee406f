"""Which of a turn's calls an agent can make together: the oracle's batches, and the rule a merge obeys.

A turn may hold several calls (run in order, as BFCL's parallel calls are), so the shortest solution
of a user request is not its number of calls but its dependency depth: a call can go in a turn only
once the agent has seen what it needs to write it. A call needs an earlier call's result when one of
its argument values is not in anything the agent has seen (the conversation so far: the task's
opening, the user's requests, the tool results) and that earlier call's result shows it (a path
that ``find_files`` returned, an event id from ``search_events``); a value that no result shows and
the agent has not seen (a sum, half the shares) is computed from what the turn read, so it needs
every read before it. Everything else (values from the request, a message body in the agent's own
words) can go in the first turn.

``layers`` assigns each call of a plan the turn (1, 2, ...) it can be made in at the earliest; the
oracle sends the first layer, sees the results, and plans again. The same rule is what a merge of
the oracle's calls must obey (``tests/envs/test_function_calling.py`` checks that no such merge
beats ``oracle_turns``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from budgetgym.core import ToolCall


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside a call's arguments (strings and numbers; booleans and null say nothing)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def spellings(value: Any) -> tuple[str, ...]:
    """The ways ``value`` can be written in a request or a JSON result ("/a b" and its JSON escape;
    150.0 as "150.0", "150.00" and "150")."""
    if isinstance(value, str):
        escaped = json.dumps(value, ensure_ascii=False)[1:-1]
        return (value,) if escaped == value else (value, escaped)
    forms = {repr(value), f"{value:.2f}" if isinstance(value, float) else str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return tuple(forms)


def shown(value: Any, text: str) -> bool:
    """Whether ``text`` shows ``value`` in one of its spellings."""
    return any(spelling in text for spelling in spellings(value))


def layers(calls: Sequence[ToolCall], results: Sequence[str], seen: str, reads: Sequence[bool]) -> list[int]:
    """The earliest turn (1-based) each of ``calls`` can be made in, given ``results`` (each call's
    result as the agent would see it), ``seen`` (everything the agent has seen so far) and ``reads``
    (which calls only read). See the module docstring for the rule."""
    depth: list[int] = []
    for index, call in enumerate(calls):
        needs = 1
        for value in leaves(call.arguments):
            if shown(value, seen):
                continue
            sources = [i for i in range(index) if shown(value, results[i])]
            if not sources:  # computed from what the turn read
                sources = [i for i in range(index) if reads[i]]
            needs = max([needs, *(depth[i] + 1 for i in sources)])
        depth.append(needs)
    return depth
