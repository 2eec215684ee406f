"""Lazy imports of the optional dependencies, with an error that names the extra to install.

``import budgetgym.eval`` needs only the core dependencies: scripted sweeps and the metrics run
without the extras; the chat agent, progress bars, tables, plots and Ray pull theirs on first use.
"""

from __future__ import annotations

import importlib
from types import ModuleType

_EXTRA_OF = {"openai": "eval", "rich": "eval", "matplotlib": "eval", "ray": "ray"}


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message says which extra brings it."""


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (e.g. ``"matplotlib.pyplot"``) or explain how to install it."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        extra = _EXTRA_OF.get(top, "eval")
        raise MissingExtraError(
            f"{purpose} needs the '{top}' package, which is not installed: pip install 'budgetgym[{extra}]'"
        ) from err
