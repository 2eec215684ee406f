"""BFCL-v0's shipped data, its one rebuild command: the curated failure states, built by the core's failure-state builder
(:mod:`budgetgym.core.failures`) from the env's mistakes (``mistakes.py``, asked by ``BFCLEnv.propose_mistake``):

    python -m budgetgym.envs.bfcl.assets

writes ``budgetgym/assets/bfcl/failure_states.jsonl``: ``PER_KIND`` states of each kind
(``wrong_directory``, ``wasted_call``), over tasks taken from the four categories (the splits) in
turn, so every split holds both kinds. Each is kept only when the oracle, planning from the state
the mistake left, still passes every user turn within the task's full budget. The snapshots name
their tasks by fingerprint: a bfcl-eval whose data differs refuses them with a clear message.
Deterministic: the same bfcl-eval data and seed give the same file.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any, Iterable

import gymnasium as gym

from budgetgym.core import write_jsonl
from budgetgym.core.failures import build_failure_states
from budgetgym.core.tasks import ASSETS, Task

ENV_ID = "budgetgym/BFCL-v0"
PATH = ASSETS / "bfcl" / "failure_states.jsonl"
PER_KIND = 60


def interleaved(tasks: Iterable[Task]) -> list[Task]:
    """Tasks ordered so that the categories (splits) take turns."""
    by_split: dict[str, list[Task]] = collections.defaultdict(list)
    for task in tasks:
        by_split[task.split].append(task)
    queues = [by_split[split] for split in sorted(by_split)]
    ordered = []
    while any(queues):
        for queue in queues:
            if queue:
                ordered.append(queue.pop(0))
    return ordered


def generate_failure_states(per_kind: int = PER_KIND, seed: int = 0) -> list[dict[str, Any]]:
    env = gym.make(ENV_ID)
    try:
        return build_failure_states(env, interleaved(env.unwrapped.tasks), per_kind, seed=seed,
                                    namespace="budgetgym-bfcl-failures")
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
