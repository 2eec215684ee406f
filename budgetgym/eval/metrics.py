"""Pass@(K,T) from episode records: the unbiased pass@k estimator, mean turns to success, and
bootstrap confidence intervals over tasks.

An episode record (see :mod:`budgetgym.eval.sweep`) counts as solved within T when it succeeded in
at most ``cap_for(T, max_turns)`` turns. A run at the full budget (``budget`` None, the
``reveal="none"`` shortcut) therefore serves every T; a run under an announced cap serves only its
own T.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from budgetgym.wrappers import cap_for


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n attempts of which c succeeded: 1 - C(n-c, k) / C(n, k).

    It is the probability that k attempts drawn without replacement from the n include a success.
    """
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be in [0, n={n}], got {c}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} attempts per task, got n={n}")
    # Exact integer binomials: no float cancellation for c close to n or large n.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def solved_within(record: Mapping[str, Any], budget: int | float) -> bool:
    """Whether an episode record counts as solved within ``budget`` (an int or a share of the full budget)."""
    return bool(record["success"]) and record["turns"] <= cap_for(budget, record["max_turns"])


@dataclass(frozen=True)
class Cell:
    """Pass@K at budget T for one group of records, averaged over tasks, with a bootstrap CI."""

    budget: int | float
    k: int
    value: float
    ci_low: float
    ci_high: float
    tasks: int
    attempts: int  # the smallest number of attempts of any task (n in the estimator)
    mean_turns_to_success: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"budget": self.budget, "k": self.k, "pass": self.value, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "tasks": self.tasks, "attempts": self.attempts,
                "mean_turns_to_success": self.mean_turns_to_success}


def records_for_budget(records: Iterable[Mapping[str, Any]], budget: int | float) -> list[Mapping[str, Any]]:
    """The records that speak for budget T: a task's runs capped at T where it has them, else its
    full-budget runs (the shortcut). Never both: the same attempt run twice is not two attempts."""
    records = list(records)
    capped = [r for r in records if r["budget"] == budget]
    capped_tasks = {r["task"] for r in capped}
    return capped + [r for r in records if r["budget"] is None and r["task"] not in capped_tasks]


def task_counts(records: Iterable[Mapping[str, Any]], budget: int | float) -> dict[str, tuple[int, int]]:
    """Per task, (attempts n, attempts solved within T c) among the records that speak for T."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records_for_budget(records, budget):
        entry = counts[record["task"]]
        entry[0] += 1
        entry[1] += solved_within(record, budget)
    return {task: (n, c) for task, (n, c) in counts.items()}


def mean_turns_to_success(records: Iterable[Mapping[str, Any]], budget: int | float) -> float | None:
    """Mean turns of the attempts solved within T (None when none was)."""
    turns = [r["turns"] for r in records_for_budget(records, budget) if solved_within(r, budget)]
    return float(np.mean(turns)) if turns else None


def pass_grid(
    records: Sequence[Mapping[str, Any]],
    budgets: Sequence[int | float],
    ks: Sequence[int],
    *,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Cell]:
    """Pass@(K,T) for one group of records (one env, agent and reveal mode), for every K and T."""
    cells = []
    for budget in budgets:
        counts = task_counts(records, budget)
        if not counts:
            raise ValueError(f"no episodes for budget {budget!r}")
        mean_turns = mean_turns_to_success(records, budget)
        for k in ks:
            per_task = np.array([pass_at_k(n, c, k) for n, c in counts.values()])
            low, high = bootstrap_ci(per_task, bootstrap=bootstrap, confidence=confidence, seed=seed)
            cells.append(Cell(budget, k, float(per_task.mean()), low, high, len(counts),
                              min(n for n, _ in counts.values()), mean_turns))
    return cells


def difference_grid(
    records_a: Sequence[Mapping[str, Any]],
    records_b: Sequence[Mapping[str, Any]],
    budgets: Sequence[int | float],
    ks: Sequence[int],
    *,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Cell]:
    """Pass@(K,T) of B minus A on the tasks both ran, with a paired bootstrap CI over those tasks."""
    cells = []
    for budget in budgets:
        counts_a, counts_b = task_counts(records_a, budget), task_counts(records_b, budget)
        common = sorted(set(counts_a) & set(counts_b))
        if not common:
            raise ValueError(f"the two runs share no task at budget {budget!r}")
        for k in ks:
            per_task = np.array([pass_at_k(*counts_b[t], k) - pass_at_k(*counts_a[t], k) for t in common])
            low, high = bootstrap_ci(per_task, bootstrap=bootstrap, confidence=confidence, seed=seed)
            attempts = min(min(counts_a[t][0], counts_b[t][0]) for t in common)
            cells.append(Cell(budget, k, float(per_task.mean()), low, high, len(common), attempts, None))
    return cells


def bootstrap_ci(per_task: np.ndarray, *, bootstrap: int = 1000, confidence: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean over tasks: tasks are the unit that is resampled."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if len(per_task) == 0:
        raise ValueError("no tasks to bootstrap over")
    rng = np.random.default_rng(seed)
    means = per_task[rng.integers(0, len(per_task), size=(bootstrap, len(per_task)))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)
