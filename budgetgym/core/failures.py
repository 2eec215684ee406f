"""Curated failure states, built from any family's hooks: the oracle's own trajectory with one
mistake inserted.

For a task, the oracle is played to the end while a snapshot is kept before each of its actions.
The points of the trajectory are tried in a seeded random order; at each, the snapshot is restored
and the family proposes a mistake of the asked kind (:meth:`TextEnv.propose_mistake`, given the
oracle's remaining plan from that point). The mistake is played instead of the oracle's action, and
the state after it is kept as the failure state when:

* the mistake was a valid action that neither ended the episode nor advanced its progress (an early
  answer the user accepts is no mistake);
* for the family's ``state_changing_kinds``, it moved :meth:`TextEnv.state_key` off every state the
  clean solution passes through (doing early what the solution does later is no mistake either);
* the oracle, from the failure state, still completes the task within the task's full budget.

Records: ``id`` (``<task id>/<kind>``, then ``/<seed>`` for a trajectory of another episode seed),
``task_id``, ``kind``, ``description`` (the family's sentence), ``error_step`` (the 0-based index of
the mistaken action in the snapshot's transcript) and ``snapshot``. The same tasks, kinds and seed give the same records, byte for byte.
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Sequence

import gymnasium as gym

from budgetgym.core.actions import Action, ActionError, parse_action
from budgetgym.core.rollout import rollout
from budgetgym.core.tasks import Task

TRAJECTORY_SEED = 0
"""The episode seed of every trajectory: the snapshots must be reproducible."""


def oracle_plan(env: gym.Env, task: Task,
                seed: int = TRAJECTORY_SEED) -> tuple[list[tuple[dict[str, Any], Action, str]], str]:
    """The oracle's solution of ``task`` in the episode of ``seed``: (snapshot before, structured
    action, state key before) for each step, and the state key at the end."""
    base = env.unwrapped
    steps: list[tuple[dict[str, Any], Action, str]] = []

    def record(observation: str, info: dict[str, Any], env: gym.Env) -> str | None:
        action = base.structured_oracle()
        if action is None:
            return None
        steps.append((base.snapshot(), action, base.state_key()))
        return base.render_oracle(action)

    rollout(env, record, seed=seed, options={"task_id": task.id})
    return steps, base.state_key()


def oracle_recovers(env: gym.Env, snapshot: dict[str, Any]) -> bool:
    """Whether the oracle completes the task from ``snapshot`` within the task's full budget."""
    observation, info = env.reset(options={"snapshot": snapshot})
    return rollout(env, "oracle", start=(observation, info)).success


def build_failure_state(env: gym.Env, task: Task, kind: str, rng: random.Random,
                        trajectory_seed: int = TRAJECTORY_SEED) -> dict[str, Any] | None:
    """One failure state of ``kind`` for ``task``, or None when no point of the trajectory suits it.
    ``trajectory_seed``: the episode seed of the oracle's trajectory, for families whose seed draws
    the instance (a state of another seed than the default has ``/<seed>`` at the end of its id)."""
    base = env.unwrapped
    if kind not in base.failure_kinds:
        raise ValueError(f"{type(base).__name__} makes no mistakes of kind {kind!r}; it knows {base.failure_kinds}")
    steps, final_key = oracle_plan(env, task, trajectory_seed)
    # Every state the clean solution passes through: a state-changing mistake must leave this path.
    clean = {key for _, _, key in steps} | {final_key} if kind in base.path_leaving_kinds else set()
    plan = [action for _, action, _ in steps]
    points = list(range(len(steps)))
    rng.shuffle(points)
    for point in points:
        env.reset(options={"snapshot": steps[point][0]})
        proposed = base.propose_mistake(kind, plan[point:], rng)
        if proposed is None:
            continue
        mistake, description = proposed
        if _same_action(base, mistake, plan[point]):
            continue  # what the oracle would do anyway
        progress = base._progress
        _, _, terminated, truncated, info = env.step(base.render_oracle(mistake))
        if terminated or truncated or not info["action_valid"] or info["progress"] > progress:
            continue  # not a mistake after all
        if clean and base.state_key() in clean:
            continue
        failure = base.snapshot()
        if not oracle_recovers(env, failure):
            continue
        return {
            "id": f"{task.id}/{kind}" + (f"/{trajectory_seed}" if trajectory_seed != TRAJECTORY_SEED else ""),
            "task_id": task.id,
            "kind": kind,
            "description": description,
            "error_step": len(failure["transcript"]) - 1,
            "snapshot": failure,
        }
    return None


def build_failure_states(env: gym.Env, tasks: Iterable[Task], per_kind: int, *, seed: int = 0,
                         namespace: str, kinds: Sequence[str] | None = None,
                         trajectory_seed: int = TRAJECTORY_SEED) -> list[dict[str, Any]]:
    """Up to ``per_kind`` failure states of each kind, one per task, over ``tasks`` in order.

    Task i tries the kinds starting from kind i (mod the number of kinds) and keeps the first that
    succeeds, so every prefix of the tasks spreads over the kinds. ``namespace`` names the family's
    random streams (``Random(f"{namespace}/{seed}/{task id}/{kind}")``)."""
    kinds = tuple(kinds or env.unwrapped.failure_kinds)
    counts = {kind: 0 for kind in kinds}
    states = []
    for index, task in enumerate(tasks):
        rotation = kinds[index % len(kinds):] + kinds[: index % len(kinds)]
        for kind in (k for k in rotation if counts[k] < per_kind):
            state = build_failure_state(env, task, kind, random.Random(f"{namespace}/{seed}/{task.id}/{kind}"),
                                        trajectory_seed)
            if state is not None:
                states.append(state)
                counts[kind] += 1
                break
        if all(count >= per_kind for count in counts.values()):
            break
    return states


def _same_action(base: Any, mistake: Action, intended: Action) -> bool:
    try:
        return parse_action(base.render_oracle(mistake), base.tools, bare=base._parse_bare,
                            allow_message=base.accepts_messages) == intended
    except ActionError:
        return False
