"""``budgetgym.make``: ``gym.make`` plus the budget and error-injection wrappers, in one call."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import gymnasium as gym

from budgetgym.wrappers import BudgetMix, ErrorInjection, TurnBudget


def make(
    env_id: str,
    *,
    budget: int | float | str | None = None,
    reveal: str = "none",
    budget_mix: Sequence[float | str] | None = None,
    inject_errors: bool | Iterable[str] | None = None,
    **env_kwargs: Any,
) -> gym.Env[str, str]:
    """Make a registered env and wrap it.

    Args:
        env_id: a registered id, e.g. ``"budgetgym/FunctionCalling-v0"``.
        budget: a turn cap (``TurnBudget``): an int, a float in (0, 1] as a share of each task's
            full budget, or ``"1.5x"``, a multiple of the task's shortest solution. None: the full budget.
        reveal: what the agent is told of the cap: ``"none"``, ``"total"`` or ``"remaining"``.
        budget_mix: fractions for ``BudgetMix`` (a cap drawn at every reset); excludes ``budget``.
        inject_errors: True for ``ErrorInjection`` over every curated failure kind, or the kinds.
        **env_kwargs: passed to ``gym.make`` (``split``, ``task_ids``, ``reward_mode``, ...).

    The order is fixed: ``ErrorInjection`` inside, the budget outside, so a restored failure
    state's turns count against the cap.
    """
    if budget is not None and budget_mix is not None:
        raise ValueError("give either budget or budget_mix, not both")
    env = gym.make(env_id, **env_kwargs)
    if inject_errors:
        kinds = None if inject_errors is True else list(inject_errors)
        env = ErrorInjection(env, kinds=kinds)
    if budget_mix is not None:
        env = BudgetMix(env, fractions=budget_mix, reveal=reveal)
    elif budget is not None:
        env = TurnBudget(env, max_turns=budget, reveal=reveal)
    elif reveal != "none":
        env = TurnBudget(env, max_turns=1.0, reveal=reveal)
    return env
