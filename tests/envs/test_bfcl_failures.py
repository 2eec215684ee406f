"""budgetgym/BFCL-v0's failure states and its oracle's plans from the current state, on the real
bfcl-eval (skipped without it): the shipped states cover every split with every kind, each restores,
and the oracle recovers from each; from a wrong folder it goes back first, and from a mistake that
changed a service it undoes the change first, where replaying the ground truth fails."""

from __future__ import annotations

import collections

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_failure_states, rollout
from budgetgym.wrappers import ErrorInjection

pytest.importorskip("bfcl_eval", reason="bfcl_eval is not importable; install it with `pip install --no-deps bfcl-eval mpmath`")

ENV_ID = "budgetgym/BFCL-v0"
FAILURES = load_failure_states("bfcl")


def test_the_shipped_failure_states_cover_every_split_with_every_kind():
    env = gym.make(ENV_ID)
    splits = {task.id: task.split for task in env.unwrapped.tasks}
    counts = collections.Counter((splits[state["task_id"]], state["kind"]) for state in FAILURES)
    assert len(FAILURES) >= 300
    assert set(env.unwrapped.state_changing_kinds) == {"wrong_argument", "destructive_call"}
    for split in ("base", "miss_func", "miss_param", "long_context"):
        for kind in env.unwrapped.failure_kinds:
            least = 20 if kind in env.unwrapped.state_changing_kinds else 10
            assert counts[(split, kind)] >= least, (split, kind, counts)


def test_every_failure_state_restores_and_the_oracle_recovers():
    env = gym.make(ENV_ID)
    for state in FAILURES:
        observation, info = env.reset(options={"snapshot": state["snapshot"]})
        assert observation == state["snapshot"]["transcript"][-1][1]
        played = rollout(env, "oracle", start=(observation, info))
        assert played.success, state["id"]


def test_from_a_wrong_folder_the_oracle_goes_back_where_the_ground_truth_fails():
    env = gym.make(ENV_ID)
    base = env.unwrapped
    repaired = failed_without = 0
    for state in (s for s in FAILURES if s["kind"] == "wrong_directory"):
        env.reset(options={"snapshot": state["snapshot"]})
        action = base.structured_oracle()
        assert action.calls and all(call.name == "cd" for call in action.calls), state["id"]
        repaired += 1
        # The same state, with the ground truth replayed as it is (no plan from the state).
        observation, info = env.reset(options={"snapshot": state["snapshot"]})
        plain = rollout(env, lambda o, i, e: base._render_oracle(base.ground_truth_step()), start=(observation, info))
        failed_without += not plain.success
    assert repaired >= 20 and failed_without >= 5


def test_after_a_mistake_that_changed_a_service_the_oracle_undoes_it_where_the_ground_truth_fails():
    env = gym.make(ENV_ID)
    base = env.unwrapped
    states = [s for s in FAILURES if s["kind"] in base.state_changing_kinds]
    services = collections.Counter()
    failed_without = 0
    for state in states:
        env.reset(options={"snapshot": state["snapshot"]})
        action = base.structured_oracle()
        assert action.calls and action != base.ground_truth_step(), state["id"]
        services.update({call.name for call in action.calls} - {"cd"})
        observation, info = env.reset(options={"snapshot": state["snapshot"]})
        plain = rollout(env, lambda o, i, e: base._render_oracle(base.ground_truth_step()), start=(observation, info))
        failed_without += not plain.success
    assert len(states) >= 190 and failed_without == len(states), (len(states), failed_without)
    # The repairs restore files and folders, a watchlist, the followed users and the car's locks.
    assert {"touch", "rm", "add_to_watchlist", "remove_stock_from_watchlist", "follow_user", "lockDoors"} <= set(services), services


def test_error_injection_starts_from_a_failure_state_on_every_split():
    for split in ("base", "long_context"):
        env = ErrorInjection(gym.make(ENV_ID, split=split))
        observation, info = env.reset(seed=0)
        assert info["injected_error"]["kind"] in env.unwrapped.failure_kinds
        assert rollout(env, "oracle", start=(observation, info)).success
