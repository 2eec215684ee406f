"""PNG plots (matplotlib, no display needed): the Pass@(K,T) heatmap, Pass@K curves per T, and the
difference heatmap of two agents (or of an announced cap against the unannounced one).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot: no global state and no
backend to select, so plotting works in workers and on machines without a display.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from budgetgym.core.extras import require


def budget_label(budget: int | float | str, unit: str = "turns") -> str:
    """``0.25`` -> ``"25%"`` (a share of the full budget), ``6`` -> ``"6 turns"`` (or ``"6 calls"``,
    ``"6 tokens"``), ``"1.5x"`` (a multiple of the shortest solution) as it is."""
    if isinstance(budget, str):
        return budget
    return f"{budget:.0%}" if isinstance(budget, float) else f"{budget} {unit}"


#: What each metric of a cell is called in plots: Pass@(K,T) (one of K attempts succeeds within T)
#: and Pass^(K,T) (all K do).
METRICS = {"pass": "Pass@(K,T)", "pass_all": "Pass^(K,T)"}


def _figure(panels: int, width: float = 5.2, height: float = 3.8) -> tuple[Any, list[Any]]:
    figure_module = require("matplotlib.figure", "PNG plots")
    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = figure_module.Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def _heatmap(axis: Any, group: Mapping[str, Any], budgets: Sequence[Any], ks: Sequence[int], *, cmap: str,
             vmin: float, vmax: float, signed: bool, metric: str = "pass", unit: str = "turns") -> Any:
    """One K x T grid of ``group["cells"]``' ``metric``, each cell written out (a colour alone is hard
    to read)."""
    value = {(c["budget"], c["k"]): c[metric] for c in group["cells"]}
    grid = [[value.get((b, k), math.nan) for k in ks] for b in budgets]
    image = axis.imshow(grid, cmap=cmap, vmin=vmin, vmax=vmax, origin="lower", aspect="auto")
    axis.set_xticks(range(len(ks)), [str(k) for k in ks])
    axis.set_yticks(range(len(budgets)), [budget_label(b, unit) for b in budgets])
    axis.set_xlabel("K (attempts)")
    axis.set_ylabel(f"T (budget in {unit})")
    middle = (vmin + vmax) / 2
    for row in range(len(budgets)):
        for column in range(len(ks)):
            cell = grid[row][column]
            if not math.isnan(cell):
                light = abs(cell) > 0.5 * vmax if signed else cell < middle
                axis.text(column, row, f"{cell:+.2f}" if signed else f"{cell:.2f}", ha="center", va="center",
                          fontsize=9, color="white" if light else "black")
    return image


def _title(group: Mapping[str, Any]) -> str:
    return f"{group['env']}\n{group['agent']}, reveal={group['reveal']}"


def plot_pass_heatmaps(summary: Mapping[str, Any], path: str | Path, metric: str = "pass") -> Path:
    """One heatmap of ``metric`` (``"pass"``: Pass@(K,T); ``"pass_all"``: Pass^(K,T)) per (env,
    agent, reveal) group."""
    groups = summary["groups"]
    unit = summary.get("unit", "turns")
    figure, axes = _figure(len(groups))
    for axis, group in zip(axes, groups, strict=True):
        image = _heatmap(axis, group, summary["budgets"], summary["ks"], cmap="viridis", vmin=0.0, vmax=1.0,
                         signed=False, metric=metric, unit=unit)
        axis.set_title(_title(group), fontsize=9)
    figure.colorbar(image, ax=axes, label=METRICS[metric], shrink=0.8)
    what = "in one of K attempts" if metric == "pass" else "in all K attempts"
    figure.suptitle(f"{METRICS[metric]}: solved within T {unit} {what}", fontsize=10)
    figure.savefig(path, dpi=110)
    return Path(path)


def plot_pass_curves(summary: Mapping[str, Any], path: str | Path) -> Path:
    """Pass@K (solid) and Pass^K (dashed) against K, one colour per T, one panel per group."""
    groups = summary["groups"]
    unit = summary.get("unit", "turns")
    figure, axes = _figure(len(groups))
    for axis, group in zip(axes, groups, strict=True):
        for budget in summary["budgets"]:
            cells = sorted((c for c in group["cells"] if c["budget"] == budget), key=lambda c: c["k"])
            ks = [c["k"] for c in cells]
            line = axis.plot(ks, [c["pass"] for c in cells], marker="o", label=f"T={budget_label(budget, unit)}")[0]
            axis.fill_between(ks, [c["ci_low"] for c in cells], [c["ci_high"] for c in cells],
                              color=line.get_color(), alpha=0.15, linewidth=0)
            axis.plot(ks, [c["pass_all"] for c in cells], marker="v", linestyle="--", color=line.get_color())
            axis.fill_between(ks, [c["pass_all_ci_low"] for c in cells], [c["pass_all_ci_high"] for c in cells],
                              color=line.get_color(), alpha=0.08, linewidth=0)
        axis.set_xscale("log", base=2)
        axis.set_xticks(summary["ks"], [str(k) for k in summary["ks"]])
        axis.set_ylim(-0.02, 1.02)
        axis.set_xlabel("K (attempts)")
        axis.set_ylabel("Pass@K (solid), Pass^K (dashed)")
        axis.grid(alpha=0.3)
        axis.set_title(_title(group), fontsize=9)
        axis.legend(fontsize=8, loc="lower right")
    figure.suptitle(f"Pass@K and Pass^K per budget T in {unit} (bands: 95% intervals over tasks)", fontsize=10)
    figure.savefig(path, dpi=110)
    return Path(path)


def plot_difference_heatmaps(comparison: Mapping[str, Any], path: str | Path) -> Path:
    """Heatmaps of B - A per env (and reveal), Pass@(K,T) above and Pass^(K,T) below: blue where B
    is better, red where A is."""
    groups = comparison["groups"]
    unit = comparison.get("unit", "turns")
    panels = [(group, metric) for metric in METRICS for group in groups]
    figure, axes = _figure(len(panels))
    largest = max((abs(c[m]) for g in groups for c in g["cells"] for m in METRICS), default=0.0)
    bound = max(largest, 0.05)
    for axis, (group, metric) in zip(axes, panels, strict=True):
        image = _heatmap(axis, group, comparison["budgets"], comparison["ks"], cmap="RdBu", vmin=-bound,
                         vmax=bound, signed=True, metric=metric, unit=unit)
        axis.set_title(f"{METRICS[metric]}: {group['env']}, reveal={group['reveal']}", fontsize=9)
    figure.colorbar(image, ax=axes, label="difference", shrink=0.8)
    figure.suptitle(f"Pass@(K,T) and Pass^(K,T): {comparison['b']} minus {comparison['a']}", fontsize=10)
    figure.savefig(path, dpi=110)
    return Path(path)
