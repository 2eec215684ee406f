"""Small real sweeps and probes on every self-contained registered env family."""

import pytest

import registered
from budgetgym.eval.agents import BudgetAwareAgent, NoisyOracleAgent, OracleAgent
from budgetgym.eval.cli import default_env_ids
from budgetgym.eval.executors import ProcessExecutor
from budgetgym.eval.metrics import pass_grid
from budgetgym.eval.probes import run_recovery_probe
from budgetgym.eval.report import summarize, write_report
from budgetgym.eval.sweep import DEFAULT_BUDGETS, run_sweep, select_tasks

ENV_IDS = default_env_ids()


def test_function_calling_is_among_the_defaults():
    assert "budgetgym/FunctionCalling-v0" in ENV_IDS


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_oracle_scores_one_on_every_cell_of_the_default_grid(env_id):
    # Announced caps get one run per budget: at 1x the oracle has no turn to spare and must still solve.
    result = run_sweep(env_id, OracleAgent(), k=1, reveal=("none", "remaining"))
    assert result.splits == ("test",)
    failed = [(r["task"], r["budget"]) for r in result.records if not r["success"]]
    assert not failed
    summary = summarize(result.records, bootstrap=50)
    assert summary["budgets"] == list(DEFAULT_BUDGETS)
    for group in summary["groups"]:
        for cell in group["cells"]:
            assert cell["pass"] == 1.0 and cell["infeasible_tasks"] == 0, cell
            assert cell["ci_low"] < 1.0 == cell["ci_high"]  # honest at 1: not [1.00, 1.00]


# Two families whose episodes take milliseconds: the rule is the agent's, not the family's, and on the
# sandboxed families this sweep (two reveal modes, five budgets, the whole test split) takes minutes.
@pytest.mark.parametrize("env_id", [e for e in ENV_IDS if e.endswith(("/FunctionCalling-v0", "/Navigation-v0"))])
def test_revealing_the_budget_helps_the_budget_aware_agent(env_id):
    # Its rule: no random action once at most half of the revealed budget remains. Under "none" it
    # sees nothing, so announced caps can only help it: the difference must be positive.
    agent = BudgetAwareAgent(0.4)
    summary = summarize(run_sweep(env_id, agent, k=(1, 2), n=2, reveal=("none", "remaining")).records,
                        bootstrap=200)
    cells = summary["reveal_comparison"]["groups"][0]["cells"]
    assert "note" not in summary["reveal_comparison"]["groups"][0]  # it can see budgets
    differences = [c["pass"] for c in cells]
    assert sum(differences) / len(differences) > 0.05, differences
    assert max(c["ci_low"] for c in cells) > 0, cells  # somewhere the gain is clear of zero
    blind = summarize(run_sweep(env_id, NoisyOracleAgent(0.4), k=1, reveal=("none", "remaining"),
                                tasks=6).records, bootstrap=50)["reveal_comparison"]["groups"][0]
    assert all(c["pass"] == 0 for c in blind["cells"]) and "cannot see budgets" in blind["note"]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_shortcut_equals_separate_runs_on_a_real_env(env_id, tmp_path):
    sweep = dict(tasks=6, k=(1, 2, 4), budgets=("1x", "1.5x", 0.75, 1.0), seed=1)
    shortcut = run_sweep(env_id, NoisyOracleAgent(0.4), **sweep).records
    separate = run_sweep(env_id, NoisyOracleAgent(0.4), shortcut=False, **sweep).records
    grid = [c.value for c in pass_grid(shortcut, sweep["budgets"], sweep["k"])]
    assert grid == [c.value for c in pass_grid(separate, sweep["budgets"], sweep["k"])]
    assert len(set(grid)) > 2  # the budgets bite: not all zeros or ones
    files = write_report(summarize(shortcut), tmp_path)
    assert files["heatmap"].stat().st_size > 0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_recovery_probe_runs_on_every_kind_of_every_id(env_id):
    # The probe end to end on two states of each kind (each family's own tests restore and recover
    # every shipped state; here it is the probe that is under test, on every id).
    env = registered.make_or_skip(env_id)
    states = env.unwrapped.failure_states()
    env.close()
    sample = [s for kind in sorted({s["kind"] for s in states}) for s in [x for x in states if x["kind"] == kind][:2]]
    result = run_recovery_probe(env_id, OracleAgent(), states=sample, attempts=1)
    for row in result["kinds"]:
        assert row["failure_recovery"] == 1.0 and row["clean_success"] == 1.0, row
    assert len(result["kinds"]) >= 5 + 1  # five kinds or more, and the overall row


@pytest.mark.parametrize("env_id", registered.ENV_IDS)
def test_a_small_sweep_on_every_registered_id(env_id, tmp_path):
    env = registered.make_or_skip(env_id)  # an adapter without its extra is skipped, with its reason
    tasks = min(4, len(select_tasks(env, None)))  # SWEBench-v0's test data is one instance
    env.close()
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(env_id, NoisyOracleAgent(0.3), tasks=tasks, k=(1, 2), budgets=(0.5, 1.0),
                       reveal=("none", "remaining"), out=out)
    assert result.ran == result.planned == tasks * 2 * (1 + 2)
    assert {(r["reveal"], r["budget"]) for r in result.records} == {("none", None), ("remaining", 0.5),
                                                                   ("remaining", 1.0)}
    assert all(r["turns"] <= r["cap"] and len(r["actions"]) == r["turns"] for r in result.records)


def test_processes_equal_serial_on_a_real_env(tmp_path):
    sweep = dict(tasks=12, k=(1, 2, 4), budgets=(0.5, 1.0), reveal=("none", "total"), seed=3)
    run_sweep("budgetgym/FunctionCalling-v0", NoisyOracleAgent(0.3), out=tmp_path / "serial.jsonl", **sweep)
    run_sweep("budgetgym/FunctionCalling-v0", NoisyOracleAgent(0.3), out=tmp_path / "processes.jsonl",
              executor=ProcessExecutor(2), **sweep)
    assert (tmp_path / "serial.jsonl").read_bytes() == (tmp_path / "processes.jsonl").read_bytes()
