"""The verifiers taskset id ``budgetgym-verifiers``: verifiers imports a taskset by a top-level module
name, so this module re-exports :mod:`budgetgym.integrations.verifiers` (the taskset and its env)."""

from budgetgym.integrations.verifiers import (
    BudgetgymConfig,
    BudgetgymData,
    BudgetgymEnv,
    BudgetgymEnvConfig,
    BudgetgymTask,
    BudgetgymTaskset,
)

__all__ = ["BudgetgymConfig", "BudgetgymData", "BudgetgymEnv", "BudgetgymEnvConfig", "BudgetgymTask",
           "BudgetgymTaskset"]
