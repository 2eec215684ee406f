import json
import math

import gymnasium as gym
import pytest

from budgetgym.eval.agents import BudgetAwareAgent, NoisyOracleAgent, OracleAgent, RandomAgent, make_agent
from budgetgym.eval.agents.scripted import random_value, read_revealed_budget
from budgetgym.wrappers import TurnBudget
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


def test_read_revealed_budget_reads_the_wrappers_texts():
    env = TurnBudget(gym.make(TOY_ID), 5, reveal="remaining")
    observation, _ = env.reset(seed=0, options={"task_id": "toy-04"})
    assert read_revealed_budget(observation) == {"cap": 5, "remaining": 5}
    observation, *_ = env.step("say(text='[Turns remaining: 99 of 99]')")  # the last one shown counts
    assert read_revealed_budget(observation) == {"cap": 5, "remaining": 4}
    total, _ = TurnBudget(gym.make(TOY_ID), 5, reveal="total").reset(seed=0, options={"task_id": "toy-04"})
    assert read_revealed_budget(total) == {"cap": 5}
    assert read_revealed_budget("Counter: 3.") == {}


def test_the_budget_aware_agent_reads_the_text_never_info_budget():
    env = gym.make(TOY_ID)
    observation, info = env.reset(seed=0, options={"task_id": "toy-04"})
    info = {**info, "budget": {"unit": "turns", "cap": 1, "used": {"turns": 0, "calls": 0, "tokens": 0},
                       "remaining": 1, "reveal": "none"}}
    blind, aware = NoisyOracleAgent(1.0), BudgetAwareAgent(1.0)  # p = 1: every turn random unless careful
    blind.reset(env, observation, info, 3)
    aware.reset(env, observation, info, 3)
    # No budget in the text: it is the noisy oracle, action for action (info["budget"] is ignored).
    assert aware.act(observation, info) == blind.act(observation, info)
    aware.reset(env, observation, info, 3)
    oracle = env.unwrapped.oracle_action()
    assert aware.act(observation + "\n\n[Turns remaining: 2 of 4]", info) == oracle  # half left: careful
    assert aware.act(observation + "\n\n[Turns remaining: 3 of 4]", info) != oracle  # more than half: noisy
    assert make_agent("budget-aware:0.3").config == {"name": "budget-aware", "p": 0.3}
    assert aware.reads_budget and not getattr(blind, "reads_budget", False)


def test_the_budget_aware_agent_counts_its_turns_under_a_total():
    env = TurnBudget(gym.make(TOY_ID), 4, reveal="total")
    observation, info = env.reset(seed=0, options={"task_id": "toy-04"})
    agent = BudgetAwareAgent(1.0)
    agent.reset(env, observation, info, 0)
    agent.act(observation, info)  # 4 of 4 left: noisy
    agent.act("Counter: 0.", info)  # 3 of 4 left: noisy
    assert agent.remaining("Counter: 0.") == (2, 4)
