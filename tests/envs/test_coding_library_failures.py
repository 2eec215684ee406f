"""The library task set's own failure states: built by the coding assets command, on both splits, and
what ErrorInjection and the oracle see when one is restored."""

from __future__ import annotations

import collections

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import rollout
from budgetgym.core.tasks import load_failure_states
from budgetgym.envs.coding import mistakes
from budgetgym.envs.coding.assets import LIBRARY_PER_KIND
from budgetgym.envs.coding.env import LIBRARY_STATES
from budgetgym.envs.coding.libraries import library_tasks
from budgetgym.wrappers import ErrorInjection

from tests.coding_support import require

STATES = load_failure_states(LIBRARY_STATES)


def test_every_kind_on_both_splits_in_every_library_and_every_state_on_a_current_task():
    tasks = library_tasks()
    kinds = collections.Counter((tasks.get(s["task_id"]).split, s["kind"]) for s in STATES)
    fitting = [kind for kind in mistakes.KINDS if kind != "breaks_pass_to_pass" or any(t.data.get("breaker") for t in tasks)]
    assert len(fitting) >= 5
    assert all(kinds[split, kind] >= LIBRARY_PER_KIND for split in ("train", "test") for kind in fitting), kinds
    assert len({s["id"] for s in STATES}) == len(STATES)
    libraries = {tasks.get(s["task_id"]).data["library"] for s in STATES}
    test_only = {t.data["library"] for t in tasks} - {t.data["library"] for t in tasks if t.split == "train"}
    assert len(libraries) >= 6 and test_only <= libraries, libraries  # the test-only libraries among them
    assert {tasks.get(s["task_id"]).data.get("tests", "visible") for s in STATES} == {"visible", "withheld"}
    # a state records the task it was built on: a rebuilt task set must rebuild its states
    stale = [s["id"] for s in STATES if s["snapshot"]["task_fingerprint"] != tasks.get(s["task_id"]).fingerprint]
    assert not stale, f"{len(stale)} states were built on other task versions: " \
                      f"python -m budgetgym.envs.coding.assets --libraries"


def test_the_quick_tier_and_the_library_set_each_inject_only_their_own_states():
    quick = gym.make("budgetgym/Coding-v0")
    libraries = gym.make("budgetgym/Coding-v0", task_set="libraries")
    try:
        assert {s["id"] for s in quick.unwrapped.failure_states()}.isdisjoint(s["id"] for s in STATES)
        assert libraries.unwrapped.failure_states() == STATES
    finally:
        quick.close()
        libraries.close()


@pytest.mark.parametrize("mode", ["visible", "withheld"])
def test_error_injection_restores_a_library_state_on_the_test_split_and_the_oracle_recovers(mode):
    require("local")
    env = gym.make("budgetgym/Coding-v0", task_set="libraries", split="test", tests=mode)
    try:
        candidates = [s for s in env.unwrapped.failure_states() if s["task_id"] in env.unwrapped.tasks.ids]
        assert candidates, f"no state on a {mode} test task"
        state = min(candidates, key=lambda s: (s["error_step"], s["id"]))  # the shortest to replay
        injected = ErrorInjection(env, states=[state])
        observation, info = injected.reset(seed=0)
        assert info["task_id"] == state["task_id"] and info["injected_error"]["kind"] == state["kind"]
        assert info["success"] is False
        result = rollout(injected, "oracle", start=(observation, info))
        assert result.success
    finally:
        env.close()
