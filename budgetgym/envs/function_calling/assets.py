"""Rebuild the shipped assets of the family:

    python -m budgetgym.envs.function_calling.assets

writes ``budgetgym/assets/function_calling/tasks.jsonl`` (the curated tasks, then the tasks
generated from seed 0) and ``failure_states.jsonl`` (curated failure states over those tasks).
Deterministic: running it twice gives the same files.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

from budgetgym.core import TaskSet, read_jsonl, write_jsonl
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.function_calling.curated import CURATED, CURATED_TEST
from budgetgym.envs.function_calling.failures import generate_failure_states
from budgetgym.envs.function_calling.generate import generate_tasks, task_record

FOLDER = ASSETS / "function_calling"
GENERATED_SEED = 0
GENERATED_COUNT = 240
FAILURES_PER_KIND = 30


def shipped_tasks() -> list[dict[str, Any]]:
    curated = [task_record(draft(), task_id, "test" if task_id in CURATED_TEST else "train", source="curated")
               for task_id, draft in CURATED.items()]
    return curated + generate_tasks(GENERATED_SEED, GENERATED_COUNT)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    FOLDER.mkdir(parents=True, exist_ok=True)
    write_jsonl(FOLDER / "tasks.jsonl", shipped_tasks())
    # Failure states are made from the tasks as read back from disk, exactly as the env will load them.
    tasks = read_jsonl(FOLDER / "tasks.jsonl")
    states = generate_failure_states(TaskSet(tasks), FAILURES_PER_KIND)
    write_jsonl(FOLDER / "failure_states.jsonl", states)
    splits = collections.Counter(t["split"] for t in tasks)
    kinds = collections.Counter(s["kind"] for s in states)
    print(f"{len(tasks)} tasks {dict(splits)}; {len(states)} failure states {dict(kinds)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
