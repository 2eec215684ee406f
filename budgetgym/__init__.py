"""budgetgym: Gymnasium environments for multi-turn LLM agents under turn budgets."""

from budgetgym.envs import REGISTRY, register_envs

__version__ = "0.1.0"

register_envs()

__all__ = ["REGISTRY", "__version__", "register_envs"]
