"""Writes ``budgetgym/assets/miniwob/tasks.jsonl`` (one task per supported MiniWoB++ task) and
``budgetgym/assets/miniwob/failure_states.jsonl`` (the curated failure states).

``python -m budgetgym.envs.miniwob.generate``. MiniWoB's own JavaScript draws each episode's
instance from the episode seed, so a task is a MiniWoB task name; its full budget comes from the
longest oracle solution (``oracles.ORACLE_TURNS``). The test split holds MiniWoB's transfer and
harder variants of tasks whose base form is in training (click-checkboxes-transfer beside
click-checkboxes, click-tab-2-hard beside click-tab-2, multi-layouts beside multi-orderings, ...)
and a few tasks of their own. The failure states need the browser (each is the oracle's trajectory
with one mistake, kept when the oracle still recovers, built by :mod:`budgetgym.core.failures`;
a few minutes):
``--tasks-only`` rewrites the task list alone.
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
TEST_TASKS = frozenset({
    "click-test-transfer", "click-checkboxes-transfer", "click-tab-2-hard", "click-collapsible-2-nodelay",
    "click-dialog-2", "focus-text-2", "enter-text-dynamic", "enter-password", "login-user-popup",
    "multi-layouts", "click-option", "social-media",
})


def tasks() -> list[dict]:
    return [{"id": f"miniwob/{name}", "split": "test" if name in TEST_TASKS else "train", "miniwob_task": name,
             "instruction": f"MiniWoB++ {name}: the page states the task (a new instance each episode seed).",
             "oracle_turns": turns, "max_turns": full_budget(turns)} for name, turns in ORACLE_TURNS.items()]


def generate_failure_states(seed: int = 0) -> list[dict[str, Any]]:
    """As many failure states as the tasks give: per split and kind, one per task where the kind fits
    (MiniWoB has a few dozen tasks, each with one trajectory, so no task is left out for balance)."""
    import gymnasium as gym

    from budgetgym.core.failures import build_failure_states

    env = gym.make(ENV_ID)
    try:
        task_set = env.unwrapped.all_tasks
        return [state for split in ("train", "test") for kind in env.unwrapped.failure_kinds
                for state in build_failure_states(env, task_set.select(split), len(task_set), seed=seed,
                                                  namespace="budgetgym-miniwob-failures", kinds=(kind,))]
    finally:
        env.close()


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
