"""The shipped libraries the coding tasks are made from (``budgetgym/assets/coding/repos/<name>``).

Each is a small, real Python package with its own pytest suite under ``tests/``. A task's
repository is one of them with one injected bug (see :mod:`budgetgym.envs.coding.generate`).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from budgetgym.core.tasks import ASSETS

REPOS = ASSETS / "coding" / "repos"
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git"}


def repo_names() -> tuple[str, ...]:
    return tuple(sorted(p.name for p in REPOS.iterdir() if p.is_dir() and not p.name.startswith(".")))


def read_tree(root: str | os.PathLike) -> dict[str, str]:
    """Every text file under ``root`` (relative POSIX path -> text), caches skipped."""
    root = Path(root)
    files: dict[str, str] = {}
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(directory, name)
            files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return files


@functools.lru_cache(maxsize=None)
def repo_files(name: str) -> Mapping[str, str]:
    """The files of a shipped library, read once per process."""
    root = REPOS / name
    if not root.is_dir():
        raise KeyError(f"no shipped library {name!r}; there are {', '.join(repo_names())}")
    return MappingProxyType(read_tree(root))


def is_test_path(path: str) -> bool:
    """Test code: files under ``tests/`` and pytest's own configuration files anywhere."""
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") or name in ("conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
