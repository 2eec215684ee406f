"""Pass@(K,T) and Pass^(K,T) from episode records: the unbiased estimators, mean turns to success,
and confidence intervals over tasks that stay honest at 0 and 1.

Pass@(K,T) is the probability that at least one of K attempts succeeds within T (what a system that
can retry and check gets); Pass^(K,T) (tau-bench's pass^k) the probability that all K succeed
within T (the reliability a deployment asks for). Per task, from n attempts of which c succeeded
within T: ``1 - C(n-c, k) / C(n, k)`` and ``C(c, k) / C(n, k)``, both unbiased (the probability that
k attempts drawn without replacement from the n hold a success, or hold only successes).

Intervals (``INTERVAL_METHOD``): the task is the unit (attempts of one task are not independent),
so a cell's interval is the percentile bootstrap over tasks, widened to contain the Wilson score
interval of the mean with the number of tasks as n. A per-task pass@k lies in [0, 1], so its
variance is at most that of a Bernoulli variable with the same mean: the Wilson interval is a
conservative bound that does not collapse where the bootstrap does (every task at 0, or at 1:
``0.00 [0.00, 0.02]`` over 248 tasks, not ``[0.00, 0.00]``). A difference of two runs uses the
paired bootstrap over common tasks, widened to contain Newcombe's hybrid score interval (the
Wilson intervals of both runs combined, MOVER).

An episode record (see :mod:`budgetgym.eval.sweep`) counts as solved within T when it succeeded
having used at most the cap T means for its task, in the record's unit (turns, tool calls or
tokens; :func:`budgetgym.core.budgets.resolve_cap`). A run at the full budget (``budget`` None, the
``reveal="none"`` shortcut) therefore serves every T; a run under an announced cap serves only its
own T.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from budgetgym.core.budgets import resolve_cap

INTERVAL_METHOD = (
    "95% intervals over tasks: the percentile bootstrap of the task mean (1000 resamples of tasks), widened to "
    "contain the Wilson score interval with n = tasks (differences: paired bootstrap widened to Newcombe's hybrid "
    "score interval), so an interval stays honest at 0 and 1"
)


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


def pass_all_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass^k from n attempts of which c succeeded: C(c, k) / C(n, k).

    It is the probability that k attempts drawn without replacement from the n all succeed.
    """
    pass_at_k(n, c, k)  # the same checks
    return math.comb(c, k) / math.comb(n, k)


def record_unit(record: Mapping[str, Any]) -> str:
    """The unit a record's budget is in (``turns`` for records that do not say)."""
    return record.get("unit") or "turns"


def shortest_of(record: Mapping[str, Any]) -> int | None:
    """The task's shortest solution in the record's unit: ``oracle_turns`` for turns, else
    ``shortest`` (the oracle's calls or tokens, measured when the sweep was planned)."""
    return record.get("oracle_turns") if record_unit(record) == "turns" else record.get("shortest")


def record_cap(record: Mapping[str, Any], budget: int | float | str) -> int:
    """The cap that ``budget`` means for the task of ``record``, in the record's unit."""
    return resolve_cap(budget, record["full_budget"], shortest_of(record), record_unit(record))


def solved_within(record: Mapping[str, Any], budget: int | float | str) -> bool:
    """Whether an episode record counts as solved within ``budget`` (in the record's unit: the
    episode succeeded having used at most the cap)."""
    return bool(record["success"]) and record[record_unit(record)] <= record_cap(record, budget)


def infeasible(record: Mapping[str, Any], budget: int | float | str) -> bool:
    """Whether ``budget`` is below the task's shortest solution (no agent can solve it there);
    False where the record does not say how long the shortest solution is."""
    shortest = shortest_of(record)
    return shortest is not None and record_cap(record, budget) < shortest


@dataclass(frozen=True)
class Cell:
    """Pass@K and Pass^K at budget T for one group of records, averaged over tasks, with their
    intervals (see ``INTERVAL_METHOD``)."""

    budget: int | float | str
    k: int
    value: float
    ci_low: float
    ci_high: float
    tasks: int
    attempts: int  # the smallest number of attempts of any task (n in the estimator)
    mean_turns_to_success: float | None
    infeasible_tasks: int = 0  # tasks whose shortest solution is longer than this budget
    pass_all: float = 0.0  # Pass^(K,T): all K attempts succeed within T
    pass_all_ci_low: float = 0.0
    pass_all_ci_high: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"budget": self.budget, "k": self.k, "pass": self.value, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "pass_all": self.pass_all, "pass_all_ci_low": self.pass_all_ci_low,
                "pass_all_ci_high": self.pass_all_ci_high, "tasks": self.tasks, "attempts": self.attempts,
                "mean_turns_to_success": self.mean_turns_to_success, "infeasible_tasks": self.infeasible_tasks}


def records_for_budget(records: Iterable[Mapping[str, Any]], budget: int | float | str) -> list[Mapping[str, Any]]:
    """The records that speak for budget T: a task's runs capped at T where it has them, else its
    full-budget runs (the shortcut). Never both: the same attempt run twice is not two attempts."""
    records = list(records)
    capped = [r for r in records if r["budget"] == budget]
    capped_tasks = {r["task"] for r in capped}
    return capped + [r for r in records if r["budget"] is None and r["task"] not in capped_tasks]


def task_counts(records: Iterable[Mapping[str, Any]], budget: int | float | str) -> dict[str, tuple[int, int]]:
    """Per task, (attempts n, attempts solved within T c) among the records that speak for T."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records_for_budget(records, budget):
        entry = counts[record["task"]]
        entry[0] += 1
        entry[1] += solved_within(record, budget)
    return {task: (n, c) for task, (n, c) in counts.items()}


def infeasible_tasks(records: Iterable[Mapping[str, Any]], budget: int | float | str) -> set[str]:
    """The tasks among ``records`` whose shortest solution does not fit in ``budget``."""
    return {r["task"] for r in records_for_budget(records, budget) if infeasible(r, budget)}


def mean_turns_to_success(records: Iterable[Mapping[str, Any]], budget: int | float | str) -> float | None:
    """Mean turns of the attempts solved within T (None when none was), whatever the unit."""
    turns = [r["turns"] for r in records_for_budget(records, budget) if solved_within(r, budget)]
    return float(np.mean(turns)) if turns else None


def pass_grid(
    records: Sequence[Mapping[str, Any]],
    budgets: Sequence[int | float | str],
    ks: Sequence[int],
    *,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Cell]:
    """Pass@(K,T) and Pass^(K,T) for one group of records (one env, agent and reveal mode), for
    every K and T."""
    cells = []
    for budget in budgets:
        counts = task_counts(records, budget)
        if not counts:
            raise ValueError(f"no episodes for budget {budget!r}")
        mean_turns = mean_turns_to_success(records, budget)
        unreachable = len(infeasible_tasks(records, budget))
        for k in ks:
            per_task = np.array([pass_at_k(n, c, k) for n, c in counts.values()])
            low, high = mean_ci(per_task, bootstrap=bootstrap, confidence=confidence, seed=seed)
            all_k = np.array([pass_all_k(n, c, k) for n, c in counts.values()])
            all_low, all_high = mean_ci(all_k, bootstrap=bootstrap, confidence=confidence, seed=seed)
            cells.append(Cell(budget, k, float(per_task.mean()), low, high, len(counts),
                              min(n for n, _ in counts.values()), mean_turns, unreachable,
                              float(all_k.mean()), all_low, all_high))
    return cells


def difference_grid(
    records_a: Sequence[Mapping[str, Any]],
    records_b: Sequence[Mapping[str, Any]],
    budgets: Sequence[int | float | str],
    ks: Sequence[int],
    *,
    bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Cell]:
    """Pass@(K,T) and Pass^(K,T) of B minus A on the tasks both ran, with paired intervals over
    those tasks."""
    cells = []
    for budget in budgets:
        counts_a, counts_b = task_counts(records_a, budget), task_counts(records_b, budget)
        common = sorted(set(counts_a) & set(counts_b))
        if not common:
            raise ValueError(f"the two runs share no task at budget {budget!r}")
        unreachable = len(infeasible_tasks(records_a, budget) & set(common))
        for k in ks:
            pass_a = np.array([pass_at_k(*counts_a[t], k) for t in common])
            pass_b = np.array([pass_at_k(*counts_b[t], k) for t in common])
            low, high = difference_ci(pass_a, pass_b, bootstrap=bootstrap, confidence=confidence, seed=seed)
            all_a = np.array([pass_all_k(*counts_a[t], k) for t in common])
            all_b = np.array([pass_all_k(*counts_b[t], k) for t in common])
            all_low, all_high = difference_ci(all_a, all_b, bootstrap=bootstrap, confidence=confidence, seed=seed)
            attempts = min(min(counts_a[t][0], counts_b[t][0]) for t in common)
            cells.append(Cell(budget, k, float((pass_b - pass_a).mean()), low, high, len(common), attempts, None,
                              unreachable, float((all_b - all_a).mean()), all_low, all_high))
    return cells


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(mean: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``mean`` observed over ``n`` units."""
    if n < 1:
        raise ValueError("the Wilson interval needs n >= 1")
    z = _z(confidence)
    z2 = z * z
    centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(0.0, mean * (1 - mean) / n + z2 / (4 * n * n)))
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(per_task: np.ndarray, *, bootstrap: int = 1000, confidence: float = 0.95,
            seed: int = 0) -> tuple[float, float]:
    """The interval of a mean of per-task values in [0, 1] (see ``INTERVAL_METHOD``)."""
    low, high = bootstrap_ci(per_task, bootstrap=bootstrap, confidence=confidence, seed=seed)
    wilson_low, wilson_high = wilson_interval(float(per_task.mean()), len(per_task), confidence)
    return min(low, wilson_low), max(high, wilson_high)


def difference_ci(pass_a: np.ndarray, pass_b: np.ndarray, *, bootstrap: int = 1000, confidence: float = 0.95,
                  seed: int = 0) -> tuple[float, float]:
    """The interval of mean(B) - mean(A) over paired tasks (see ``INTERVAL_METHOD``)."""
    low, high = bootstrap_ci(pass_b - pass_a, bootstrap=bootstrap, confidence=confidence, seed=seed)
    mean_a, mean_b = float(pass_a.mean()), float(pass_b.mean())
    low_a, high_a = wilson_interval(mean_a, len(pass_a), confidence)
    low_b, high_b = wilson_interval(mean_b, len(pass_b), confidence)
    difference = mean_b - mean_a
    newcombe_low = difference - math.sqrt((mean_b - low_b) ** 2 + (high_a - mean_a) ** 2)
    newcombe_high = difference + math.sqrt((high_b - mean_b) ** 2 + (mean_a - low_a) ** 2)
    return max(-1.0, min(low, newcombe_low)), min(1.0, max(high, newcombe_high))


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
