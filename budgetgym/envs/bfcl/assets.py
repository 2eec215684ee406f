"""BFCL-v0's shipped data, its one rebuild command: the curated failure states, built by the core's failure-state builder
(:mod:`budgetgym.core.failures`) from the env's mistakes (``mistakes.py``, asked by ``BFCLEnv.propose_mistake``):

    python -m budgetgym.envs.bfcl.assets

writes ``budgetgym/assets/bfcl/failure_states.jsonl``: up to ``PER_SPLIT_KIND`` states of each kind
(``wrong_directory``, ``wasted_call``, ``wrong_argument``, ``destructive_call``; ``mistakes.py``)
in each of the four categories (the splits), at most one per task, built split by split so that
every split holds every kind. Each is kept only when the oracle, planning from the state the
mistake left (``repairs.py`` for the two kinds that change what BFCL compares), still passes every
user turn within the task's full budget. The snapshots name their tasks by fingerprint: a
bfcl-eval whose data differs refuses them with a clear message. BFCL's data is Apache-2.0, as the
transcripts here (its user requests and service outputs) are.

Deterministic: the same bfcl-eval data and seed give the same file.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

import gymnasium as gym

from budgetgym.core import write_jsonl
from budgetgym.core.failures import build_failure_states
from budgetgym.core.tasks import ASSETS, Task
from budgetgym.envs.bfcl.tasks import CATEGORIES

ENV_ID = "budgetgym/BFCL-v0"
PATH = ASSETS / "bfcl" / "failure_states.jsonl"
PER_SPLIT_KIND = 25


def by_service(tasks: list[Task]) -> list[Task]:
    """``tasks`` ordered so that their first services take turns (BFCL's ids run service by service:
    taken in id order, the first services would take every state of a kind)."""
    queues: dict[str, list[Task]] = collections.defaultdict(list)
    for task in tasks:
        queues[task["involved_classes"][0]].append(task)
    ordered = []
    while any(queues.values()):
        for name in sorted(queues):
            if queues[name]:
                ordered.append(queues[name].pop(0))
    return ordered


def generate_failure_states(per_split_kind: int = PER_SPLIT_KIND, seed: int = 0) -> list[dict[str, Any]]:
    env = gym.make(ENV_ID)
    try:
        tasks = env.unwrapped.tasks
        return [state for split in CATEGORIES
                for state in build_failure_states(env, by_service([task for task in tasks if task.split == split]),
                                                  per_split_kind, seed=seed, namespace="budgetgym-bfcl-failures")]
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    states = generate_failure_states()
    PATH.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(PATH, states)
    kinds = collections.Counter(state["kind"] for state in states)
    splits = collections.Counter(state["task_id"].rsplit("_", 1)[0] for state in states)
    print(f"{len(states)} failure states {dict(kinds)} {dict(splits)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
