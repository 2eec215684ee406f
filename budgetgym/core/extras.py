"""The one error for a missing optional dependency, and the lazy import that raises it.

``import budgetgym`` needs only the core dependencies. Everything else (the chat agent, tables,
plots, Ray, a family's engine or browser, a trainer's package) is imported where it is first used,
through :func:`require` or an import guard that raises :class:`MissingExtra`. Every such message has
one form, ``<what> needs <missing>: <install command>``, and the command line answers it with one
line and exit code 1 (:data:`EXIT_MISSING_EXTRA`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from gymnasium.error import DependencyNotInstalled

#: The exit code of the ``budgetgym`` command when an extra is missing (a failure while running).
EXIT_MISSING_EXTRA = 1

#: The extra that brings each optional top-level module :func:`require` is asked for.
EXTRA_OF = {"openai": "eval", "rich": "eval", "matplotlib": "eval", "ray": "ray", "pyarrow": "integrations",
            "skyrl_gym": "integrations", "gem": "integrations", "verifiers": "integrations", "pandas": "swebench",
            "openenv": "serve", "fastapi": "serve", "uvicorn": "serve", "websockets": "serve"}


class MissingExtra(DependencyNotInstalled, ImportError):
    """An optional dependency is missing: ``what`` needs it, ``extra`` names the budgetgym extra.

    ``missing`` says what is absent (default: the extra itself), ``install`` the command that
    brings it (default: ``pip install 'budgetgym[<extra>]'``), ``detail`` the underlying import
    error or a note. Gymnasium's ``DependencyNotInstalled`` and an ``ImportError`` both, so either
    ``except`` catches it."""

    def __init__(self, extra: str, what: str, *, missing: str | None = None, install: str | None = None,
                 detail: str | None = None) -> None:
        self.extra = extra
        self.what = what
        self.install = install or f"pip install 'budgetgym[{extra}]'"
        message = f"{what} needs {missing or f'the {extra} extra'}: {self.install}"
        super().__init__(message + (f" ({detail})" if detail else ""))


def require(module: str, what: str) -> ModuleType:
    """Import ``module`` (e.g. ``"matplotlib.pyplot"``) for ``what``, or raise :class:`MissingExtra`."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(EXTRA_OF.get(top, "eval"), what, missing=f"the {top!r} package") from err
