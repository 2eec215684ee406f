"""Budgets in units of a task's shortest solution (``"1x"``, ``"1.5x"``): TurnBudget, BudgetMix,
parsing, and the one place that turns a budget into a cap."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import budgetgym
from budgetgym.core.budgets import check_budget, parse_budget, resolve_cap
from budgetgym.wrappers import BudgetMix, TurnBudget, oracle_turns_of
from registered import TOY_ID
from toy_env import CounterEnv


@pytest.mark.parametrize("text,value", [("1x", "1x"), ("1.5x", "1.5x"), ("2.0X", "2x"), (" 1.25x ", "1.25x"),
                                        ("8", 8), ("0.5", 0.5), ("1.0", 1.0), (".5x", "0.5x")])
def test_parse_budget(text, value):
    parsed = parse_budget(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("text", ["0x", "-1x", "x", "1.5xx", "1,5x", "abc", "1.5", "nanx"])
def test_bad_budgets_are_refused_with_every_form_named(text):
    with pytest.raises(ValueError, match=r"int >= 1.*float in \(0, 1\].*1.5x|write 1.5x"):
        parse_budget(text)


def test_cap_for_multiples():
    assert resolve_cap("1x", 12, 5) == 5
    assert resolve_cap("1.5x", 12, 5) == 8  # ceil(7.5)
    assert resolve_cap("1.2x", 30, 10) == 12  # no float drift past the integer
    assert resolve_cap("3x", 12, 5) == 12  # never above the full budget
    assert resolve_cap("0.1x", 12, 5) == 1  # at least one turn
    with pytest.raises(ValueError, match="shortest solution in turns is not known"):
        resolve_cap("1x", 12, None)
    check_budget("1.5x")
    with pytest.raises(ValueError):
        check_budget("1.5")


def test_turn_budget_in_solution_lengths_on_the_toy():
    base = CounterEnv()
    for task in base.tasks:
        env = TurnBudget(CounterEnv(), "1x", reveal="remaining")
        observation, info = env.reset(seed=0, options={"task_id": task.id})
        oracle_turns = math.ceil(task["target"] / 3)
        assert oracle_turns_of(env, info) == task["oracle_turns"] == oracle_turns
        assert info["budget"]["cap"] == oracle_turns
        assert observation.endswith(f"[Turns remaining: {oracle_turns} of {oracle_turns}]")
        # The oracle has no turn to spare at 1x and still solves.
        terminated = truncated = False
        while not (terminated or truncated):
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert terminated and reward == 1.0


def test_info_oracle_turns_wins_over_the_record():
    class Reports(CounterEnv):
        def _info(self, *, at_reset):  # as the core kit will: info["oracle_turns"]
            return {**super()._info(at_reset=at_reset), "oracle_turns": 3}

    env = TurnBudget(Reports(), "2x")
    _, info = env.reset(seed=0, options={"task_id": "toy-00"})
    assert info["budget"]["cap"] == min(6, info["full_budget"])


def test_budget_mix_draws_multiples_and_shares():
    env = BudgetMix(CounterEnv(), budgets=("1x", "2x", 1.0), reveal="none")
    seen = set()
    for seed in range(60):
        _, info = env.reset(seed=seed, options={"task_id": "toy-04"})  # target 6: 2 turns, full budget 8
        seen.add((info["budget"]["drawn"], info["budget"]["cap"]))
    assert seen == {("1x", 2), ("2x", 4), (1.0, 8)}
    with pytest.raises(ValueError, match="1.5x"):
        BudgetMix(CounterEnv(), budgets=("1.5",))


def test_make_and_the_function_calling_env_read_oracle_turns():
    env = budgetgym.make("budgetgym/FunctionCalling-v0", budget="1x", reveal="total")
    observation, info = env.reset(seed=0)
    assert info["budget"]["cap"] == env.unwrapped.task["oracle_turns"] < info["full_budget"]
    assert f"you have {info['budget']['cap']} turns in total" in observation
    assert gym.make(TOY_ID) is not None


@pytest.mark.parametrize("env_id", ["budgetgym/Navigation-v0", "budgetgym/Web-v0"])
@pytest.mark.parametrize("unit", ["calls", "tokens"])
def test_the_oracle_solves_at_1x_in_calls_and_tokens_spending_its_cap_exactly(env_id, unit):
    """``"1x"`` in calls or tokens is the oracle's own solution of the episode's task and seed: it
    was measured on whatever task a second reset (with no seed or task) drew, so caps missed."""
    env = TurnBudget(gym.make(env_id), "1x", unit=unit)
    for task in list(env.unwrapped.all_tasks)[:40:8]:
        _, info = env.reset(seed=7, options={"task_id": task.id})
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert info["success"] and info["budget"]["used"][unit] == info["budget"]["cap"], (task.id, info["budget"])
    env.close()


def test_a_call_cap_of_1x_leaves_the_oracles_final_message_to_run():
    """FunctionCalling's oracle ends with an answer, a message that runs no call: a step that reached
    the call cap truncated the episode before it, so "1x" in calls was no solution at all (the oracle
    failed every task). Now the message runs; a call past the cap is refused and truncates."""
    from budgetgym.testing import assert_solves

    assert_solves("oracle", "budgetgym/FunctionCalling-v0", tasks=4, calls="1x")
    env = TurnBudget(gym.make("budgetgym/FunctionCalling-v0"), "1x", unit="calls")
    _, info = env.reset(seed=0)
    while info["budget"]["used"]["calls"] < info["budget"]["cap"]:
        _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert not (terminated or truncated)  # the cap reached is no truncation: the answer is still to come
    turns = info["budget"]["used"]["turns"]
    observation, _, terminated, truncated, info = env.step('{"name": "list_directory", "arguments": {"path": "/"}}')
    assert (terminated, truncated) == (False, True) and observation.startswith("Out of tool calls")
    assert info["budget"]["used"]["turns"] == turns and env.unwrapped.calls == info["budget"]["cap"]  # not run
