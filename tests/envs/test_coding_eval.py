"""`budgetgym eval` and both probes on Coding-v0, with the scripted agents, through the command line."""

from __future__ import annotations

import json

from budgetgym.cli import main
from coding_support import require

ENV = "budgetgym/Coding-v0"


def test_eval_sweep_on_coding(tmp_path, capsys):
    require("local")
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--agent", "noisy-oracle", "--tasks", "2", "--k", "1", "--budgets", "0.5,1.0",
                 "--out", str(out), "--quiet", "--no-progress"]) == 0
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert records and {r["env"] for r in records} == {ENV}
    assert (out / "summary.json").exists()


def test_recovery_probe_on_coding():
    require("local")
    from budgetgym.core import load_failure_states
    from budgetgym.eval.agents import OracleAgent
    from budgetgym.eval.probes import run_recovery_probe

    by_kind = {}
    for state in load_failure_states("coding"):
        by_kind.setdefault(state["kind"], state)
    result = run_recovery_probe(ENV, OracleAgent(), states=list(by_kind.values()), attempts=1)
    assert len(result["kinds"]) >= 4  # states without a clean twin at the same turn are skipped by the probe
    assert all(row["failure_recovery"] == 1.0 and row["clean_success"] == 1.0 for row in result["kinds"])


def test_action_quality_probe_on_coding(tmp_path):
    require("local")
    out = tmp_path / "quality"
    assert main(["probe", "action-quality", "--env", ENV, "--agent-a", "oracle", "--agent-b", "random",
                 "--reference", "oracle", "--tasks", "1", "--rollouts", "1", "--out", str(out), "--quiet",
                 "--no-progress"]) == 0
    result = json.loads(next(out.glob("*.json")).read_text())
    assert result["mean_quality_a"] == 1.0 and result["mean_quality_a"] >= result["mean_quality_b"]
