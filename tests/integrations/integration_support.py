"""What the integration tests share: the shipped family ids and, per id, one cheap probe task. (A
module of its own name: ``from conftest import`` finds another directory's conftest when both are
collected.)"""

from dataclasses import dataclass

import gymnasium as gym
import pytest

import budgetgym

#: Every shipped family (adapters to outside benchmarks excluded): families that register later are
#: covered as they land.
FAMILY_IDS = [entry.id for entry in budgetgym.REGISTRY if not entry.adapter]


@dataclass(frozen=True)
class Probe:
    env_id: str
    task_id: str
    oracle_turns: int
    max_turns: int
    split: str


def probe_task(env_id: str) -> Probe:
    """The task with the fewest oracle turns of at least 2 (so a cap one turn short still leaves a
    turn to play), from the test split where there is one."""
    env = gym.make(env_id)
    try:
        tasks = env.unwrapped.all_tasks
        split = "test" if "test" in tasks.splits else tasks.splits[0]
        candidates = [t for t in tasks.select(split) if (t.oracle_turns or 0) >= 2]
        if not candidates:
            pytest.skip(f"{env_id} has no task whose oracle takes 2 turns or more")
        task = min(candidates, key=lambda t: (t.oracle_turns, t.id))
        return Probe(env_id, task.id, task.oracle_turns, task.max_turns, split)
    finally:
        env.close()
