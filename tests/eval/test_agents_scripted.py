import json
import math

import gymnasium as gym
import pytest

from budgetgym.eval.agents import NoisyOracleAgent, OracleAgent, RandomAgent, make_agent
from budgetgym.eval.agents.scripted import random_value
from budgetgym.eval.episodes import play_episode
from eval_support import TOY_ID


def test_oracle_solves_every_toy_task_in_the_fewest_turns():
    env = gym.make(TOY_ID)
    for task in env.unwrapped.tasks:
        result = play_episode(env, OracleAgent(), seed=1, options={"task_id": task.id})
        assert result.success and result.reward == 1.0
        assert result.turns == math.ceil(task["target"] / 3)


def test_random_tool_calls_follow_the_schemas():
    env = gym.make(TOY_ID)
    agent = RandomAgent()
    observation, info = env.reset(seed=0, options={"task_id": "toy-04"})
    agent.reset(env, observation, info, seed=5)
    names = set()
    for _ in range(200):
        call = json.loads(agent.act(observation, info))
        tool = env.unwrapped.tools[call["name"]]
        assert tool.validation_error(call["arguments"]) is None, call
        names.add(call["name"])
    assert names == {"add", "say"}


def test_random_value_covers_schema_types():
    import numpy as np

    rng = np.random.default_rng(0)
    schema = {"type": "object", "required": ["a", "b", "c", "d"], "properties": {
        "a": {"enum": ["x", "y"]}, "b": {"type": "number", "minimum": 2, "maximum": 3},
        "c": {"type": "array", "items": {"type": "boolean"}}, "d": {"type": "integer", "minimum": -2, "maximum": -1}}}
    for _ in range(50):
        value = random_value(schema, rng)
        assert value["a"] in ("x", "y") and 2 <= value["b"] <= 3 and -2 <= value["d"] <= -1
        assert all(isinstance(v, bool) for v in value["c"])


def test_random_agent_prefers_admissible_actions():
    agent = RandomAgent()
    agent.reset(gym.make(TOY_ID), "", {}, seed=3)
    picks = {agent.act("", {"admissible_actions": ["go north", "go south"]}) for _ in range(50)}
    assert picks == {"go north", "go south"}


def test_noisy_oracle_makes_the_stated_share_of_mistakes():
    env = gym.make(TOY_ID)
    observation, info = env.reset(seed=0, options={"task_id": "toy-04"})  # oracle: "add(3)"
    for p in (0.0, 0.3, 1.0):
        agent = NoisyOracleAgent(p)
        agent.reset(env, observation, info, seed=11)
        # Random actions are JSON tool calls, never the oracle's "add(3)": every other action is a mistake.
        mistakes = sum(agent.act(observation, info) != "add(3)" for _ in range(4000)) / 4000
        assert mistakes == pytest.approx(p, abs=0.03)
    assert NoisyOracleAgent(0.3).name == "noisy-oracle(p=0.3)"


def test_scripted_episodes_are_functions_of_their_seed():
    env = gym.make(TOY_ID)
    runs = {seed: [play_episode(env, NoisyOracleAgent(0.6), seed=seed, options={"task_id": "toy-04"}).actions
                   for _ in range(2)] for seed in range(6)}
    assert all(first == second for first, second in runs.values())
    assert len({tuple(first) for first, _ in runs.values()}) > 1


def test_make_agent():
    assert make_agent("oracle").name == "oracle"
    assert make_agent("random").name == "random"
    assert make_agent("noisy-oracle").name == "noisy-oracle(p=0.25)"
    assert make_agent("noisy-oracle:0.1").p == 0.1
    assert make_agent("openai:qwen", base_url="http://127.0.0.1:1/v1").model == "qwen"
    for bad in ("nope", "noisy-oracle:2", "noisy-oracle:x", "openai:", "oracle:1"):
        with pytest.raises(ValueError):
            make_agent(bad)
