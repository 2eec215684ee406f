"""Curated failure states: the oracle's own trajectory with one scripted mistake inserted.

For a task, the oracle is played to the end while a snapshot is kept before each of its actions.
A point where the mistake makes sense is drawn, the snapshot there restored, and the mistaken action
played instead of the oracle's; the snapshot after it is the failure state. It is kept only when the
mistake was a valid action that changed what it should (the state, for the state-changing kinds), and
the oracle still completes the task from it within the task's full budget.

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

import json
import random
from typing import Any, Iterable, Mapping

import gymnasium as gym

from budgetgym.core import Task, TaskSet, ToolCall
from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.domains import DOMAINS

ENV_ID = "budgetgym/FunctionCalling-v0"
KINDS = ("wrong_argument", "wrong_tool", "destructive_call", "skipped_step", "premature_answer")
STATE_CHANGING = ("wrong_argument", "wrong_tool", "destructive_call")


def _call(action: str) -> ToolCall | None:
    """The oracle's action as a call (its calls are JSON objects), or None for a message."""
    if not action.startswith("{"):
        return None
    record = json.loads(action)
    return ToolCall(record["name"], record["arguments"])


def _describe(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def oracle_trajectory(env: gym.Env, task: Task) -> list[tuple[dict[str, Any], str]]:
    """(snapshot before, oracle action) for each step of the oracle's solution."""
    base = env.unwrapped
    env.reset(seed=0, options={"task_id": task.id})  # a fixed episode seed: the snapshots are reproducible
    steps = []
    while True:
        action = base.oracle_action()
        if action is None:
            return steps
        steps.append((base.snapshot(), action))
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return steps


def make_failure_state(env: gym.Env, task: Task, kind: str, rng: random.Random) -> dict[str, Any] | None:
    """One failure state of ``kind`` for ``task``, or None when no point of the trajectory suits it."""
    base = env.unwrapped
    domain = DOMAINS[task["domain"]]
    steps = oracle_trajectory(env, task)
    # Every state the clean solution passes through: a state-changing mistake must leave this path
    # (selling early what a later request sells is not a mistake the failure state can show).
    clean = {_projection_key(domain, snapshot["state"]["backend"]) for snapshot, _ in steps}
    clean.add(_projection_key(domain, base.backend_state))
    points = list(range(len(steps)))
    rng.shuffle(points)
    for point in points:
        env.reset(options={"snapshot": steps[point][0]})
        request = task["turns"][base.user_turn]["request"]
        chosen = _mistake(kind, base, domain, steps, point, rng)
        if chosen is None:
            continue
        mistake, description = chosen
        user_turn = base.user_turn
        _, _, terminated, truncated, info = env.step(mistake)
        if terminated or truncated or not info["action_valid"] or base.user_turn != user_turn:
            continue  # not a mistake after all (an early answer that already had what it needed)
        if kind in STATE_CHANGING and _projection_key(domain, base.backend_state) in clean:
            continue
        failure = base.snapshot()
        if not _oracle_recovers(env, failure):
            continue
        return {
            "id": f"{task.id}/{kind}",
            "task_id": task.id,
            "kind": kind,
            "description": f"While serving the request \"{request}\", the agent {description}.",
            "error_step": len(failure["transcript"]) - 1,
            "snapshot": failure,
        }
    return None


def _mistake(kind: str, base: Any, domain: Domain, steps: list[tuple[dict[str, Any], str]], point: int,
             rng: random.Random) -> tuple[str, str] | None:
    """The mistaken action of ``kind`` instead of the oracle's at ``point``, and what it was, or None."""
    snapshot, intended = steps[point]
    turn = base.task["turns"][base.user_turn]
    state = base.backend_state
    intended_call = _call(intended)
    is_lookup = any(intended == json.dumps(lookup, ensure_ascii=False) for lookup in turn["lookups"])
    if kind == "premature_answer":
        if intended_call is None:
            return None
        return turn["answer"], f"answered the user before finishing the request; the next step was {_describe(intended_call)}"
    if kind == "skipped_step":
        if intended_call is None or is_lookup or point + 1 >= len(steps):
            return None  # skipping a read is harmless; skip a change
        after, following = steps[point + 1][0], _call(steps[point + 1][1])
        if after["state"]["user_turn"] != snapshot["state"]["user_turn"] or following is None:
            return None  # going straight to the answer is a premature answer, another kind
        return following.to_json(), f"skipped {_describe(intended_call)} and went straight to {_describe(following)}"
    if kind == "destructive_call":
        call = domain.mistakes.destructive(state, rng)
        description = f"made an unrequested destructive call, {_describe(call)}" if call else ""
    else:
        if intended_call is None or is_lookup:
            return None
        hook = domain.mistakes.wrong_argument if kind == "wrong_argument" else domain.mistakes.wrong_tool
        call = hook(intended_call, state, rng)
        description = f"called {_describe(call)} where {_describe(intended_call)} was needed" if call else ""
    if call is None or call.name not in base.tools or call.to_json() == intended:
        return None  # no such mistake here, or it is what the oracle would do anyway
    return call.to_json(), description


def _projection_key(domain: Domain, state: Mapping[str, Any]) -> str:
    return json.dumps(domain.project(state), sort_keys=True)


def _oracle_recovers(env: gym.Env, snapshot: dict[str, Any]) -> bool:
    env.reset(options={"snapshot": snapshot})
    base = env.unwrapped
    while True:
        action = base.oracle_action()
        if action is None:
            return False
        _, _, terminated, truncated, info = env.step(action)
        if terminated:
            return bool(info["success"])
        if truncated:
            return False


def generate_failure_states(tasks: TaskSet, per_kind: int, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``per_kind`` failure states of each kind, spread over the tasks (one state per task)."""
    env = gym.make(ENV_ID, tasks=tasks)
    counts = {kind: 0 for kind in KINDS}
    states = []
    for index, task in enumerate(_interleaved(tasks)):
        wanted = [k for k in KINDS[index % len(KINDS):] + KINDS[: index % len(KINDS)] if counts[k] < per_kind]
        for kind in wanted:
            state = make_failure_state(env, task, kind, random.Random(f"budgetgym-fc-failures/{seed}/{task.id}/{kind}"))
            if state is not None:
                states.append(state)
                counts[kind] += 1
                break
        if all(count >= per_kind for count in counts.values()):
            break
    env.close()
    return states


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
