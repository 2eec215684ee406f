"""``budgetgym/BFCL-v0``: BFCL's multi-turn categories from the installed ``bfcl-eval`` (see ``env``).

Importing this package does not import ``bfcl_eval``; making the env does.
"""

from budgetgym.envs.bfcl.env import BFCLEnv

__all__ = ["BFCLEnv"]
