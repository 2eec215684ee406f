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
    repeated_call: a change of this user turn made again (a second payment, the message sent twice,
        the event booked twice).

An answer sent before the work is done is a mistake too, but not one to recover from: a failed
answer ends the episode (see the env's Rewards), so it makes no failure state.

``error_step`` is the 0-based index, in the snapshot's transcript, of the mistaken action.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import gymnasium as gym

from budgetgym.core import Action, Task, TaskSet, ToolCall
from budgetgym.core.failures import build_failure_states
from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.domains import READ_ONLY_TOOLS

if TYPE_CHECKING:  # the env imports this module
    from budgetgym.envs.function_calling.env import FunctionCallingEnv

ENV_ID = "budgetgym/FunctionCalling-v0"
KINDS = ("wrong_argument", "wrong_tool", "destructive_call", "skipped_step", "repeated_call")
STATE_CHANGING = ("wrong_argument", "wrong_tool", "destructive_call", "repeated_call")


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
    # The oracle's turn may hold several calls (those that need no result not seen yet): a mistake
    # changes one of its state-changing calls and keeps the others.
    intended = plan[0]
    lookups = [[lookup["name"], lookup["arguments"]] for lookup in turn["lookups"]]
    changes = [] if intended.is_message else [c for c in intended.calls if [c.name, c.arguments] not in lookups]
    intended_call = changes[0] if changes else None
    if kind == "skipped_step":
        if intended_call is None:
            return None  # skipping a read is harmless; going straight to the answer is a premature answer
        rest = tuple(c for c in intended.calls if c is not intended_call)
        if rest:
            return Action(rest), f"skipped {_describe(intended_call)} and made only the turn's other calls"
        if len(plan) < 2 or plan[1].is_message:
            return None
        following = ", ".join(_describe(c) for c in plan[1].calls)
        return plan[1], f"skipped {_describe(intended_call)} and went straight to {following}"
    if kind == "repeated_call":
        done = [call for call in env.calls_this_turn
                if call.name not in READ_ONLY_TOOLS and [call.name, call.arguments] not in lookups]
        if not done:
            return None
        return Action((done[-1],)), f"made {_describe(done[-1])} a second time"
    state = env.backend_state
    if kind == "destructive_call":
        call = domain.mistakes.destructive(state, rng)
        description = f"made an unrequested destructive call, {_describe(call)}" if call else ""
        if call is None or call.name not in env.tools:
            return None
        return Action((call,)), description
    if intended_call is None:
        return None
    hook = domain.mistakes.wrong_argument if kind == "wrong_argument" else domain.mistakes.wrong_tool
    call = hook(intended_call, state, rng)
    if call is None or call.name not in env.tools:
        return None
    description = f"called {_describe(call)} where {_describe(intended_call)} was needed"
    return Action(tuple(call if c is intended_call else c for c in intended.calls)), description


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
