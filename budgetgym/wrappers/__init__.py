"""Wrappers that turn any budgetgym env into a budgeted, or error-injected, one."""

from budgetgym.wrappers.error_injection import ErrorInjection
from budgetgym.wrappers.turn_budget import REVEAL_MODES, BudgetMix, TurnBudget, cap_for, check_budget, parse_budget

__all__ = ["BudgetMix", "ErrorInjection", "REVEAL_MODES", "TurnBudget", "cap_for", "check_budget", "parse_budget"]
