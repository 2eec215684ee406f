"""budgetgym: Gymnasium environments for multi-turn LLM agents under turn budgets.

``import budgetgym`` registers every id (``budgetgym.REGISTRY``) with Gymnasium;
``budgetgym.make(id, budget=..., reveal=..., inject_errors=...)`` composes the wrappers.
"""

from budgetgym.envs import REGISTRY, register_envs
from budgetgym.factory import make

__version__ = "0.1.0"

register_envs()

__all__ = ["REGISTRY", "__version__", "make", "register_envs"]
