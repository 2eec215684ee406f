"""Build the library task set: ``python -m budgetgym.envs.coding.libraries --help``."""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from budgetgym.core import write_jsonl
from budgetgym.envs.coding.libraries.build import TIERS, build
from budgetgym.envs.coding.libraries.fetch import cache_dir, pins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the coding tasks in pinned real libraries.")
    parser.add_argument("--library", action="append", choices=sorted(pins()), help="only these (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--singles", type=int, default=40, help="sites kept per library (default 40)")
    parser.add_argument("--easy", type=int, default=14, help="one-site bugs per library")
    parser.add_argument("--medium", type=int, default=12, help="bugs of 2-4 sites per library")
    parser.add_argument("--hard", type=int, default=8, help="bugs of 8-12 sites per library")
    parser.add_argument("--out", type=Path, default=None, help="default: tasks.jsonl in the cache folder")
    args = parser.parse_args(argv)
    out = args.out or cache_dir() / "tasks.jsonl"
    started = time.monotonic()
    records = build(args.library or sorted(pins()), args.seed, args.singles,
                    {"easy": args.easy, "medium": args.medium, "hard": args.hard})
    count = write_jsonl(out, records)
    tiers = collections.Counter((r["tier"], r["split"]) for r in records)
    turns = collections.Counter(r["oracle_turns"] for r in records)
    print(f"wrote {count} tasks to {out} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    print(f"tier x split: {dict(sorted(tiers.items()))}", file=sys.stderr)
    print(f"oracle_turns: {dict(sorted(turns.items()))}; tiers {sorted(TIERS)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
