"""Rebuilds MiniWoB-v0's shipped data: ``budgetgym/assets/miniwob/tasks.jsonl`` (one task per
supported MiniWoB++ task) and ``budgetgym/assets/miniwob/failure_states.jsonl`` (the curated
failure states). The family's one data command:

    python -m budgetgym.envs.miniwob.assets [--tasks-only]

MiniWoB's own JavaScript draws each episode's
instance from the episode seed, so a task is a MiniWoB task name; its full budget comes from the
longest oracle solution (``oracles.ORACLE_TURNS``). The test split holds MiniWoB's transfer and
harder variants of tasks whose base form is in training (click-checkboxes-transfer beside
click-checkboxes, click-tab-2-hard beside click-tab-2, multi-layouts beside multi-orderings, ...)
and a few tasks of their own. The failure states need the browser (each is the oracle's trajectory
with one mistake, kept when the oracle still recovers within the full budget, built by
:mod:`budgetgym.core.failures` at each of the episode seeds ``TRAJECTORY_SEEDS``, so each task gives
a state per kind and instance; several minutes); ``--tasks-only`` rewrites the task list alone.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

from budgetgym.core import full_budget, write_jsonl
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.miniwob.oracles import ORACLE_TURNS

TASKS_PATH = ASSETS / "miniwob" / "tasks.jsonl"
FAILURES_PATH = ASSETS / "miniwob" / "failure_states.jsonl"
ENV_ID = "budgetgym/MiniWoB-v0"
TRAJECTORY_SEEDS = range(5)  # the episode seeds the failure states are built at (seed 0's keep their old ids)
TEST_TASKS = frozenset({
    "click-checkboxes-transfer", "click-tab-2-hard", "click-collapsible-2-nodelay", "click-dialog-2",
    "focus-text-2", "enter-text-dynamic", "enter-password", "login-user-popup", "multi-layouts", "click-option",
    "social-media", "simple-algebra", "text-transform",
})


def tasks() -> list[dict]:
    return [{"id": f"miniwob/{name}", "split": "test" if name in TEST_TASKS else "train", "miniwob_task": name,
             "instruction": f"MiniWoB++ {name}: the page states the task (a new instance each episode seed).",
             "oracle_turns": turns, "max_turns": full_budget(turns)} for name, turns in ORACLE_TURNS.items()]


def generate_failure_states(seed: int = 0) -> list[dict[str, Any]]:
    """As many failure states as the tasks give: per episode seed, split and kind, one per task where
    the kind fits (MiniWoB has a few dozen tasks, so no task is left out for balance; each seed is
    another instance of every task, drawn by MiniWoB's JavaScript)."""
    import gymnasium as gym

    from budgetgym.core import SnapshotError
    from budgetgym.core.failures import build_failure_states

    env = gym.make(ENV_ID)
    states = []
    try:
        task_set = env.unwrapped.all_tasks
        for trajectory_seed in TRAJECTORY_SEEDS:
            for split in ("train", "test"):
                for kind in env.unwrapped.failure_kinds:
                    for task in task_set.select(split):
                        try:
                            states += build_failure_states(env, [task], 1, seed=seed, kinds=(kind,),
                                                           namespace="budgetgym-miniwob-failures",
                                                           trajectory_seed=trajectory_seed)
                        except SnapshotError as err:
                            # a page with a timer (login-user-popup's popup) need not replay the same
                            print(f"skipped {task.id} {kind} at seed {trajectory_seed}: {err}", file=sys.stderr)
    finally:
        env.close()
    return states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks-only", action="store_true", help="write the task list only (no browser)")
    args = parser.parse_args(argv)
    TASKS_PATH.parent.mkdir(parents=True, exist_ok=True)
    print(f"wrote {write_jsonl(TASKS_PATH, tasks())} tasks to {TASKS_PATH}", file=sys.stderr)
    if not args.tasks_only:
        states = generate_failure_states()
        write_jsonl(FAILURES_PATH, states)
        splits = {record["id"]: record["split"] for record in tasks()}
        counts = collections.Counter((splits[s["task_id"]], s["kind"]) for s in states)
        print(f"wrote {len(states)} failure states to {FAILURES_PATH}: {dict(sorted(counts.items()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
