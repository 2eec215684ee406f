"""Web-v0: a self-contained web shop as text (``WebEnv``), its HTTP mode (``server``) and its data."""

from budgetgym.envs.web.env import WebEnv

__all__ = ["WebEnv"]
