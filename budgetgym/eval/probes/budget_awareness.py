"""The budget-awareness probe: what an agent does with a budget it is told of.

At the same caps, each agent plays each task twice per attempt, with the cap unannounced
(``reveal="none"``) and announced (``reveal="remaining"``, or ``"total"``), with the same seed both
times (paired). Per env, agent and budget it reports, for each mode and the difference announced
minus unannounced:

* ``success``: the share of episodes solved within the cap;
* ``turns``: mean turns used, and ``calls``: mean tool calls run (tokens too: ``tokens``);
* ``early_end``: the share of episodes that ended before the cap without success: the agent gave an
  answer (or submitted, or gave up) before the work was done.

Differences come with a 95% percentile bootstrap interval over tasks (the task is the unit: its
attempts are paired across modes). An agent that does not read budgets (``reads_budget`` False) shows
zero differences by construction; the probe says so. The runs are one sweep (``run_sweep`` with no
single-run shortcut: every mode runs every cap), so episodes resume from ``out`` like a sweep's.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from budgetgym.eval.agents.base import Agent, reads_budget
from budgetgym.eval.metrics import bootstrap_ci
from budgetgym.eval.sweep import run_sweep

#: The caps the probe runs by default: the shortest solution and one and a half times it.
DEFAULT_BUDGETS = ("1x", "1.5x")
MEASURES = ("success", "turns", "calls", "tokens", "early_end")


def episode_measures(record: Mapping[str, Any]) -> dict[str, float]:
    """One episode's measures (see the module doc)."""
    early = not record["success"] and not record["truncated"]
    return {"success": float(record["success"]), "turns": float(record["turns"]), "calls": float(record["calls"]),
            "tokens": float(record["tokens"]), "early_end": float(early)}


def summarize_awareness(records: Sequence[Mapping[str, Any]], announced: str = "remaining", *,
                        bootstrap: int = 1000, seed: int = 0) -> list[dict[str, Any]]:
    """Per (env, agent, budget): each measure under ``none`` and ``announced``, and the difference
    with its interval over tasks."""
    by_cell: dict[tuple[str, str, Any], dict[str, dict[str, list[dict[str, float]]]]] = \
        defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    aware: dict[str, bool] = {}
    for record in records:
        by_cell[(record["env"], record["agent"], record["budget"])][record["reveal"]][record["task"]].append(
            episode_measures(record))
        aware[record["agent"]] = bool(record.get("reads_budget", False))
    rows = []
    for (env, agent, budget), modes in by_cell.items():
        tasks = sorted(set(modes.get("none", {})) & set(modes.get(announced, {})))
        if not tasks:
            continue
        row: dict[str, Any] = {"env": env, "agent": agent, "budget": budget, "tasks": len(tasks),
                               "episodes": sum(len(modes[m][t]) for m in ("none", announced) for t in tasks),
                               "reads_budget": aware[agent]}
        for measure in MEASURES:
            per_task = {mode: np.array([np.mean([e[measure] for e in modes[mode][t]]) for t in tasks])
                        for mode in ("none", announced)}
            difference = per_task[announced] - per_task["none"]
            low, high = bootstrap_ci(difference, bootstrap=bootstrap, seed=seed)
            row[measure] = {"none": float(per_task["none"].mean()), announced: float(per_task[announced].mean()),
                            "difference": float(difference.mean()), "ci_low": low, "ci_high": high}
        if not aware[agent]:
            row["note"] = (f"{agent} does not read budgets: it acts the same under either mode and meets the same "
                           "seeds, so every difference is zero by construction")
        rows.append(row)
    return rows


def run_budget_awareness_probe(
    env_ids: Sequence[str],
    agents: Sequence[Agent],
    *,
    tasks: Any = None,
    budgets: Sequence[int | float | str] = DEFAULT_BUDGETS,
    unit: str = "turns",
    announced: str = "remaining",
    attempts: int = 1,
    seed: int = 0,
    executor: Any = "serial",
    out: str | Path | None = None,
    progress: bool = False,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every agent on every env at ``budgets`` (in ``unit``) under ``none`` and ``announced``;
    return the JSON-able result (``rows`` from :func:`summarize_awareness`). With ``out`` (a folder)
    each (env, agent) sweep's episodes are kept in it and resume. ``env_kwargs`` go to every env's
    ``gym.make``."""
    if announced not in ("total", "remaining"):
        raise ValueError(f"announced must be 'total' or 'remaining', got {announced!r}")
    records: list[Mapping[str, Any]] = []
    for env_id in env_ids:
        for agent in agents:
            path = None
            if out is not None:
                folder = Path(out)
                folder.mkdir(parents=True, exist_ok=True)
                name = f"{env_id.replace('/', '_')}__{agent.name}".replace(" ", "_").replace(":", "_")
                path = folder / f"budget_awareness__{name}.jsonl"
            result = run_sweep(env_id, agent, tasks=tasks, k=1, n=attempts, budgets=budgets,
                               reveal=("none", announced), seed=seed, executor=executor, out=path, shortcut=False,
                               progress=progress, unit=unit, env_kwargs=env_kwargs)
            records.extend(dict(r, reads_budget=reads_budget(agent)) for r in result.records)
    return {"probe": "budget-awareness", "unit": unit, "announced": announced, "budgets": list(budgets),
            "attempts": attempts, "envs": list(env_ids), "agents": [a.name for a in agents],
            "rows": summarize_awareness(records, announced, seed=seed)}


def format_awareness_table(result: Mapping[str, Any]) -> str:
    """The probe's rows as plain text: per env, agent and budget, each measure under both modes."""
    announced = result["announced"]
    header = f"{'env':<28} {'agent':<24} {'T':>6}  " + "  ".join(
        f"{m + ' none/' + announced[:3] + ' (diff)':>27}" for m in MEASURES)
    lines = [f"Budget awareness: caps in {result['unit']}, unannounced vs {announced}", header]
    for row in result["rows"]:
        cells = "  ".join(f"{row[m]['none']:>7.2f}/{row[m][announced]:<6.2f}({row[m]['difference']:+.2f})".rjust(27)
                          for m in MEASURES)
        lines.append(f"{row['env'].split('/')[-1]:<28} {row['agent']:<24} {str(row['budget']):>6}  {cells}")
    for row in result["rows"]:
        if row.get("note"):
            lines.append(f"note: {row['note']}")
            break
    return "\n".join(lines)
