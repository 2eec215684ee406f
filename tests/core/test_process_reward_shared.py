"""reward_mode="oracle_distance"'s cheap paths give the values of the uncached measure.

Three shortcuts of ``budgetgym.core.process_reward``: the potentials a family shares across the envs
and seeds of a process (Navigation), the start measured at the first step (one turn less of rollout
after the oracle's own action) and Navigation's shadow with a Z-machine per game. Each is checked
against a fresh measure (an ``OracleDistance`` with nothing cached: one oracle rollout from the
state) on random states, and the rewards still telescope: a cycle nets 0.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import process_reward
from budgetgym.core.process_reward import OracleDistance, forget_shared_potentials

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_process_reward import LineEnv, move  # noqa: E402

pytest.importorskip("textworld")

NAV = "budgetgym/Navigation-v0"


def uncached_turns(env) -> int:
    """The oracle's turns from ``env``'s state, measured afresh (a new shadow, an empty cache)."""
    fresh = OracleDistance()
    try:
        return fresh.turns(env)
    finally:
        fresh.close()


def random_walk(env, rng: random.Random, steps: int, **start) -> list[tuple[float, int]]:
    """A random walk of admissible commands (and the oracle's, one in three); per step, its reward
    and the cached turns of the state it reached, checked against the uncached measure there."""
    _, info = env.reset(**start)
    base = env.unwrapped
    seen = []
    for _ in range(steps):
        oracle = base.oracle_action()
        action = oracle if oracle is not None and rng.random() < 1 / 3 else rng.choice(info["admissible_actions"])
        _, reward, terminated, truncated, info = env.step(action)
        turns = base._distance.turns(base)
        assert turns == uncached_turns(base), (start, action)
        seen.append((reward, turns))
        if terminated or truncated:
            break
    return seen


def test_navigation_cached_turns_equal_uncached_ones_on_random_states_and_rewards_telescope():
    forget_shared_potentials()
    env = gym.make(NAV, reward_mode="oracle_distance")
    base = env.unwrapped
    rng = random.Random(7)
    for seed, task_id in enumerate(["nav-easy-000", "nav-medium-000", "nav-easy-000"]):
        walk = random_walk(env, rng, 8, seed=seed, options={"task_id": task_id})
        unit = base.task.oracle_turns
        # Phi(start) = -1, so the rewards sum to 1 - turns(end) / turns(start), and turns(start) is the task's.
        assert sum(r for r, _ in walk) == pytest.approx(1.0 - walk[-1][1] / unit, abs=1e-9), (task_id, walk)
    env.close()


def test_a_later_episode_of_a_navigation_task_finds_its_path_measured_with_any_seed_in_any_env():
    forget_shared_potentials()
    first, second = (gym.make(NAV, reward_mode="oracle_distance") for _ in range(2))
    task = {"task_id": "nav-easy-001"}
    first.reset(seed=0, options=task)
    solution = []
    while (action := first.unwrapped.oracle_action()) is not None:
        solution.append(action)
        first.step(action)
    assert first.unwrapped._distance.misses == 1  # the state after the first step: one rollout
    second.reset(seed=99, options=task)
    rewards = [second.step(action)[1] for action in solution]
    distance = second.unwrapped._distance
    assert distance.misses == 0 and distance.hits == len(solution)  # the start and each unsolved state
    assert rewards == pytest.approx([1 / len(solution)] * len(solution)) and sum(rewards) == pytest.approx(1.0)
    # A cycle from a shared state nets nothing: go somewhere and back, with every value from the cache.
    second.reset(seed=5, options=task)
    commands = second.unwrapped.admissible_actions()
    out = next(c for c in commands if c.startswith("go "))
    back = {"north": "south", "south": "north", "east": "west", "west": "east"}[out.split()[1]]
    assert sum(second.step(a)[1] for a in [out, "go " + back] * 3) == pytest.approx(0.0, abs=1e-12)
    forget_shared_potentials()  # forgotten: the same episode measures again, to the same rewards
    misses = distance.misses
    second.reset(seed=1, options=task)
    assert [second.step(action)[1] for action in solution] == rewards and distance.misses == misses + 1
    first.close()
    second.close()


def test_the_shared_potentials_stay_within_their_bound(monkeypatch):
    forget_shared_potentials()
    monkeypatch.setattr(process_reward, "MAX_SHARED_STATES", 4)
    env = gym.make(NAV, reward_mode="oracle_distance")
    for number, task_id in enumerate(["nav-easy-000", "nav-easy-001", "nav-easy-002"]):
        env.reset(seed=number, options={"task_id": task_id})
        env.step(env.unwrapped.oracle_action())
    env.reset(seed=0, options={"task_id": "nav-easy-000"})  # a start prunes what is over the bound
    assert sum(len(p.turns) for p in process_reward._SHARED.values()) <= 4
    env.close()
    forget_shared_potentials()


@pytest.mark.parametrize("first", ["oracle", "other", "invalid then oracle"])
def test_a_start_measured_at_the_first_step_has_its_uncached_value(first):
    """The oracle's own first action gives turns(start) as 1 + turns(after); any other is measured
    on the shadow; an invalid action before it changes nothing. Either way the value is the fresh one."""
    env = LineEnv(reward_mode="oracle_distance")
    env.reset(seed=0, options={"task_id": "line-4"})
    start_key = process_reward.state_digest(env)
    expected = uncached_turns(env)
    assert env._distance.potential == -1.0
    actions = {"oracle": [move("right")], "other": [move("left")],
               "invalid then oracle": ["no such action", move("right")]}[first]
    rewards = [env.step(action)[1] for action in actions]
    assert env._distance._potentials.turns[start_key] == expected == 4
    assert rewards[-1] == pytest.approx((expected - uncached_turns(env)) / expected)


def test_navigation_shadow_keeps_a_machine_per_game_within_its_bound(monkeypatch):
    from budgetgym.envs.navigation import env as navigation_env

    forget_shared_potentials()
    monkeypatch.setattr(navigation_env, "SHADOW_MACHINES", 2)
    env = gym.make(NAV, reward_mode="oracle_distance")
    base = env.unwrapped
    for number, task_id in enumerate(["nav-easy-000", "nav-medium-000", "nav-easy-002", "nav-medium-000"]):
        env.reset(seed=number, options={"task_id": task_id})
        action = base.oracle_action()
        reward = env.step(action)[1]
        assert reward == pytest.approx(1 / base.task.oracle_turns), task_id
        shadow = base._distance._shadow
        assert len(shadow._machines) <= 2 and shadow._frotz is None
        assert set(shadow._machines) >= {base.task["game"]}
    env.close()
    forget_shared_potentials()
