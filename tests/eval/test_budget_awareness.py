"""Pass^(K,T) (all K attempts succeed), sweeps in calls and tokens, and the budget-awareness probe."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from budgetgym.cli import main
from budgetgym.eval.agents import make_agent
from budgetgym.eval.metrics import pass_all_k, pass_at_k, pass_grid
from budgetgym.eval.probes import format_awareness_table, run_budget_awareness_probe
from budgetgym.eval.report import compare, summarize
from budgetgym.eval.sweep import run_sweep
from budgetgym.train.features import read_budget
from registered import TOY_ID


def test_pass_all_k_is_the_unbiased_estimator_of_all_k_succeeding():
    assert pass_all_k(4, 4, 3) == 1.0 and pass_all_k(4, 2, 3) == 0.0 and pass_all_k(5, 3, 1) == 0.6
    assert pass_all_k(5, 3, 2) == pytest.approx(math.comb(3, 2) / math.comb(5, 2))
    # Unbiased: its mean over every k-subset of the n attempts is the share of subsets all solved.
    outcomes = [1, 0, 1, 1, 0, 1]
    for k in (1, 2, 3):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_all_k(len(outcomes), sum(outcomes), k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
        assert pass_all_k(6, 4, k) <= pass_at_k(6, 4, k)
    with pytest.raises(ValueError):
        pass_all_k(2, 1, 3)


def _records(successes_per_task):
    return [{"env": "e", "agent": "a", "task": f"t{t}", "reveal": "none", "unit": "turns", "budget": None,
             "attempt": i, "success": bool(s), "turns": 2, "calls": 2, "tokens": 9, "full_budget": 8}
            for t, outcomes in enumerate(successes_per_task) for i, s in enumerate(outcomes)]


def test_the_grid_reports_and_compare_carry_pass_all():
    records = _records([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0]])
    (one, four) = pass_grid(records, [1.0], [1, 4], bootstrap=50)
    assert one.pass_all == one.value  # Pass^1 is Pass@1
    assert four.pass_all == pytest.approx(1 / 3) and four.value == pytest.approx(2 / 3)
    assert 0.0 <= four.pass_all_ci_low <= four.pass_all <= four.pass_all_ci_high <= 1.0
    summary = summarize(records, [1.0], [1, 4], bootstrap=50)
    assert summary["unit"] == "turns" and summary["groups"][0]["cells"][1]["pass_all"] == pytest.approx(1 / 3)
    better = _records([[1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]])
    difference = compare(records, better, budgets=[1.0], ks=[4], bootstrap=50)
    assert difference["groups"][0]["cells"][0]["pass_all"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="one unit"):
        compare(records, [dict(r, unit="calls") for r in better], budgets=[1.0], ks=[4])


def test_a_sweep_in_calls_records_every_unit_and_reads_caps_from_the_oracles_calls():
    result = run_sweep(TOY_ID, make_agent("oracle"), tasks=["toy-04", "toy-08"], k=1, budgets=["1x", 2], unit="calls",
                       reveal="remaining")
    for record in result.records:
        assert record["unit"] == "calls" and record["shortest"] == 2 and record["success"]
        assert record["calls"] == record["turns"] == 2 and record["tokens"] > 0
    summary = summarize(result.records)
    assert summary["unit"] == "calls" and summary["budgets"] == ["1x", 2]
    assert all(cell["pass"] == 1.0 for cell in summary["groups"][0]["cells"])
    with pytest.raises(ValueError, match="turns only"):
        run_sweep(TOY_ID, make_agent("oracle"), tasks=["toy-04"], k=1, budgets=[0.5], unit="calls")


def test_eval_takes_the_unit_on_the_command_line(tmp_path, capsys):
    assert main(["eval", "--env", TOY_ID, "--agent", "oracle", "--tasks", "2", "--k", "1", "--budgets", "1x,3",
                 "--unit", "tokens", "--quiet", "--no-progress", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["unit"] == "tokens" and summary["groups"][0]["cells"][0]["pass"] == 1.0
    assert "pass_all" in (tmp_path / "pass_at_k.csv").read_text().splitlines()[0]


def test_the_budget_awareness_probe_pairs_the_modes_per_agent(tmp_path):
    agents = [make_agent("noisy-oracle:0.5"), make_agent("budget-aware:0.5")]
    result = run_budget_awareness_probe([TOY_ID], agents, tasks=["toy-03", "toy-04", "toy-08", "toy-13"],
                                        budgets=["1.5x", 1.0], attempts=3, out=tmp_path)
    rows = {(r["agent"], r["budget"]): r for r in result["rows"]}
    assert set(rows) == {(a.name, b) for a in agents for b in ("1.5x", 1.0)}
    for (agent, _), row in rows.items():
        assert row["tasks"] == 4 and row["episodes"] == 24
        assert set(row) >= {"success", "turns", "calls", "tokens", "early_end"}
        if agent.startswith("noisy"):  # blind to budgets: zero by construction, and said so
            assert all(row[m]["difference"] == 0.0 for m in ("success", "turns", "calls")) and "note" in row
    aware = rows[(agents[1].name, "1.5x")]
    assert aware["success"]["remaining"] >= aware["success"]["none"]
    assert "Budget awareness" in format_awareness_table(result)
    # Resumed from its files: nothing runs again, the same result.
    again = run_budget_awareness_probe([TOY_ID], agents, tasks=["toy-03", "toy-04", "toy-08", "toy-13"],
                                       budgets=["1.5x", 1.0], attempts=3, out=tmp_path)
    assert again["rows"] == result["rows"]


def test_the_studys_features_read_the_budget_by_the_one_reader():
    seen = read_budget("obs\n\n[Turns remaining: 3 of 8]", "task", 5)
    assert (seen.remaining, seen.cap) == (3, 8)
    told = read_budget("obs", "task\n\n[Turn budget: you have 8 turns in total.]", 5)
    assert (told.remaining, told.cap) == (3, 8)
    assert read_budget("obs", "task", 5).remaining is None
