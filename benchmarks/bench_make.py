"""``gym.make`` of every registered id against ``import budgetgym``, each in fresh processes; prints JSON.

A process that imports budgetgym and makes one env pays for the import (the package, Gymnasium,
the registry) and then for the make (the family's modules, its tasks and assets, its backend's
Python packages where they are imported at make time). Both are timed inside a fresh interpreter
(``time.perf_counter`` around each, so interpreter start-up is left out), ``--runs`` times
each, and the least of each is kept; the figure is the make's time over the import's. The target
(issue 27): every id's make within 2x the import, heavy backends imported when first needed (at
reset, or by ``check_backend``).

ALFWorld-v0 and SWEBench-v0 need data this repository does not ship: the benchmark writes the
test suite's small data sets (``tests/alfworld_data.py``, ``tests/swebench_data.py``) to a
temporary folder and points the envs at them, as the tests do.

    python benchmarks/bench_make.py [--runs N] [--ids ID,ID]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import target

ROOT = Path(__file__).resolve().parent.parent
TARGET_MAKE_OVER_IMPORT = 2.0

PROBE = """
import time, json, sys
started = time.perf_counter()
import budgetgym
imported = time.perf_counter()
if sys.argv[1]:
    import gymnasium as gym
    gym.make(sys.argv[1], **json.loads(sys.argv[2])).close()
print(json.dumps({"import_s": imported - started, "make_s": time.perf_counter() - imported}))
"""


def data_for(folder: Path, ids: list[str]) -> tuple[dict[str, str], dict[str, dict]]:
    """Environment variables and make keyword arguments for the chosen ids that need outside data."""
    sys.path.insert(0, str(ROOT / "tests"))
    variables, kwargs = {}, {}
    if "budgetgym/ALFWorld-v0" in ids:
        from alfworld_data import write_alfworld_data

        variables["ALFWORLD_DATA"] = str(write_alfworld_data(folder / "alfworld"))
    if "budgetgym/SWEBench-v0" in ids:  # builds the instance's image once (Docker)
        from swebench_data import write_swebench_instances

        (folder / "swebench").mkdir()
        kwargs["budgetgym/SWEBench-v0"] = {"instances": str(write_swebench_instances(folder / "swebench"))}
    return variables, kwargs


def timed(env_id: str, kwargs: dict, env: dict[str, str], runs: int) -> dict[str, float]:
    best = {"import_s": float("inf"), "make_s": float("inf")}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PROBE, env_id, json.dumps(kwargs)], capture_output=True,
                             text=True, env=env, cwd=ROOT, timeout=300)
        if out.returncode != 0:
            raise SystemExit(f"{env_id or 'import'}: {out.stderr.strip().splitlines()[-1]}")
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        best = {key: min(best[key], figures[key]) for key in best}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ids", default="", help="comma-separated ids (default: every registered id)")
    args = parser.parse_args()
    import budgetgym

    ids = [i for i in args.ids.split(",") if i] or [entry.id for entry in budgetgym.REGISTRY]
    with tempfile.TemporaryDirectory() as folder:
        variables, kwargs = data_for(Path(folder), ids)
        env = {**os.environ, **variables}
        imported = timed("", {}, env, args.runs)["import_s"]
        rows, targets = {}, {}
        for env_id in ids:
            make = timed(env_id, kwargs.get(env_id, {}), env, args.runs)["make_s"]
            ratio = round(make / imported, 2)
            rows[env_id] = {"make_s": round(make, 3), "over_import": ratio}
            targets[f"{env_id} make_over_import_at_most"] = target(TARGET_MAKE_OVER_IMPORT, ratio)
    print(json.dumps({"import_s": round(imported, 3), "runs": args.runs,
                      "bytecode_cached": not sys.flags.dont_write_bytecode, "ids": rows, "targets": targets},
                     indent=2))


if __name__ == "__main__":
    main()
