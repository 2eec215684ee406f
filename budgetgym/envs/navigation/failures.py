"""Build the curated Navigation failure states: ``python -m budgetgym.envs.navigation.failures``.

The core's builder (:mod:`budgetgym.core.failures`) plays the oracle through a game, inserts one
mistake proposed by :meth:`NavigationEnv.propose_mistake` at a seeded point, and keeps the state
after it when the mistake left the clean solution's states (TextWorld's world facts, the env's
``state_key``) and the oracle still wins within the task's full budget. Each kind is built over
the tasks on its own (one state per task and kind), the tiers interleaved so each kind spans them;
then every game still without a state (on either split) gets one of the first kind that suits it,
so a recovery probe on any split or game has states to draw.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Iterable

from budgetgym.core import Task, TaskSet
from budgetgym.core.failures import build_failure_states
from budgetgym.core.tasks import ASSETS

PER_KIND = 20
FAILURES_PATH = ASSETS / "navigation" / "failure_states.jsonl"


def interleaved(tasks: Iterable[Task]) -> list[Task]:
    """The tasks with the tiers alternating (easy, medium, hard, easy, ...)."""
    tiers: dict[str, list[Task]] = {}
    for task in tasks:
        tiers.setdefault(task["tier"], []).append(task)
    columns = list(tiers.values())
    return [column[i] for i in range(max(map(len, columns))) for column in columns if i < len(column)]


def generate_failure_states(tasks: TaskSet, per_kind: int = PER_KIND, seed: int = 0) -> list[dict[str, Any]]:
    from budgetgym.envs.navigation.env import NavigationEnv

    env = NavigationEnv(tasks=tasks)
    try:
        states: list[dict[str, Any]] = []
        for kind in env.failure_kinds:
            built = build_failure_states(env, interleaved(tasks), per_kind, seed=seed,
                                         namespace="budgetgym-navigation-failures", kinds=(kind,))
            print(f"{kind}: {len(built)}", file=sys.stderr, flush=True)
            states.extend(built)
        # The core builder gives each task the first kind that suits it, the kinds rotating over tasks.
        covered = {state["task_id"] for state in states}
        uncovered = [task for task in tasks if task.id not in covered]
        states.extend(build_failure_states(env, uncovered, max(len(uncovered), 1), seed=seed,
                                           namespace="budgetgym-navigation-failures"))
        print(f"games covered: {len({state['task_id'] for state in states})} of {len(tasks)}",
              file=sys.stderr, flush=True)
        return states
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    from budgetgym.core.jsonl import write_jsonl
    from budgetgym.core.tasks import load_tasks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    states = generate_failure_states(load_tasks("navigation"), args.per_kind, args.seed)
    write_jsonl(FAILURES_PATH, states)
    print(f"{len(states)} failure states -> {FAILURES_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
