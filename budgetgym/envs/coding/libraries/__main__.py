"""Build the library task set: ``python -m budgetgym.envs.coding.libraries --help``."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from budgetgym.core import read_jsonl, write_jsonl
from budgetgym.envs.coding.libraries.build import DEFAULT_COUNTS, TIERS, build, merged
from budgetgym.envs.coding.libraries import TASKS_FILE
from budgetgym.envs.coding.libraries.fetch import cache_dir, pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the coding tasks in pinned real libraries.")
    parser.add_argument("--library", action="append", choices=sorted(pins()),
                        help="only these (default: every pin not marked 'held')")
    parser.add_argument("--seed", type=int, default=0)
    counts = ", ".join(f"{k} {v}" for k, v in DEFAULT_COUNTS.items())
    parser.add_argument("--singles", type=int, default=None, help="sites kept per library")
    parser.add_argument("--easy", type=int, default=None, help="one-site bugs per library")
    parser.add_argument("--medium", type=int, default=None, help="bugs of 2-4 sites per library")
    parser.add_argument("--hard", type=int, default=None, help="bugs of 8-12 sites per library")
    parser.add_argument("--out", type=Path, default=None, help="default: tasks.jsonl in the cache folder")
    parser.add_argument("--check", action="store_true",
                        help="drop the bugs whose pinned fix the env does not grade as solved (one grading each)")
    parser.add_argument("--merge", action="store_true",
                        help="write the shipped set (or --out) with the built libraries' records replaced")
    parser.epilog = (f"Counts not given come from the library's pin ('build'), else: {counts}. "
                     "Each library's records are cached; a rebuild with the same pins, seed and counts reads them.")
    args = parser.parse_args(argv)
    out = args.out or (TASKS_FILE if args.merge else cache_dir() / "tasks.jsonl")
    started = time.monotonic()
    # a pin marked "held" is fetched and buildable by name, but not shipped until what it says is resolved
    records = build(args.library or sorted(n for n, pin in pins().items() if "held" not in pin), args.seed, args.singles,
                    {"easy": args.easy, "medium": args.medium, "hard": args.hard})
    if args.check:
        from budgetgym.envs.coding.libraries.check import unsolvable

        bad = unsolvable(records, log=lambda m: print(m, file=sys.stderr, flush=True))
        records = [r for r in records if r["id"] not in bad]
        print(f"--check dropped {len(bad)} tasks", file=sys.stderr)
    if args.merge:
        records = merged(read_jsonl(out) if out.is_file() else [], records)
    count = write_jsonl(out, records)
    tiers = collections.Counter((r["tier"], r["split"]) for r in records)
    turns = collections.Counter(r["oracle_turns"] for r in records)
    print(f"wrote {count} tasks to {out} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    print(f"tier x split: {dict(sorted(tiers.items()))}", file=sys.stderr)
    print(f"oracle_turns: {dict(sorted(turns.items()))}; tiers {sorted(TIERS)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
