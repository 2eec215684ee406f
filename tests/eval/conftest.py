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
    # toy-04: target 6, 8 turns; toy-08: target 5, 7 turns; toy-01: target 3, 5 turns.
    return [
        failure_state("fs-talk", "toy-04", "wasted-turn", ["say(text='hm')"]),
        failure_state("fs-small", "toy-08", "small-step", ["add(3)", "add(1)"]),
        failure_state("fs-talk-2", "toy-01", "wasted-turn", ["add(1)", "say(text='?')"]),
    ]
