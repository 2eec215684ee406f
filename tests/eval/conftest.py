"""Fixtures of the evaluation tests: the toy env (registered by tests/conftest.py) and failure
states for it, since the toy family ships none."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

TOY_ID = "budgetgym-test/Counter-v0"
TESTS_DIR = Path(__file__).resolve().parent.parent

if TOY_ID not in gym.registry:  # also when this folder is run on its own
    gym.register(TOY_ID, entry_point="toy_env:CounterEnv")


def failure_state(state_id: str, task_id: str, kind: str, actions: list[str], seed: int = 7) -> dict:
    """A failure state of the toy env: the snapshot after ``actions`` (the mistake last)."""
    env = gym.make(TOY_ID)
    env.reset(seed=seed, options={"task_id": task_id})
    for action in actions:
        env.step(action)
    return {"id": state_id, "task_id": task_id, "kind": kind, "description": f"{kind} on {task_id}",
            "error_step": len(actions), "snapshot": env.unwrapped.snapshot()}


@pytest.fixture
def toy_failure_states() -> list[dict]:
    # Each a mistake at turn 1 on a task the oracle needs 2 turns for, so each has a clean twin
    # (toy-04 and toy-09: target 6 in 8 turns; toy-03: target 5 in 7 turns).
    return [
        failure_state("fs-talk", "toy-04", "wasted-turn", ["say(text='hm')"]),
        failure_state("fs-small", "toy-09", "small-step", ["add(1)"]),
        failure_state("fs-talk-2", "toy-03", "wasted-turn", ["say(text='?')"]),
    ]
