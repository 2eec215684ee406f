"""FunctionCalling-v0: multi-turn function calling over four stateful services (see ``env.py``)."""

from budgetgym.envs.function_calling.env import FunctionCallingEnv

__all__ = ["FunctionCallingEnv"]
