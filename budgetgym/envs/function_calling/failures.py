"""FunctionCalling's mistakes, for the core's failure-state builder (:mod:`budgetgym.core.failures`).

The builder plays the oracle, draws a point, and asks the env for a mistake of a kind there
(``FunctionCallingEnv.propose_mistake`` -> :func:`propose`); this module says what each kind is in
this family and spreads the shipped states over domains and splits.

Kinds:
    wrong_argument: the right tool with a wrong argument, and the state changed (wrong folder,
        wrong recipient, slipped zero, wrong hour).
    wrong_tool: another state-changing tool where the oracle's was meant (copy for move, create for
        reschedule, sell for buy).
    destructive_call: an unrequested destructive call (delete, cancel, sell everything) to undo.
    skipped_step: a state-changing call of the oracle skipped, its next call made instead.
    premature_answer: the turn's answer sent to the user before the work was done.

``error_step`` is the 0-based index, in the snapshot's transcript, of the mistaken action.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import gymnasium as gym

from budgetgym.core import Action, Task, TaskSet, ToolCall
from budgetgym.core.failures import build_failure_states
from budgetgym.envs.function_calling.domain import Domain

if TYPE_CHECKING:  # the env imports this module
    from budgetgym.envs.function_calling.env import FunctionCallingEnv

ENV_ID = "budgetgym/FunctionCalling-v0"
KINDS = ("wrong_argument", "wrong_tool", "destructive_call", "skipped_step", "premature_answer")
STATE_CHANGING = ("wrong_argument", "wrong_tool", "destructive_call")


def _describe(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def propose(env: FunctionCallingEnv, domain: Domain, kind: str, plan: Sequence[Action],
            rng: random.Random) -> tuple[Action, str] | None:
    """The mistaken action of ``kind`` instead of the oracle's ``plan[0]``, and the failure state's
    description, or None."""
    turn = env.task["turns"][env.user_turn]  # type: ignore[index]
    chosen = _mistake(kind, env, domain, turn, plan, rng)
    if chosen is None:
        return None
    mistake, what = chosen
    return mistake, f"While serving the request \"{turn['request']}\", the agent {what}."


def _mistake(kind: str, env: FunctionCallingEnv, domain: Domain, turn: Any, plan: Sequence[Action],
             rng: random.Random) -> tuple[Action, str] | None:
    intended = plan[0]
    intended_call = None if intended.is_message else intended.calls[0]
    is_lookup = intended_call is not None and any(
        [intended_call.name, intended_call.arguments] == [lookup["name"], lookup["arguments"]] for lookup in turn["lookups"])
    if kind == "premature_answer":
        if intended_call is None:
            return None
        return Action((), turn["answer"]), f"answered the user before finishing the request; the next step was {_describe(intended_call)}"
    if kind == "skipped_step":
        if intended_call is None or is_lookup or len(plan) < 2 or plan[1].is_message:
            return None  # skipping a read is harmless; going straight to the answer is a premature answer
        following = plan[1].calls[0]
        return plan[1], f"skipped {_describe(intended_call)} and went straight to {_describe(following)}"
    state = env.backend_state
    if kind == "destructive_call":
        call = domain.mistakes.destructive(state, rng)
        description = f"made an unrequested destructive call, {_describe(call)}" if call else ""
    else:
        if intended_call is None or is_lookup:
            return None
        hook = domain.mistakes.wrong_argument if kind == "wrong_argument" else domain.mistakes.wrong_tool
        call = hook(intended_call, state, rng)
        description = f"called {_describe(call)} where {_describe(intended_call)} was needed" if call else ""
    if call is None or call.name not in env.tools:
        return None
    return Action((call,)), description


def generate_failure_states(tasks: TaskSet, per_kind: int, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``per_kind`` failure states of each kind, spread over the tasks (one state per task)."""
    env = gym.make(ENV_ID, tasks=tasks)
    try:
        return build_failure_states(env, _interleaved(tasks), per_kind, seed=seed, namespace="budgetgym-fc-failures",
                                    kinds=KINDS)
    finally:
        env.close()


def _interleaved(tasks: Iterable[Task]) -> list[Task]:
    """Tasks ordered so that domains and splits alternate (each prefix covers all of them)."""
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in tasks:
        groups.setdefault((task["domain"], task.split), []).append(task)
    ordered = []
    queues = [groups[key] for key in sorted(groups)]
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered
