"""Put tests/ on sys.path (for toy_env, contract, registered), register the toy env, and give
ALFWorld-v0 the games the tests write (``alfworld_data.py``) when ALFWorld and its planner are here."""

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import registered  # noqa: E402,F401  (registers the toy env for every test folder)

_ALFWORLD_ROOT: str | None = None


def pytest_configure(config):
    # Every test that makes ALFWorld-v0 plays the written games, whatever ALFWORLD_DATA says outside
    # the run: a download of ALFWorld's games would make the suite depend on which games it holds.
    global _ALFWORLD_ROOT
    if all(importlib.util.find_spec(m) is not None for m in ("alfworld", "fast_downward")):
        from alfworld_data import write_alfworld_data

        _ALFWORLD_ROOT = tempfile.mkdtemp(prefix="budgetgym-alfworld-")
        os.environ["ALFWORLD_DATA"] = str(write_alfworld_data(Path(_ALFWORLD_ROOT)))


def pytest_unconfigure(config):
    if _ALFWORLD_ROOT is not None:
        shutil.rmtree(_ALFWORLD_ROOT, ignore_errors=True)
