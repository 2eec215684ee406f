"""``budgetgym.make``: ``gym.make`` plus the budget and error-injection wrappers, in one call."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import gymnasium as gym

from budgetgym.core.budgets import Tokenizer
from budgetgym.wrappers import BudgetMix, ErrorInjection, HorizonSchedule, TurnBudget


def make(
    env_id: str,
    *,
    budget: int | float | str | None = None,
    unit: str = "turns",
    reveal: str = "none",
    budget_mix: Sequence[int | float | str] | None = None,
    schedule: Sequence[tuple[int, Any]] | None = None,
    tokenizer: Tokenizer | None = None,
    inject_errors: bool | Iterable[str] | None = None,
    **env_kwargs: Any,
) -> gym.Env[str, str]:
    """Make a registered env and wrap it.

    Args:
        env_id: a registered id, e.g. ``"budgetgym/FunctionCalling-v0"``.
        budget: a cap (``TurnBudget``) in ``unit``, in any form of :mod:`budgetgym.core.budgets`:
            an int, a float in (0, 1] as a share of each task's full budget, ``"1.5x"``, a multiple
            of the task's shortest solution, or the same as text (``"8"``). None: the full budget.
        unit: ``"turns"``, ``"calls"`` or ``"tokens"``.
        reveal: what the agent is told of the cap: ``"none"``, ``"total"`` or ``"remaining"``.
        budget_mix: budgets for ``BudgetMix`` (one drawn at every reset); excludes ``budget``.
        schedule: stages for ``HorizonSchedule`` (``((start, budget), ...)`` by episode count);
            excludes ``budget`` and ``budget_mix``.
        tokenizer: counts the tokens of the agent's outputs (default: a regex tokenizer).
        inject_errors: True for ``ErrorInjection`` over every curated failure kind, or the kinds.
        **env_kwargs: passed to ``gym.make`` (``split``, ``task_ids``, ``reward_mode``, ...).

    The order is fixed: ``ErrorInjection`` inside, the budget outside, so a restored failure
    state's use counts against the cap.
    """
    if sum(x is not None for x in (budget, budget_mix, schedule)) > 1:
        raise ValueError("give one of budget, budget_mix and schedule")
    env = gym.make(env_id, **env_kwargs)
    if inject_errors:
        kinds = None if inject_errors is True else list(inject_errors)
        env = ErrorInjection(env, kinds=kinds)
    if schedule is not None:
        return HorizonSchedule(env, stages=schedule, reveal=reveal, unit=unit, tokenizer=tokenizer)
    if budget_mix is not None:
        return BudgetMix(env, budgets=budget_mix, reveal=reveal, unit=unit, tokenizer=tokenizer)
    if budget is None and unit != "turns":
        raise ValueError(f"a budget in {unit} needs a value (the bare env caps turns only): give budget=")
    if budget is not None or reveal != "none":
        return TurnBudget(env, 1.0 if budget is None else budget, reveal=reveal, unit=unit, tokenizer=tokenizer)
    return env
