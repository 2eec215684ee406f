"""``budgetgym/ALFWorld-v0``: ALFWorld's text games (see ``env``).

Importing this package imports neither ALFWorld nor TextWorld; making the env does.
"""

from budgetgym.envs.alfworld.env import ALFWorldEnv, ALFWorldNotInstalled

__all__ = ["ALFWorldEnv", "ALFWorldNotInstalled"]
