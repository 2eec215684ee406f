"""Wrappers that turn any budgetgym env into a budgeted, or error-injected, one.

The budget vocabulary they apply (forms, units, reveal texts and their reader) is
:mod:`budgetgym.core.budgets`.
"""

from budgetgym.wrappers.error_injection import ErrorInjection
from budgetgym.wrappers.turn_budget import BudgetMix, HorizonSchedule, TurnBudget, oracle_turns_of, solution_cost

__all__ = ["BudgetMix", "ErrorInjection", "HorizonSchedule", "TurnBudget", "oracle_turns_of", "solution_cost"]
