"""Wrappers that turn any budgetgym env into a budgeted, or error-injected, one."""

from budgetgym.wrappers.error_injection import ErrorInjection
from budgetgym.wrappers.turn_budget import (REVEAL_MODES, REVEAL_TEMPLATES, BudgetMix, TurnBudget, cap_for,
                                            check_budget, multiple_of, oracle_turns_of, parse_budget)

__all__ = ["BudgetMix", "ErrorInjection", "REVEAL_MODES", "REVEAL_TEMPLATES", "TurnBudget", "cap_for",
           "check_budget", "multiple_of", "oracle_turns_of", "parse_budget"]
