"""The pinned libraries: fetched as sdists with pip, checked against their sha256, laid out as a task repository.

``budgetgym/assets/coding/libraries/pins.json`` names each library's version, the sha256 of its
sdist, its licence, its split (libraries on ``"test"`` are never seen in training) and its
*layout*: which paths of the sdist become which paths of the task's repository. Every repository
has the same shape as the shipped small libraries (:mod:`budgetgym.envs.coding.repos`): the
library's code at the root (``src/`` layouts are lifted) and its tests under ``tests/``, which is
where the workspace's ``run_tests`` and the grader look. Only UTF-8 text files are kept; nothing
else of the sdist (packaging files, its own pytest configuration) comes along, so the grader's
configuration is the only one.

A library is pinned only when its suite passes with pytest and the standard library alone and its
test ids are the same in every run (grading matches tests by id): isodate 0.7.2 was dropped because
its tests are parametrized over a ``set`` and their ids changed between two runs of the same tree.
A pin may say why it is ``"held"``: it is fetched and built when named, but the default build (and
so the shipped set) leaves it out.

The sdists are downloaded with ``pip download --no-deps --no-binary :all: NAME==VERSION`` into
the cache (:func:`cache_dir`), once; the library's code never enters the repository.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import posixpath
import subprocess
import sys
import tarfile
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from budgetgym.core.tasks import ASSETS

FOLDER = ASSETS / "coding" / "libraries"
PINS_FILE = FOLDER / "pins.json"
_PIP_TIMEOUT = 600


class FetchError(RuntimeError):
    """A pinned library could not be fetched, or what came does not match its pin."""


@functools.lru_cache(maxsize=None)
def pins() -> Mapping[str, Mapping[str, Any]]:
    """The pins, by library name."""
    return MappingProxyType(json.loads(PINS_FILE.read_text(encoding="utf-8")))


def cache_dir() -> Path:
    """Where fetched sdists and built task sets live: ``$BUDGETGYM_CACHE`` or
    ``$XDG_CACHE_HOME/budgetgym`` (``~/.cache/budgetgym``), then ``coding-libraries``."""
    root = os.environ.get("BUDGETGYM_CACHE")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "budgetgym")
    return Path(root) / "coding-libraries"


def sdist(name: str) -> Path:
    """The library's sdist in the cache, downloaded by pip when absent; its sha256 is checked every time."""
    pin = _pin(name)
    folder = cache_dir() / "sdists"
    found = _cached_sdist(folder, name, pin["version"])
    if found is None:
        folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                   f"{name}=={pin['version']}", "--dest", str(folder)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_PIP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise FetchError(f"{name}: pip download timed out after {_PIP_TIMEOUT} s") from None
        found = _cached_sdist(folder, name, pin["version"])
        if done.returncode != 0 or found is None:
            raise FetchError(f"{name}=={pin['version']}: pip download failed: {done.stderr.strip()[-600:]}")
    digest = hashlib.sha256(found.read_bytes()).hexdigest()
    if digest != pin["sha256"]:
        found.unlink()
        raise FetchError(f"{found.name}: sha256 {digest} is not the pinned {pin['sha256']}; removed it")
    return found


@functools.lru_cache(maxsize=None)
def library_files(name: str) -> Mapping[str, str]:
    """The task repository of a pinned library (relative POSIX path -> text), read once per process."""
    pin = _pin(name)
    layout: Mapping[str, str] = pin["layout"]
    files: dict[str, str] = {}
    with tarfile.open(sdist(name), "r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            inner = posixpath.normpath(member.name).split("/", 1)[-1]
            target = _placed(inner, layout)
            if target is None or "__pycache__" in target.split("/") or target.endswith((".pyc", ".pyo")):
                continue
            data = archive.extractfile(member).read()
            try:
                files[target] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
    if not any(path.startswith("tests/") for path in files):
        raise FetchError(f"{name}: the layout {dict(layout)} yields no tests/")
    return MappingProxyType(dict(sorted(files.items())))


def _placed(inner: str, layout: Mapping[str, str]) -> str | None:
    """Where a path of the sdist goes in the repository: the longest layout entry that holds it."""
    best = None
    for source in layout:
        if inner == source or inner.startswith(source + "/"):
            if best is None or len(source) > len(best):
                best = source
    if best is None:
        return None
    target = layout[best] + inner[len(best):]
    if target.startswith("/") or ".." in target.split("/"):
        return None
    return target


def _pin(name: str) -> Mapping[str, Any]:
    try:
        return pins()[name]
    except KeyError:
        raise KeyError(f"no pinned library {name!r}; there are {', '.join(sorted(pins()))}") from None


def _cached_sdist(folder: Path, name: str, version: str) -> Path | None:
    stems = {f"{name}-{version}", f"{name.replace('-', '_')}-{version}"}
    for stem in sorted(stems):
        path = folder / f"{stem}.tar.gz"
        if path.is_file():
            return path
    return None
