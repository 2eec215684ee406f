"""Run benchmarks on an earlier revision and on the working tree, rounds interleaved, in one run.

A shared machine's speed drifts over minutes, so "before" and "after" measured an hour apart say
little. This extracts the package of two git revisions (``--before``, ``--after``) into a temporary
folder and runs each benchmark script of the after revision (the same script for both, so both
measure the same way) against each package in turn (first on ``PYTHONPATH``), alternating for
``--rounds`` rounds; then prints, for every figure asked for, the median of each side's rounds and
their ratio (after / before), with every round's value.

    python benchmarks/compare_revisions.py --before main --rounds 3 \\
        --bench "bench_function_calling.py --repeats 2" --figure step.every_step.median_us ...
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def extract(revision: str, folder: Path, paths: tuple[str, ...]) -> str:
    """``paths`` of ``revision``, extracted into ``folder``; returns the revision's commit."""
    commit = subprocess.run(["git", "rev-parse", revision], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", commit, *paths], cwd=ROOT,
                             capture_output=True, check=True).stdout
    folder.mkdir(parents=True)
    tar_path = folder.with_suffix(".tar")
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder, filter="data")
    return commit


def run(script: str, package_root: Path, scripts: Path) -> dict[str, Any]:
    environ = dict(os.environ, PYTHONPATH=str(package_root))
    command = [sys.executable, *shlex.split(script)]
    command[1] = str(scripts / command[1])
    # Run from the folder above the package: a "python -c" child of a benchmark would otherwise
    # import the working tree from its current directory, whatever PYTHONPATH says.
    out = subprocess.run(command, cwd=package_root.parent, env=environ, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out[out.index("{"):])


def figure(result: dict[str, Any], path: str) -> float | None:
    value: Any = result
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return float(value) if isinstance(value, (int, float)) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="a git revision (default: main)")
    parser.add_argument("--after", default="HEAD", help="a git revision (default: HEAD; its benchmark scripts run both)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bench", action="append", required=True,
                        help='a benchmark script of benchmarks/ with its arguments, e.g. "bench_bfcl.py --rounds 1"')
    parser.add_argument("--figure", action="append", required=True,
                        help="SCRIPT:dotted.path of a number in its JSON, e.g. bench_bfcl.py:calls.env_calls_per_s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        # Both sides are extracted (the working tree may change while this runs); the scripts are the after side's.
        commits = {"before": extract(args.before, Path(folder) / "before" / "root", ("budgetgym",)),
                   "after": extract(args.after, Path(folder) / "after" / "root", ("budgetgym", "benchmarks", "tests"))}
        sides = {side: Path(folder) / side / "root" for side in commits}
        scripts = sides["after"] / "benchmarks"
        results: dict[str, dict[str, list[dict[str, Any]]]] = {b: {"before": [], "after": []} for b in args.bench}
        for round_index in range(args.rounds):
            order = ("before", "after") if round_index % 2 == 0 else ("after", "before")
            for bench in args.bench:
                for side in order:
                    results[bench][side].append(run(bench, sides[side], scripts))
    figures = {}
    for spec in args.figure:
        script, _, path = spec.partition(":")
        bench = next(b for b in args.bench if shlex.split(b)[0] == script)
        values = {side: [figure(r, path) for r in results[bench][side]] for side in ("before", "after")}
        medians = {side: statistics.median([v for v in vs if v is not None]) if any(v is not None for v in vs) else None
                   for side, vs in values.items()}
        ratio = (round(medians["after"] / medians["before"], 3)
                 if medians["before"] not in (None, 0) and medians["after"] is not None else None)
        figures[spec] = {"before": medians["before"], "after": medians["after"], "after_over_before": ratio,
                         "rounds": values}
    print(json.dumps({"before": {"revision": args.before, "commit": commits["before"]},
                      "after": {"revision": args.after, "commit": commits["after"]},
                      "rounds": args.rounds, "load_average_1min_at_end": round(os.getloadavg()[0], 2),
                      "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
