"""Reports from episode records: a JSON summary, a CSV of every Pass@(K,T) and Pass^(K,T) cell, PNG
plots, and terminal tables; and the comparison of two runs (two agents, or announced against
unannounced caps). A report is in the unit its records' budgets are in (turns, calls or tokens).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from budgetgym.core.extras import require
from budgetgym.core.jsonl import Record
from budgetgym.eval.episode_log import budget_key
from budgetgym.eval.metrics import INTERVAL_METHOD, difference_grid, pass_grid
from budgetgym.eval.plots import budget_label, plot_difference_heatmaps, plot_pass_curves, plot_pass_heatmaps
from budgetgym.eval.sweep import DEFAULT_BUDGETS_BY_UNIT


SHORTCUT_NOTE = (
    "reveal=none ran each attempt once at the task's full budget: the agent is never told its cap, so an "
    "episode capped at T is the same episode until the cap binds, and 'solved within T' is read from what it "
    "had used when it succeeded (the single-run shortcut; valid only where the cap is not announced, so the "
    "announced modes ran once per T)."
)
CSV_FIELDS = ("env", "agent", "reveal", "unit", "budget", "k", "pass", "ci_low", "ci_high", "pass_all",
              "pass_all_ci_low", "pass_all_ci_high", "tasks", "attempts", "mean_turns_to_success",
              "infeasible_tasks")
INFEASIBLE_NOTE = ("* some tasks cannot be solved within this budget (it is below their shortest solution); the cell "
                   "counts them as failures. Budgets in solution lengths (1x, 1.5x) are feasible for every task.")
BLIND_NOTE = ("{agent} cannot see budgets: it acts the same whatever is revealed, and attempt i meets the same "
              "seeds under every reveal mode, so this difference is zero by construction; the budget-aware agent "
              "(budget-aware:P) or a served model shows what revealing the budget changes")


def group_records(records: Sequence[Record]) -> dict[tuple[str, str, str], list[Record]]:
    """Records by (env, agent, reveal), in first-seen order."""
    groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)
    for record in records:
        groups[(record["env"], record["agent"], record["reveal"])].append(record)
    return dict(groups)


def grid_order(budget: int | float | str) -> tuple[int, float]:
    """The order of budgets in a grid: solution lengths (1x, 1.5x), then shares of the full budget, then turns."""
    kind, value, _ = budget_key(budget)
    return ({3: 0, 2: 1, 1: 2}[kind], value)


def records_unit(records: Sequence[Record]) -> str:
    """The one unit of ``records``' budgets; a ValueError when they mix units (a grid is in one)."""
    units = {record.get("unit") or "turns" for record in records}
    if len(units) > 1:
        raise ValueError(f"the episode records mix budget units ({', '.join(sorted(units))}): report each unit "
                         "from its own file")
    return units.pop() if units else "turns"


def infer_grid(records: Sequence[Record]) -> tuple[list[int | float], list[int]]:
    """The (T, K) grid a file supports: the budgets run with a cap (the default grid when every run
    was a full-budget one), and the powers of two up to the fewest attempts any task had."""
    budgets = sorted({r["budget"] for r in records if r["budget"] is not None}, key=grid_order)
    attempts: dict[tuple[Any, ...], int] = defaultdict(int)
    for record in records:
        attempts[(record["env"], record["agent"], record["reveal"], budget_key(record["budget"]), record["task"])] += 1
    fewest = min(attempts.values())
    ks = [2 ** i for i in range(fewest.bit_length()) if 2 ** i <= fewest]
    return (budgets or list(DEFAULT_BUDGETS_BY_UNIT[records_unit(records)])), ks


def summarize(records: Sequence[Record], budgets: Sequence[int | float | str] | None = None,
              ks: Sequence[int] | None = None, *, bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The JSON-able summary: Pass@(K,T) and Pass^(K,T) cells per (env, agent, reveal), and reveal
    modes side by side."""
    if not records:
        raise ValueError("no episode records to report on")
    unit = records_unit(records)
    inferred_budgets, inferred_ks = infer_grid(records)
    budgets = list(budgets) if budgets is not None else inferred_budgets
    ks = sorted(ks) if ks is not None else inferred_ks
    groups = []
    by_group = group_records(records)
    for (env, agent, reveal), group in by_group.items():
        cells = pass_grid(group, budgets, ks, bootstrap=bootstrap, seed=seed)
        groups.append({"env": env, "agent": agent, "reveal": reveal, "episodes": len(group),
                       "tasks": len({r["task"] for r in group}),
                       "splits": sorted({str(r.get("split", "?")) for r in group}),
                       "agent_config": group[0].get("agent_config"),
                       "reads_budget": bool(group[0].get("reads_budget", False)),
                       "shortcut": any(r["budget"] is None for r in group), "cells": [c.as_dict() for c in cells]})
    summary: dict[str, Any] = {"unit": unit, "budgets": budgets, "ks": ks, "groups": groups,
                               "episodes": len(records), "interval": INTERVAL_METHOD}
    if any(c["infeasible_tasks"] for g in groups for c in g["cells"]):
        summary["infeasible_note"] = INFEASIBLE_NOTE
    shortcut = [g for g in groups if g["shortcut"]]
    if shortcut:
        saved = sum(g["episodes"] for g in shortcut) * (len(budgets) - 1)
        summary["shortcut"] = {"note": SHORTCUT_NOTE, "episodes_saved": saved,
                               "groups": [f"{g['env']} | {g['agent']} | reveal={g['reveal']}" for g in shortcut]}
    summary["reveal_comparison"] = _reveal_comparison(by_group, budgets, ks, bootstrap=bootstrap, seed=seed)
    return summary


def _reveal_comparison(by_group: Mapping[tuple[str, str, str], list[Record]], budgets: Sequence[Any],
                       ks: Sequence[int], *, bootstrap: int, seed: int) -> dict[str, Any] | None:
    """Announced caps minus the unannounced one, per env and agent: what telling the agent T changes."""
    groups = []
    for (env, agent, reveal), records in by_group.items():
        unannounced = by_group.get((env, agent, "none"))
        if reveal == "none" or unannounced is None:
            continue
        cells = difference_grid(unannounced, records, budgets, ks, bootstrap=bootstrap, seed=seed)
        entry = {"env": env, "agent": agent, "reveal": f"{reveal} - none", "cells": [c.as_dict() for c in cells]}
        if not any(r.get("reads_budget") for r in records):
            entry["note"] = BLIND_NOTE.format(agent=agent)
        groups.append(entry)
    if not groups:
        return None
    return {"a": "unannounced cap", "b": "announced cap", "unit": records_unit([r for g in by_group.values() for r in g]),
            "budgets": list(budgets), "ks": list(ks), "groups": groups}


def compare(records_a: Sequence[Record], records_b: Sequence[Record], *, label_a: str | None = None,
            label_b: str | None = None, budgets: Sequence[int | float | str] | None = None,
            ks: Sequence[int] | None = None, bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Pass@(K,T) and Pass^(K,T) of B minus A for every (env, reveal) both runs have, paired over
    common tasks (both runs in one unit)."""
    unit_a, unit_b = records_unit(records_a), records_unit(records_b)
    if unit_a != unit_b:
        raise ValueError(f"run A's budgets are in {unit_a}, run B's in {unit_b}: compare runs in one unit")
    groups_a, groups_b = _by_env_reveal(records_a, "A"), _by_env_reveal(records_b, "B")
    common = [key for key in groups_a if key in groups_b]
    if not common:
        raise ValueError("the two runs share no (env, reveal) pair to compare")
    # Each run's grid on its own: pooling them would count a task's attempts twice.
    budgets_a, ks_a = infer_grid([r for key in common for r in groups_a[key]])
    budgets_b, ks_b = infer_grid([r for key in common for r in groups_b[key]])
    budgets = list(budgets) if budgets is not None else [b for b in budgets_a if b in budgets_b] or budgets_a
    ks = sorted(ks) if ks is not None else [k for k in ks_a if k in ks_b]
    groups = []
    for env, reveal in common:
        cells = difference_grid(groups_a[(env, reveal)], groups_b[(env, reveal)], budgets, ks,
                                bootstrap=bootstrap, seed=seed)
        groups.append({"env": env, "reveal": reveal, "cells": [c.as_dict() for c in cells]})
    return {"a": label_a or records_a[0]["agent"], "b": label_b or records_b[0]["agent"], "unit": unit_a,
            "budgets": budgets, "ks": ks, "groups": groups, "interval": INTERVAL_METHOD}


def _by_env_reveal(records: Sequence[Record], which: str) -> dict[tuple[str, str], list[Record]]:
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    agents: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        groups[(record["env"], record["reveal"])].append(record)
        agents[(record["env"], record["reveal"])].add(record["agent"])
    for key, names in agents.items():
        if len(names) > 1:
            raise ValueError(f"run {which} holds several agents for {key}: {sorted(names)}; compare one agent per file")
    return dict(groups)


# ------------------------------------------------------------------ files


def write_csv(summary: Mapping[str, Any], path: str | Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for group in summary["groups"]:
            for cell in group["cells"]:
                writer.writerow({"env": group["env"], "agent": group.get("agent", ""), "reveal": group["reveal"],
                                 "unit": summary.get("unit", "turns"), **{k: cell[k] for k in CSV_FIELDS[4:]}})
    return Path(path)


def write_report(summary: Mapping[str, Any], out_dir: str | Path, *, plots: bool = True) -> dict[str, Path]:
    """summary.json, pass_at_k.csv, pass_heatmap.png, pass_all_heatmap.png (Pass^(K,T)),
    pass_curves.png (and reveal_difference.png when several reveal modes ran) in ``out_dir``; ``plots=False`` leaves out the PNGs (an install
    without matplotlib)."""
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "summary.json", "csv": out / "pass_at_k.csv"}
    files["json"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    write_csv(summary, files["csv"])
    if not plots:
        return files
    files["heatmap"] = plot_pass_heatmaps(summary, out / "pass_heatmap.png")
    files["pass_all_heatmap"] = plot_pass_heatmaps(summary, out / "pass_all_heatmap.png", metric="pass_all")
    files["curves"] = plot_pass_curves(summary, out / "pass_curves.png")
    if summary.get("reveal_comparison"):
        files["reveal_difference"] = plot_difference_heatmaps(summary["reveal_comparison"],
                                                              out / "reveal_difference.png")
    return files


def write_comparison(comparison: Mapping[str, Any], out_dir: str | Path, *, plots: bool = True) -> dict[str, Path]:
    """comparison.json, comparison.csv and difference_heatmap.png (unless ``plots=False``) in ``out_dir``."""
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "comparison.json", "csv": out / "comparison.csv"}
    files["json"].write_text(json.dumps(comparison, indent=2) + "\n", encoding="utf-8")
    write_csv(comparison, files["csv"])
    if plots:
        files["heatmap"] = plot_difference_heatmaps(comparison, out / "difference_heatmap.png")
    return files


# ------------------------------------------------------------------ terminal


def print_summary(summary: Mapping[str, Any], console: Any = None) -> None:
    """Rich tables: Pass@K and Pass^K per T with CIs for each group, then the reveal modes side by side."""
    console = console or _console()
    table_module = require("rich.table", "terminal tables")
    unit = summary.get("unit", "turns")
    strict = [k for k in summary["ks"] if k > 1]  # Pass^1 is Pass@1
    for group in summary["groups"]:
        table = table_module.Table(title=f"{group['env']} | {group['agent']} | reveal={group['reveal']}"
                                   f" | {group['episodes']} episodes | T in {unit}", title_justify="left")
        table.add_column("T", justify="right")
        for k in summary["ks"]:
            table.add_column(f"Pass@{k}", justify="right")
        for k in strict:
            table.add_column(f"Pass^{k}", justify="right")
        table.add_column("turns to success", justify="right")
        for budget in summary["budgets"]:
            cells = {c["k"]: c for c in group["cells"] if c["budget"] == budget}
            first = next(iter(cells.values()))
            turns = first["mean_turns_to_success"]
            mark = "*" if first.get("infeasible_tasks") else ""
            table.add_row(budget_label(budget, unit) + mark,
                          *(f"{cells[k]['pass']:.2f} [{cells[k]['ci_low']:.2f}, {cells[k]['ci_high']:.2f}]"
                            for k in summary["ks"]),
                          *(f"{cells[k]['pass_all']:.2f} [{cells[k]['pass_all_ci_low']:.2f}, "
                            f"{cells[k]['pass_all_ci_high']:.2f}]" for k in strict),
                          "-" if turns is None else f"{turns:.1f}")
        console.print(table)
        console.print(f"[dim]tasks: {group.get('tasks', '?')} from split {', '.join(group.get('splits', ['?']))}"
                      "[/dim]", soft_wrap=True)
    if summary.get("reveal_comparison"):
        print_reveal_side_by_side(summary, console)
        print_comparison(summary["reveal_comparison"], console)
    if summary.get("infeasible_note"):
        console.print(f"[dim]{summary['infeasible_note']}[/dim]", soft_wrap=True)
    if summary.get("interval"):
        console.print(f"[dim]Intervals: {summary['interval']}.[/dim]", soft_wrap=True)
    if summary.get("shortcut"):
        console.print(f"[dim]Note: {summary['shortcut']['note']} Used for: "
                      f"{'; '.join(summary['shortcut'].get('groups', []))}. Episodes saved: "
                      f"{summary['shortcut']['episodes_saved']}.[/dim]", soft_wrap=True)


def print_reveal_side_by_side(summary: Mapping[str, Any], console: Any = None) -> None:
    """Per env and agent: Pass@1 and Pass@(largest K) under each reveal mode, next to each other."""
    console = console or _console()
    table_module = require("rich.table", "terminal tables")
    by_agent: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for group in summary["groups"]:
        by_agent[(group["env"], group["agent"])][group["reveal"]] = group
    ks = sorted({summary["ks"][0], summary["ks"][-1]})
    for (env, agent), groups in by_agent.items():
        if len(groups) < 2:
            continue
        table = table_module.Table(title=f"{env} | {agent} | unannounced vs announced caps", title_justify="left")
        table.add_column("T", justify="right")
        for k in ks:
            for reveal in groups:
                table.add_column(f"Pass@{k} {reveal}", justify="right")
        for budget in summary["budgets"]:
            values = {(g["reveal"], c["k"]): c["pass"] for g in groups.values() for c in g["cells"]
                      if c["budget"] == budget}
            table.add_row(budget_label(budget, summary.get("unit", "turns")),
                          *(f"{values[(reveal, k)]:.2f}" for k in ks for reveal in groups))
        console.print(table)


def print_comparison(comparison: Mapping[str, Any], console: Any = None) -> None:
    console = console or _console()
    table_module = require("rich.table", "terminal tables")
    for group in comparison["groups"]:
        table = table_module.Table(title=f"{group['env']} | reveal={group['reveal']} | "
                                   f"{comparison['b']} minus {comparison['a']}", title_justify="left")
        unit = comparison.get("unit", "turns")
        strict = [k for k in comparison["ks"] if k > 1]
        table.add_column("T", justify="right")
        for k in comparison["ks"]:
            table.add_column(f"Δ Pass@{k}", justify="right")
        for k in strict:
            table.add_column(f"Δ Pass^{k}", justify="right")
        for budget in comparison["budgets"]:
            cells = {c["k"]: c for c in group["cells"] if c["budget"] == budget}
            table.add_row(budget_label(budget, unit),
                          *(f"{cells[k]['pass']:+.2f} [{cells[k]['ci_low']:+.2f}, {cells[k]['ci_high']:+.2f}]"
                            for k in comparison["ks"]),
                          *(f"{cells[k]['pass_all']:+.2f} [{cells[k]['pass_all_ci_low']:+.2f}, "
                            f"{cells[k]['pass_all_ci_high']:+.2f}]" for k in strict))
        console.print(table)
        if group.get("note"):
            console.print(f"[dim]Note: {group['note']}.[/dim]", soft_wrap=True)


def _console() -> Any:
    console_module = require("rich.console", "terminal tables")
    console = console_module.Console()
    # Rich assumes 80 columns when writing to a file or pipe: too narrow for a Pass@K row with CIs.
    return console if console.is_terminal else console_module.Console(width=120)


def print_recovery(result: Mapping[str, Any], console: Any = None) -> None:
    console = console or _console()
    table_module = require("rich.table", "terminal tables")
    table = table_module.Table(title=f"Recovery | {result['env']} | {result['agent']} | "
                               f"{result['attempts']} attempts per state", title_justify="left")
    for column in ("failure kind", "states", "from failure", "from clean twin", "gap [95% CI]"):
        table.add_column(column, justify="left" if column == "failure kind" else "right")
    for row in result["kinds"]:
        table.add_row(row["kind"], str(row["states"]), f"{row['failure_recovery']:.2f}", f"{row['clean_success']:.2f}",
                      f"{row['gap']:+.2f} [{row['gap_ci_low']:+.2f}, {row['gap_ci_high']:+.2f}]")
    console.print(table)
    if result["skipped_states"]:
        console.print(f"[dim]{len(result['skipped_states'])} failure states have no clean twin (the oracle ends "
                      f"before their turn) and were skipped.[/dim]", soft_wrap=True)


def print_action_quality(result: Mapping[str, Any], console: Any = None) -> None:
    console = console or _console()
    table_module = require("rich.table", "terminal tables")
    table = table_module.Table(title=f"Action quality | {result['env']} | {result['states']} states | "
                               f"{result['rollouts']} rollouts by {result['reference']}", title_justify="left")
    for column in ("agent", "mean quality", "better at share of states"):
        table.add_column(column, justify="left" if column == "agent" else "right")
    table.add_row(f"A: {result['a']}", f"{result['mean_quality_a']:.3f}", f"{result['a_better']:.2f}")
    table.add_row(f"B: {result['b']}", f"{result['mean_quality_b']:.3f}", f"{result['b_better']:.2f}")
    console.print(table)
    low, high = result["difference_ci"]
    console.print(f"ties: {result['ties']:.2f} of states; B minus A: {result['mean_difference']:+.3f} "
                  f"[{low:+.3f}, {high:+.3f}] (bootstrap over states)", soft_wrap=True)
