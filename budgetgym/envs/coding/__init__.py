"""The coding family: bug fixing in sandboxed repositories (Coding-v0) and the SWE-bench adapter."""

from budgetgym.envs.coding.env import CodingEnv

__all__ = ["CodingEnv"]
