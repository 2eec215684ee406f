"""``budgetgym/Navigation-v0``: TextWorld games in its Jericho engine (see ``env``).

Importing this package does not import TextWorld; making the env does.
"""

from budgetgym.envs.navigation.env import NavigationEnv

__all__ = ["NavigationEnv"]
