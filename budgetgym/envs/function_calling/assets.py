"""The function-calling family's one command for its data: rebuild the shipped assets, or write
another generated task set:

    python -m budgetgym.envs.function_calling.assets
    python -m budgetgym.envs.function_calling.assets --out tasks.jsonl [--seed 0] [--n 5000] [--long] [--domains ...]

Without ``--out`` it writes ``budgetgym/assets/function_calling/tasks.jsonl`` (the curated tasks,
the tasks generated from seed 0, then the long conversations of seed 0: eight user turns or more,
full budgets of 30 or more) and ``failure_states.jsonl`` (failure states over those tasks, from the
core's builder with the kinds of ``mistakes.py``: one pass over the curated and generated tasks,
one over the long conversations, each spread over domains and splits). With ``--out`` it writes
the tasks of the given seed and count there instead (``--long``: long conversations; the
generators are :mod:`budgetgym.envs.function_calling.generate`), and nothing shipped changes.
Deterministic: running it twice gives the same files.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

from budgetgym.core import TaskSet, read_jsonl, write_jsonl
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.function_calling.curated import CURATED, CURATED_TEST
from budgetgym.envs.function_calling.domains import DOMAINS
from budgetgym.envs.function_calling.generate import generate_long_tasks, generate_tasks, task_record
from budgetgym.envs.function_calling.mistakes import generate_failure_states

FOLDER = ASSETS / "function_calling"
GENERATED_SEED = 0
GENERATED_COUNT = 240
LONG_COUNT = 40
FAILURES_PER_KIND = 30
#: Per kind over the long conversations (8 x 5 kinds: one state for each of the 40).
LONG_FAILURES_PER_KIND = 8


def shipped_tasks() -> list[dict[str, Any]]:
    curated = [task_record(draft(), task_id, "test" if task_id in CURATED_TEST else "train", source="curated")
               for task_id, draft in CURATED.items()]
    return curated + generate_tasks(GENERATED_SEED, GENERATED_COUNT) + generate_long_tasks(GENERATED_SEED, LONG_COUNT)


def shipped_failure_states(tasks: TaskSet) -> list[dict[str, Any]]:
    """The shipped failure states of ``tasks`` (the shipped tasks as read back from disk)."""
    short = TaskSet([task for task in tasks if task["source"] != "generated-long"])
    long = TaskSet([task for task in tasks if task["source"] == "generated-long"])
    return (generate_failure_states(short, FAILURES_PER_KIND)
            + generate_failure_states(long, LONG_FAILURES_PER_KIND))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="write a generated task set here, nothing else")
    parser.add_argument("--seed", type=int, default=GENERATED_SEED, help="with --out: the generators' seed")
    parser.add_argument("--n", type=int, default=100, help="with --out: how many tasks")
    parser.add_argument("--long", action="store_true", help="with --out: long conversations (8+ user turns)")
    parser.add_argument("--domains", nargs="*", choices=sorted(DOMAINS), help="with --out: only these domains")
    args = parser.parse_args(argv)
    if args.out is None and (args.long or args.domains or args.n != 100 or args.seed != GENERATED_SEED):
        parser.error("--seed, --n, --long and --domains choose a task set to write with --out")
    if args.out is not None:
        if args.n < 1:
            parser.error(f"--n must be at least 1, got {args.n}")
        generator = generate_long_tasks if args.long else generate_tasks
        count = write_jsonl(args.out, generator(args.seed, args.n, args.domains))
        print(f"wrote {count} tasks to {args.out}", file=sys.stderr)
        return 0
    FOLDER.mkdir(parents=True, exist_ok=True)
    write_jsonl(FOLDER / "tasks.jsonl", shipped_tasks())
    # Failure states are made from the tasks as read back from disk, exactly as the env will load them.
    tasks = read_jsonl(FOLDER / "tasks.jsonl")
    states = shipped_failure_states(TaskSet(tasks))
    write_jsonl(FOLDER / "failure_states.jsonl", states)
    splits = collections.Counter(t["split"] for t in tasks)
    kinds = collections.Counter(s["kind"] for s in states)
    print(f"{len(tasks)} tasks {dict(splits)}; {len(states)} failure states {dict(kinds)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
