"""``Draft``: how a generator writes a task, by playing the reference conversation on a real backend.

A generator opens a user turn (``user``), makes the reference solution's calls on the draft's own
backend (``look`` for reads, ``do`` for changes; a tool error here is a bug in the generator and
raises), and closes the turn with the answer (``reply``). The draft records, per turn, the request,
the lookups, the expected state (the projection of the backend after the turn), whether the turn
changes the state, the facts the answer must carry, the distractors it must not state, and whether
the request must be declined. The reference answer is scored as an agent's would be, so a generator
that writes an answer its own turn would refuse fails at once.

Besides the distractors a generator names, every value of a fact's kind (an amount for an amount,
a path for a path, ...) that the turn's tool results show and neither the request nor the reference
answer states is a distractor: the other candidates an answer would name if it pasted the results
instead of answering (the exploit probe's paste agents). ``generate.py`` turns drafts into
task records.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from budgetgym.core import Tool
from budgetgym.core.state import copy_state
from budgetgym.core.tools import ToolError
from budgetgym.envs.function_calling.scoring import answer_problem, has_fact, value_kinds, values_of_kind


class Draft:
    """A task being written: initial state, tool subset and turns.

    Args:
        domain: the domain's name.
        tools: the domain's tools (name -> Tool).
        project: the domain's scoring projection.
        backend: the domain's backend class.
        state: the initial state (copied).
    """

    def __init__(
        self,
        domain: str,
        tools: Mapping[str, Tool],
        project: Callable[[Mapping[str, Any]], dict[str, Any]],
        backend: Callable[[dict[str, Any]], Any],
        state: dict[str, Any],
    ) -> None:
        self.domain = domain
        self.all_tools = tools
        self.tools: list[str] = list(tools)
        self.initial_state = copy_state(state)
        self.backend = backend(copy_state(state))
        self.project = project
        self.turns: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    @property
    def state(self) -> Mapping[str, Any]:
        return self.backend.state

    def without_tools(self, *names: str) -> None:
        """Offer this task's agent every tool but these (a request may then be impossible)."""
        self.tools = [name for name in self.tools if name not in names]

    def user(self, request: str) -> None:
        if self._open is not None:
            raise RuntimeError("the previous user turn has no reply yet")
        self._open = {"request": request, "lookups": [], "changes": [], "results": [],
                      "before": copy_state(self.project(self.state))}

    def look(self, tool: str, /, **arguments: Any) -> Any:
        """A read the reference solution makes; the oracle repeats it before acting."""
        self._current()["lookups"].append({"name": tool, "arguments": arguments})
        return self._run(tool, arguments)

    def do(self, tool: str, /, **arguments: Any) -> Any:
        """A change the reference solution makes (the oracle re-plans changes from the state)."""
        self._current()["changes"].append({"name": tool, "arguments": arguments})
        return self._run(tool, arguments)

    def reply(self, answer: str, facts: Sequence[Any] = (), decline: bool = False,
              distractors: Sequence[Any] = (), clarify: bool = False) -> None:
        """Close the turn with the oracle's ``answer``. ``facts``: only what the request asks for (a
        string, or a list of equivalent spellings), each of which ``answer`` must state; ``decline``:
        the request cannot be done, so the state must stay as it was and the answer must say so;
        ``distractors``: what a wrong or lazy answer would state instead (the other account's
        balance, the other file's path), none of which an answer may state. A distractor that some
        spelling of a fact would also match is dropped (two accounts can hold the same amount).
        ``clarify``: the request is ambiguous and the answer asks which one is meant, naming the
        candidates (the facts); "I can't tell which one you mean" is then a fair answer."""
        turn = self._current()
        expected = copy_state(self.project(self.backend.state))
        distractors = [*distractors, *self._shown_candidates(turn, answer, facts)]
        kept = []
        for distractor in distractors:
            spellings = distractor if isinstance(distractor, list) else [distractor]
            clashes = any(has_fact(spelling, fact) for spelling in spellings for fact in facts)
            if not clashes and distractor not in kept:
                kept.append(distractor)
        record = {
            "request": turn["request"],
            "lookups": turn["lookups"],
            "expected": expected,
            "changes": expected != turn["before"],
            "facts": list(facts),
            "distractors": kept,
            "decline": decline,
            "clarify": clarify,
            "answer": answer,
        }
        problem = answer_problem(record, answer)
        if problem is not None:
            raise RuntimeError(f"the reference answer {answer!r} to {turn['request']!r} fails its own turn: {problem}")
        self._open = None
        self.turns.append(record)

    @staticmethod
    def _shown_candidates(turn: Mapping[str, Any], answer: str, facts: Sequence[Any]) -> list[str]:
        """The values of the facts' kinds that the turn's tool results show and neither the request
        nor ``answer`` states, in a stable order."""
        kinds = sorted({kind for fact in facts for spelling in (fact if isinstance(fact, list) else [fact])
                        for kind in value_kinds(spelling)})
        shown = "\n".join(turn["results"])
        return [value for kind in kinds for value in sorted(values_of_kind(shown, kind))
                if not has_fact(answer, value) and not has_fact(turn["request"], value)]

    def _current(self) -> dict[str, Any]:
        if self._open is None:
            raise RuntimeError("open a user turn with user() first")
        return self._open

    def _run(self, name: str, arguments: dict[str, Any]) -> Any:
        if name not in self.tools:
            raise RuntimeError(f"the reference solution uses {name!r}, which this task does not offer")
        tool = self.all_tools[name]
        problem = tool.validation_error(arguments)
        if problem is not None:
            raise RuntimeError(f"generator call {name}({arguments}) breaks the schema: {problem}")
        try:
            result = tool.function(self.backend, **arguments)
        except ToolError as err:
            raise RuntimeError(f"generator call {name}({arguments}) failed: {err}") from None
        self._current()["results"].append(json.dumps(result, ensure_ascii=False))
        return result
