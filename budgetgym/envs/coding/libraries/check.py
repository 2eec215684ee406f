"""The last check of a built library task: the env grades the pinned library's own fix as solved.

A bug is kept only when the oracle's fix restores every test; the builder's full runs show that
for the plain suite, but Coding-v0 grades with more than the suite (armed test files and hidden
perturbed copies of the fail-to-pass tests, :mod:`budgetgym.envs.coding.grading`), and where those
disagree with the pinned library itself (a test whose records differ between the reference run and
the graded run) the task could never be solved. :func:`unsolvable` plays each bug's fix once in the
env (visible mode: the sites put back with ``replace_in_file``, then ``submit``); the command line
(``--check``) drops both modes of every bug it names.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping, Sequence

from budgetgym.core import TaskSet

WORKERS = 2


def graded_fix(record: Mapping[str, Any]) -> tuple[bool, str]:
    """(whether the env grades the pinned fix of ``record`` as solved, the submit's observation)."""
    from budgetgym.envs.coding.env import CodingEnv

    env = CodingEnv(tasks=TaskSet([dict(record)]))
    try:
        env.reset(seed=0)
        for site in record["sites"]:
            env.step(json.dumps({"name": "replace_in_file",
                                 "arguments": {"path": site["path"], "old": site["buggy"], "new": site["fixed"]}}))
        observation, _, _, _, info = env.step(json.dumps({"name": "submit", "arguments": {}}))
        return bool(info.get("success")), observation
    finally:
        env.close()


def unsolvable(records: Sequence[Mapping[str, Any]], log=print) -> set[str]:
    """The ids (both modes) of the bugs whose pinned fix the env does not grade as solved."""
    visible = [r for r in records if r["tests"] == "visible"]
    bad: set[str] = set()
    with ThreadPoolExecutor(WORKERS) as pool:
        for record, (solved, observation) in zip(visible, pool.map(graded_fix, visible)):
            if not solved:
                bad |= {record["id"], f"{record['id']}-withheld"}
                log(f"{record['id']}: the pinned fix is not graded as solved: {observation[-300:]}")
    return bad
