"""The SWE-bench adapter (SWEBench-v0): SWE-bench instances run in their images, graded by ``swebench``."""

from budgetgym.envs.swebench.env import InstancesMissing, SWEBenchEnv

__all__ = ["InstancesMissing", "SWEBenchEnv"]
