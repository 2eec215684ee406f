"""ALFWorld-v0: the missing-requirement message, and play on a small ALFWorld-format game the tests
write from the domain and grammar files the ``alfworld`` wheel ships (``tests/alfworld_data.py``)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import rollout
from budgetgym.envs.alfworld import ALFWorldNotInstalled
from alfworld_data import GAME_DIR, WALKTHROUGH, write_alfworld_data

ENV_ID = "budgetgym/ALFWorld-v0"


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def test_make_says_what_to_install_or_set(monkeypatch, tmp_path):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(ALFWorldNotInstalled) as err:
        gym.make(ENV_ID)
    message = str(err.value)
    if not _have("alfworld"):
        assert "pip install alfworld" in message
    elif not _have("fast_downward"):
        assert "textworld[pddl]" in message
    else:  # importing alfworld sets ALFWORLD_DATA to ~/.cache/alfworld when it is unset
        assert "ALFWORLD_DATA" in message and "alfworld-download" in message
        monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
        with pytest.raises(ALFWorldNotInstalled, match=f"no json_2.1.1 folder in ALFWORLD_DATA={tmp_path}"):
            gym.make(ENV_ID)
    assert isinstance(err.value, ImportError)


@pytest.fixture
def alfworld_env(monkeypatch, tmp_path):
    pytest.importorskip("alfworld", reason="the alfworld package is not installed (pip install alfworld)")
    pytest.importorskip("fast_downward", reason="textworld[pddl]'s fast-downward-textworld did not build here")
    monkeypatch.setenv("ALFWORLD_DATA", str(write_alfworld_data(tmp_path)))
    env = gym.make(ENV_ID)
    yield env
    env.close()


def test_the_written_game_is_the_task_set(alfworld_env):
    tasks = alfworld_env.unwrapped.tasks
    assert tasks.ids == (GAME_DIR,)
    assert tasks[0].split == "train" and tasks[0]["oracle_turns"] == len(WALKTHROUGH)
    assert tasks[0].instruction == "put a mug in shelf"


def test_the_planner_oracle_solves_it_and_bad_input_changes_nothing(alfworld_env):
    observation, info = alfworld_env.reset(seed=0)
    assert "Your task is to: put a mug in shelf" in observation and "Welcome" not in observation
    assert "go to countertop 1" in info["admissible_actions"]
    observation, _, terminated, _, info = alfworld_env.step("fly to the moon")
    assert observation == "Nothing happens." and not terminated and info["turn"] == 1
    result = rollout(alfworld_env, "oracle", reset=False)
    assert result.success and alfworld_env.unwrapped.turn <= alfworld_env.unwrapped.task.max_turns


def test_a_snapshot_restores_by_replay(alfworld_env):
    alfworld_env.reset(seed=0)
    alfworld_env.step("go to countertop 1")
    snap = alfworld_env.unwrapped.snapshot()
    assert snap["state"] is None
    alfworld_env.step("take mug 1 from countertop 1")
    observation, info = alfworld_env.reset(options={"snapshot": snap})
    assert "take mug 1 from countertop 1" in info["admissible_actions"] and info["turn"] == 1
