"""The benchmarks still run: each quick one, at its smallest size, prints one JSON object whose
targets each carry a ``met`` verdict. Only that they run and report: figures are not asserted (timing
depends on the machine); ``make bench`` runs them at their full sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

QUICK = {
    "bench_wrappers.py": ["--steps", "200"],
    "bench_function_calling.py": ["--repeats", "1"],
    "bench_web.py": ["--repeats", "1", "--sizes", "2000"],
    "bench_bfcl.py": ["--rounds", "1"],
    "bench_coding.py": ["--rounds", "1", "--backends", "local"],
    "bench_process_reward.py": ["--episodes", "1", "--rounds", "1", "--families", "fc"],
    "bench_harness.py": ["--tasks", "5", "--attempts", "1", "--rounds", "1"],
    "bench_make.py": ["--runs", "1", "--ids", "budgetgym/FunctionCalling-v0,budgetgym/ALFWorld-v0"],
    "bench_serve.py": ["--tasks", "2", "--rounds", "1", "--seconds", "0.5", "--sessions", "2", "--no-ray"],
}


@pytest.mark.parametrize("script", list(QUICK))
def test_a_quick_benchmark_runs_and_reports_each_target(script):
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), *QUICK[script]], cwd=BENCHMARKS.parent,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    targets = result["targets"]
    assert targets and all(isinstance(entry, dict) and {"target", "measured", "met"} <= set(entry) for entry in targets.values())
    assert all(entry["met"] in (True, False) for entry in targets.values() if entry["measured"] is not None)
