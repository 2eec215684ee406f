"""Small real sweeps and probes on every self-contained registered env family."""

import pytest

import registered
from budgetgym.eval.agents import NoisyOracleAgent, OracleAgent
from budgetgym.eval.cli import default_env_ids
from budgetgym.eval.executors import ProcessExecutor
from budgetgym.eval.metrics import pass_grid
from budgetgym.eval.probes import run_recovery_probe
from budgetgym.eval.report import summarize, write_report
from budgetgym.eval.sweep import run_sweep

ENV_IDS = default_env_ids()


def test_function_calling_is_among_the_defaults():
    assert "budgetgym/FunctionCalling-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_oracle_passes_everything_at_the_full_budget(env_id):
    records = run_sweep(env_id, OracleAgent(), tasks="test", k=1, budgets=(1.0,)).records
    assert records and all(r["success"] for r in records), [r["task"] for r in records if not r["success"]]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_shortcut_equals_separate_runs_on_a_real_env(env_id, tmp_path):
    sweep = dict(tasks=6, k=(1, 2, 4), budgets=(0.25, 0.5, 0.75, 1.0), seed=1)
    shortcut = run_sweep(env_id, NoisyOracleAgent(0.4), **sweep).records
    separate = run_sweep(env_id, NoisyOracleAgent(0.4), shortcut=False, **sweep).records
    grid = [c.value for c in pass_grid(shortcut, sweep["budgets"], sweep["k"])]
    assert grid == [c.value for c in pass_grid(separate, sweep["budgets"], sweep["k"])]
    assert len(set(grid)) > 2  # the budgets bite: not all zeros or ones
    files = write_report(summarize(shortcut), tmp_path)
    assert files["heatmap"].stat().st_size > 0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_oracle_recovers_from_every_curated_failure_state(env_id):
    result = run_recovery_probe(env_id, OracleAgent(), attempts=1)
    for row in result["kinds"]:
        assert row["failure_recovery"] == 1.0 and row["clean_success"] == 1.0, row
    assert result["kinds"][-1]["states"] >= 10


@pytest.mark.parametrize("env_id", registered.ENV_IDS)
def test_a_small_sweep_on_every_registered_id(env_id, tmp_path):
    registered.make_or_skip(env_id).close()  # an adapter without its extra is skipped, with its reason
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(env_id, NoisyOracleAgent(0.3), tasks=4, k=(1, 2), budgets=(0.5, 1.0),
                       reveal=("none", "remaining"), out=out)
    assert result.ran == result.planned == 4 * 2 * (1 + 2)
    assert {(r["reveal"], r["budget"]) for r in result.records} == {("none", None), ("remaining", 0.5),
                                                                   ("remaining", 1.0)}
    assert all(r["turns"] <= r["cap"] and len(r["actions"]) == r["turns"] for r in result.records)


def test_processes_equal_serial_on_a_real_env(tmp_path):
    sweep = dict(tasks=12, k=(1, 2, 4), budgets=(0.5, 1.0), reveal=("none", "total"), seed=3)
    run_sweep("budgetgym/FunctionCalling-v0", NoisyOracleAgent(0.3), out=tmp_path / "serial.jsonl", **sweep)
    run_sweep("budgetgym/FunctionCalling-v0", NoisyOracleAgent(0.3), out=tmp_path / "processes.jsonl",
              executor=ProcessExecutor(2), **sweep)
    assert (tmp_path / "serial.jsonl").read_bytes() == (tmp_path / "processes.jsonl").read_bytes()
