"""budgetgym/Web-v0's restore refuses an edited snapshot whose digest was removed, as every id does:
a snapshot without its digest is not taken on trust (every ``snapshot()`` has one), so its state is
checked against a replay of its transcript."""

from __future__ import annotations

import copy

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import SnapshotError


@pytest.mark.parametrize("env_id", ["budgetgym/Web-v0", "budgetgym/FunctionCalling-v0"])
def test_a_snapshot_without_its_digest_and_another_first_observation_is_refused(env_id):
    env = gym.make(env_id)
    env.reset(seed=0, options={"task_index": 0})
    env.step(env.unwrapped.oracle_action())
    snapshot = env.unwrapped.snapshot()
    before = env.unwrapped.snapshot()
    edited = copy.deepcopy(snapshot)
    del edited["digest"]
    edited["first_observation"] += " (edited)"
    with pytest.raises(SnapshotError, match="first observation"):
        env.reset(options={"snapshot": edited})
    assert env.unwrapped.snapshot() == before and env.unwrapped.running
    # Without its digest but unedited, it restores (by replay) to the same episode.
    plain = copy.deepcopy(snapshot)
    del plain["digest"]
    observation, _ = env.reset(options={"snapshot": plain})
    assert observation == snapshot["transcript"][-1][1]
    assert env.unwrapped.snapshot()["state"] == snapshot["state"]
