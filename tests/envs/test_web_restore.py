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


def test_the_readme_states_what_the_title_overlap_heuristic_solves():
    """The README says how easy the shipped Web-v0 instructions are for a one-page heuristic; the
    figure is measured here, so it cannot go stale."""
    from pathlib import Path

    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.web import TitleOverlap

    env = gym.make("budgetgym/Web-v0", split="test")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for lists, words in ((False, "single-item test instructions"), (True, "test shopping lists")):
        tasks = [task for task in env.unwrapped.tasks if ("goals" in task.data) == lists]
        solved = sum(play_episode(env, TitleOverlap(), seed=0, options={"task_id": task.id}).success
                     for task in tasks)
        assert f"{solved} of the {len(tasks)} {words}" in readme


def test_error_injection_works_on_the_test_split_with_every_kind():
    from budgetgym.core import rollout
    from budgetgym.wrappers import ErrorInjection

    env = gym.make("budgetgym/Web-v0", split="test")
    test_ids = set(env.unwrapped.tasks.ids)
    kinds = {state["kind"] for state in env.unwrapped.failure_states() if state["task_id"] in test_ids}
    assert kinds == set(env.unwrapped.failure_kinds)
    injected = ErrorInjection(env)
    observation, info = injected.reset(seed=0)
    assert info["task_id"] in test_ids and info["injected_error"]["kind"] in kinds
    assert rollout(injected, "oracle", start=(observation, info)).success
