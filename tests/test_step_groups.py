"""Step-level groups (budgetgym.train.step_groups): the steps K episodes took from the same state,
and their advantages within each group."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import rollout
from budgetgym.train.step_groups import (StepRecord, episode_steps, group_steps, returns_to_go, step_advantages,
                                         steps_from_records)
from test_process_reward import LineEnv, move


def step(episode, index, state, reward=0.0):
    return StepRecord(episode, index, state, f"a{index}", reward)


def test_advantages_compare_the_steps_taken_from_one_state():
    """Two episodes share the start; from it one went on to win sooner. Alone in its group, a step gets 0."""
    episodes = [[step(0, 0, "s0"), step(0, 1, "s1", 1.0)],
                [step(1, 0, "s0"), step(1, 1, "s2"), step(1, 2, "s3", 1.0)]]
    assert returns_to_go(episodes[1], gamma=0.5) == [0.25, 0.5, 1.0]
    advantages = step_advantages(episodes, gamma=0.5)
    assert advantages[0][0] == pytest.approx(1.0, abs=1e-5) and advantages[1][0] == pytest.approx(-1.0, abs=1e-5)
    assert advantages[0][1] == advantages[1][1] == advantages[1][2] == 0.0
    means = step_advantages(episodes, gamma=0.5, normalise="mean")
    assert means[0][0] == pytest.approx(0.5 - 0.375) and means[1][0] == pytest.approx(0.25 - 0.375)
    assert list(group_steps(episodes)) == ["s0", "s1", "s2", "s3"]
    with pytest.raises(ValueError, match="normalise"):
        step_advantages(episodes, normalise="max")
    with pytest.raises(ValueError, match="gamma"):
        step_advantages(episodes, gamma=1.5)


def test_replayed_episodes_meet_in_the_states_they_share():
    """On the line world: right-right-... and right-left-right-... share the start and the state at 1."""
    env = LineEnv()
    straight = [move("right")] * 4
    detour = [move("right"), move("left"), move("right"), move("right"), move("right"), move("right")]
    records = [{"task": "line-4", "seed": 0, "actions": straight}, {"task": "line-4", "seed": 0, "actions": detour}]
    episodes = steps_from_records(env, records)
    assert [len(e) for e in episodes] == [4, 6]
    groups = group_steps(episodes)
    shared = {state: [(s.episode, s.index) for s in group] for state, group in groups.items() if len(group) > 1}
    # x=0: both first steps and the detour's third; x=1: the second steps and the detour's fourth; x=2, x=3
    assert sorted(shared.values()) == [[(0, 0), (1, 0), (1, 2)], [(0, 1), (1, 1), (1, 3)], [(0, 2), (1, 4)],
                                       [(0, 3), (1, 5)]]
    advantages = step_advantages(episodes)
    at_one = {(s.episode, s.index): advantages[s.episode][s.index] for s in groups[episodes[0][1].state]}
    assert at_one[(0, 1)] > 0 > at_one[(1, 1)]  # from x=1, going on beat stepping back


def test_a_replay_that_does_not_fit_the_env_is_refused():
    env = LineEnv()
    with pytest.raises(ValueError, match="ended after 4 of its 5 actions"):
        episode_steps(env, "line-4", 0, [move("right")] * 5)
    with pytest.raises(ValueError, match="lacks seed"):
        steps_from_records(env, [{"task": "line-4", "actions": []}])


def test_function_calling_groups_keep_user_turns_apart():
    """Oracle episodes of one task with wasted turns here and there: every shared state's steps come
    from the same decision point, and the default key separates states state_key() would merge."""
    env = gym.make("budgetgym/FunctionCalling-v0")
    base = env.unwrapped
    wasted = json.dumps({"name": "no_such_tool", "arguments": {}})
    records = []
    for k in range(3):
        actions = []

        def policy(observation, info, env, k=k, actions=actions):
            action = wasted if len(actions) % 3 == k else base.oracle_action()
            actions.append(action)
            return action

        rollout(env, policy, seed=0, options={"task_index": 2})
        records.append({"task": base.task.id, "seed": 0, "actions": actions})
    episodes = steps_from_records(env, records)
    groups = group_steps(episodes)
    assert any(len({s.episode for s in group}) == 3 for group in groups.values())
    coarse = group_steps(steps_from_records(env, records, key=lambda e: e.state_key()))
    assert len(coarse) < len(groups)
    env.close()
