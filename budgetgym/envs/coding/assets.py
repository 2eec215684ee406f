"""The coding family's one command for its data: rebuild the shipped failure states (and, with
``--tasks``, the tasks), or write another task set:

    python -m budgetgym.envs.coding.assets [--tasks]
    python -m budgetgym.envs.coding.assets --libraries
    python -m budgetgym.envs.coding.assets --tasks --seed 1 --per-repo 20 [--library NAME ...] --out tasks.jsonl

``--tasks`` first regenerates ``budgetgym/assets/coding/tasks.jsonl`` (seed 0, 12 tasks per
library; see :mod:`budgetgym.envs.coding.generate`); with ``--out`` it writes the tasks of the
given seed, count and libraries there instead, and nothing shipped changes. (The library task set
has its own builder: ``python -m budgetgym.envs.coding.libraries``.) The failure states come from the core's
builder over the tasks as read back from disk, in two passes over differently rotated task lists
so that most tasks get two mistakes of different kinds. ``--libraries`` rebuilds the library task
set's own failure states instead (``budgetgym/assets/coding/libraries/failure_states.jsonl``: up to
``--per-kind`` of each kind on each split; the libraries are fetched on first use). A state costs
5-15 s here (the oracle's episode, then the mistake and the oracle's recovery, each graded on a
real suite; 100 took 8 minutes), so the split's tasks are tried shortest oracle first, the
libraries taken in turn.
Deterministic: the same files every run.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from budgetgym.core import TaskSet, read_jsonl, write_jsonl
from budgetgym.core.failures import build_failure_states
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.coding import mistakes
from budgetgym.envs.coding.generate import generate
from budgetgym.envs.coding.repos import repo_names

FOLDER = ASSETS / "coding"
SEED = 0
PER_REPO = 12
FIRST_PASS_PER_KIND = 16
SECOND_PASS_PER_KIND = 6
LIBRARY_PER_KIND = 10


def failure_states(tasks: TaskSet) -> list[dict]:
    from budgetgym.envs.coding.env import CodingEnv

    env = CodingEnv(tasks=tasks)
    try:
        states = build_failure_states(env, list(tasks), FIRST_PASS_PER_KIND, seed=SEED, namespace="coding")
        # rotated by a count prime to the number of kinds: each task starts from another kind
        shift = len(tasks) // 2 + 1
        rotated = list(tasks)[shift:] + list(tasks)[:shift]
        seen = {state["id"] for state in states}
        more = build_failure_states(env, rotated, SECOND_PASS_PER_KIND, seed=SEED, namespace="coding/second")
        states += [state for state in more if state["id"] not in seen]
    finally:
        env.close()
    return states


def library_failure_states(tasks: TaskSet, per_kind: int = LIBRARY_PER_KIND) -> list[dict]:
    """The library task set's failure states: per split, up to ``per_kind`` of each kind."""
    import itertools

    from budgetgym.envs.coding.env import CodingEnv

    env = CodingEnv(tasks=tasks, task_set="libraries")
    states: list[dict] = []
    try:
        for split in sorted({task.split for task in tasks}):
            by_library = collections.defaultdict(list)
            for task in sorted((t for t in tasks if t.split == split), key=lambda t: (t.oracle_turns, t.id)):
                by_library[task.data["library"]].append(task)
            # the libraries in turn, each its shortest tasks first: every library gets states early
            order = [task for row in itertools.zip_longest(*by_library.values()) for task in row if task]
            # a kind no task can take (no library bug has a breaker) would make every task replay the
            # oracle for nothing
            kinds = [kind for kind in mistakes.KINDS if kind != "breaks_pass_to_pass" or any(t.data.get("breaker") for t in order)]
            states += build_failure_states(env, order, per_kind, seed=SEED, namespace="coding/libraries", kinds=kinds)
    finally:
        env.close()
    return states


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", action="store_true", help="regenerate tasks.jsonl first")
    parser.add_argument("--libraries", action="store_true",
                        help="rebuild the library task set's failure states (and nothing else)")
    parser.add_argument("--per-kind", type=int, default=LIBRARY_PER_KIND,
                        help="with --libraries: the most states of each kind on each split")
    parser.add_argument("--seed", type=int, default=SEED, help="with --tasks --out: the generator's seed")
    parser.add_argument("--per-repo", type=int, default=PER_REPO, help="with --tasks --out: tasks per library")
    parser.add_argument("--library", action="append", choices=repo_names(), help="with --tasks --out: only these")
    parser.add_argument("--out", type=Path, default=None, help="with --tasks: write the tasks here, nothing else")
    args = parser.parse_args(argv)
    custom = (args.seed, args.per_repo, args.library) != (SEED, PER_REPO, None)
    if args.libraries:
        if args.tasks or args.out is not None or custom:
            parser.error("--libraries rebuilds only the library set's failure states: give it alone")
        if args.per_kind < 1:
            parser.error("--per-kind must be at least 1")
        from budgetgym.envs.coding.libraries import FOLDER as LIBRARIES, library_tasks

        tasks = library_tasks()
        states = library_failure_states(tasks, args.per_kind)
        write_jsonl(LIBRARIES / "failure_states.jsonl", states)
        kinds = collections.Counter((tasks.get(s["task_id"]).split, s["kind"]) for s in states)
        print(f"{len(states)} library failure states {dict(sorted(kinds.items()))}", file=sys.stderr)
        return 0
    if args.out is None and custom:
        parser.error("--seed, --per-repo and --library make another task set: name its file with --out")
    if args.out is not None:
        if not args.tasks:
            parser.error("--out writes a task set: give --tasks")
        if args.per_repo < 1:
            parser.error("--per-repo must be at least 1")
        count = write_jsonl(args.out, generate(args.seed, args.per_repo, args.library))
        print(f"wrote {count} tasks to {args.out}", file=sys.stderr)
        return 0
    if args.tasks:
        write_jsonl(FOLDER / "tasks.jsonl", generate(SEED, PER_REPO))
    tasks = TaskSet(read_jsonl(FOLDER / "tasks.jsonl"))
    states = failure_states(tasks)
    write_jsonl(FOLDER / "failure_states.jsonl", states)
    splits = collections.Counter(t.split for t in tasks)
    kinds = collections.Counter(s["kind"] for s in states)
    print(f"{len(tasks)} tasks {dict(splits)}; {len(states)} failure states {dict(kinds)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
