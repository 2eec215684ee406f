"""Coding tasks in real libraries: pinned pure-Python libraries from PyPI with bugs synthesized inside them.

The project keeps the pins, the bugs (as mutation sites) and the issue texts in
``budgetgym/assets/coding/libraries/``; the libraries' code is fetched with pip into the cache
(:mod:`~budgetgym.envs.coding.libraries.fetch`) when a task is first played or the set is built.
``gym.make("budgetgym/Coding-v0", task_set="libraries")`` plays them. The set is built with

    python -m budgetgym.envs.coding.libraries [--library NAME ...] [--out PATH]

(:mod:`~budgetgym.envs.coding.libraries.build`; the bugs, tiers and modes:
:mod:`~budgetgym.envs.coding.libraries.synth`; the cheap filter that decides which candidates
get a full suite run: :mod:`~budgetgym.envs.coding.libraries.screen`).
"""

from __future__ import annotations

from budgetgym.core import TaskSet, read_jsonl
from budgetgym.envs.coding.libraries.fetch import FOLDER, FetchError, cache_dir, library_files, pins
from budgetgym.envs.coding.libraries.synth import oracle_action, task_files

TASKS_FILE = FOLDER / "tasks.jsonl"


def library_tasks() -> TaskSet:
    """The shipped library task set (the libraries themselves are fetched on first use)."""
    return TaskSet(read_jsonl(TASKS_FILE))


__all__ = ["FOLDER", "FetchError", "TASKS_FILE", "cache_dir", "library_files", "library_tasks", "oracle_action",
           "pins", "task_files"]
