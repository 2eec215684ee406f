"""MiniWoB-v0: MiniWoB++ tasks from the ``miniwob`` package, in Chromium, as text."""

from budgetgym.envs.miniwob.env import MiniWoBEnv, MiniWoBNotInstalled

__all__ = ["MiniWoBEnv", "MiniWoBNotInstalled"]
