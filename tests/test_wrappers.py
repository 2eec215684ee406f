"""TurnBudget, BudgetMix and ErrorInjection on the toy env: exact, hand-checkable behaviour."""

from __future__ import annotations

import json
import math
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import budgetgym
from budgetgym.core.budgets import resolve_cap
from budgetgym.wrappers import BudgetMix, ErrorInjection, TurnBudget
from registered import TOY_ID
from toy_env import CounterEnv

WAIT = "say(text='thinking')"  # a valid action that never ends the toy task; 9 default tokens


def share_cap(budget, full):
    return resolve_cap(budget, full, None)


def used(turns, calls, tokens):
    return {"turns": turns, "calls": calls, "tokens": tokens}


def steps_until_end(env, action=WAIT, limit=100):
    for turn in range(1, limit + 1):
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return turn, obs, terminated, truncated, info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_int_cap_truncates_exactly(cap):
    env = TurnBudget(CounterEnv(), cap)
    env.reset(seed=0, options={"task_id": "toy-08"})  # full budget 7
    turn, _, terminated, truncated, info = steps_until_end(env)
    assert (turn, terminated, truncated) == (cap, False, True)
    assert info["budget"] == {"unit": "turns", "cap": cap, "used": used(cap, cap, 9 * cap), "remaining": 0,
                              "reveal": "none"}


def test_int_cap_above_full_budget_is_the_full_budget():
    env = TurnBudget(CounterEnv(), 100)
    _, info = env.reset(seed=0, options={"task_id": "toy-01"})
    assert info["budget"]["cap"] == info["full_budget"] == 5
    assert steps_until_end(env)[0] == 5


@pytest.mark.parametrize("fraction,full,expected", [(0.25, 8, 2), (0.5, 5, 3), (1.0, 7, 7), (0.01, 4, 1), (0.1, 30, 3)])
def test_fractional_cap_rounds_up_and_is_at_least_one(fraction, full, expected):
    assert share_cap(fraction, full) == expected


@given(fraction=st.floats(min_value=1e-6, max_value=1.0), full=st.integers(1, 500))
def test_fractional_cap_property(fraction, full):
    cap = share_cap(fraction, full)
    assert 1 <= cap <= full
    assert cap >= fraction * full - 1e-6 and (cap == 1 or cap - 1 < fraction * full + 1e-6)


def test_a_solved_last_turn_is_terminated_not_truncated():
    env = TurnBudget(CounterEnv(), 1)
    env.reset(seed=0, options={"task_id": "toy-00"})  # target 2: add(2) solves in one turn
    _, reward, terminated, truncated, info = env.step("add(n=2)")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["budget"]["remaining"] == 0


def test_reveal_modes_text_and_info():
    obs0, _ = TurnBudget(CounterEnv(), 3, reveal="none").reset(seed=0, options={"task_id": "toy-08"})
    bare, _ = CounterEnv().reset(seed=0, options={"task_id": "toy-08"})
    assert obs0 == bare

    total = TurnBudget(CounterEnv(), 3, reveal="total")
    obs, info = total.reset(seed=0, options={"task_id": "toy-08"})
    assert obs == bare + "\n\n[Turn budget: you have 3 turns in total.]"
    assert total.step(WAIT)[0] == "You said 'thinking'."
    assert info["budget"]["reveal"] == "total"

    remaining = TurnBudget(CounterEnv(), 3, reveal="remaining")
    obs, _ = remaining.reset(seed=0, options={"task_id": "toy-08"})
    assert obs.endswith("[Turns remaining: 3 of 3]")
    assert remaining.step(WAIT)[0] == "You said 'thinking'.\n\n[Turns remaining: 2 of 3]"

    custom = TurnBudget(CounterEnv(), 0.5, reveal="remaining", template=" ({used} used, {remaining} left)")
    custom.reset(seed=0, options={"task_id": "toy-08"})
    assert custom.step(WAIT)[0].endswith(" (1 used, 3 left)")


@pytest.mark.parametrize("kwargs,match", [
    ({"budget": 0}, "int must be >= 1"), ({"budget": -3}, ">= 1"), ({"budget": 1.5}, r"\(0, 1\]"),
    ({"budget": 0.0}, r"\(0, 1\]"), ({"budget": True}, "int >= 1"), ({"budget": "five"}, "int >= 1"),
    ({"budget": 3, "reveal": "some"}, "reveal must be"), ({"budget": 3, "template": "{bogus}"}, "template"),
    ({"budget": 3, "template": "{max_turns}"}, "template"), ({"budget": 0.5, "unit": "calls"}, "turns only"),
    ({"budget": 3, "unit": "words"}, "unit"), ({"budget": 3, "template": "x" * 200}, "fit"),
    # A field's attributes and items reach Python's internals (an address, a class): only the bare names.
    ({"budget": 3, "template": "{remaining.__class__}"}, "template"),
    ({"budget": 3, "template": "{remaining.__class__.__init__.__globals__}"}, "template"),
    ({"budget": 3, "template": "{remaining[0]}"}, "template"), ({"budget": 3, "template": "{0}"}, "template"),
    ({"budget": 3, "template": " \x00{remaining}"}, "control"), ({"budget": 3, "template": "\x1b[2J{cap}"}, "control"),
    ({"budget": 3, "count_restored": "no"}, "count_restored"), ({"budget": 3, "count_restored": None}, "count_restored"),
])
def test_invalid_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TurnBudget(CounterEnv(), **kwargs)


def test_nested_budgets_tightest_wins():
    for inner, outer in [(2, 5), (5, 2), (0.25, 3)]:
        env = TurnBudget(TurnBudget(CounterEnv(), inner), outer)
        _, info = env.reset(seed=0, options={"task_id": "toy-18"})  # full budget 7
        expected = min(share_cap(inner, 7), share_cap(outer, 7))
        assert info["budget"]["cap"] == expected
        assert steps_until_end(env)[0] == expected


def test_count_restored_counts_the_prefix_or_not():
    base = CounterEnv()
    base.reset(seed=0, options={"task_id": "toy-18"})
    base.step(WAIT)
    base.step(WAIT)
    snap = base.snapshot()
    counted = TurnBudget(CounterEnv(), 3)
    _, info = counted.reset(options={"snapshot": snap})
    assert info["budget"]["used"]["turns"] == 2 and steps_until_end(counted)[0] == 1
    fresh = TurnBudget(CounterEnv(), 3, count_restored=False)
    _, info = fresh.reset(options={"snapshot": snap})
    assert info["budget"]["used"]["turns"] == 0 and steps_until_end(fresh)[0] == 3
    spent = TurnBudget(CounterEnv(), 2)
    _, info = spent.reset(options={"snapshot": snap})
    assert info["budget"]["remaining"] == 0
    _, _, terminated, truncated, info = spent.step(WAIT)
    assert truncated and not terminated and info["action_valid"] is False
    assert spent.unwrapped.turn == 2  # the env was not stepped


def test_budget_mix_distribution_matches_weights():
    env = BudgetMix(CounterEnv(), budgets=(0.25, 0.5, 1.0), weights=(1, 2, 5))
    env.reset(seed=123)
    n = 8000
    counts = Counter(env.reset()[1]["budget"]["drawn"] for _ in range(n))
    for fraction, p in zip((0.25, 0.5, 1.0), (1 / 8, 2 / 8, 5 / 8)):
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(counts[fraction] / n - p) < 5 * sigma, (fraction, counts)


def test_budget_mix_cap_is_the_drawn_share_and_reproducible():
    def draws(seed):
        env = BudgetMix(CounterEnv(), budgets=(0.25, 0.5, 0.75, 1.0))
        out = []
        for i in range(50):
            _, info = env.reset(seed=seed if i == 0 else None)
            assert info["budget"]["cap"] == share_cap(info["budget"]["drawn"], info["full_budget"])
            out.append((info["task_id"], info["budget"]["cap"], info["budget"]["drawn"]))
        return out

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert len({d[2] for d in draws(7)}) == 4


@pytest.mark.parametrize("kwargs", [{"budgets": ()}, {"budgets": (0.5, 1.2)}, {"budgets": (0.5,), "weights": (1, 2)},
                                    {"budgets": (0.5, 1.0), "weights": (-1, 2)}, {"budgets": (0.5, 1.0), "weights": (0, 0)},
                                    {"budgets": "1x"}, {"budgets": (0.5, 1.0), "weights": "ab"},
                                    {"budgets": (0.5, 1.0), "weights": (1, "x")}, {"budgets": (0.5, 1.0), "weights": 3},
                                    {"budgets": (0.5, 1.0), "count_restored": 1}])
def test_budget_mix_invalid_arguments(kwargs):
    with pytest.raises(ValueError, match="weights must|budgets must|budget|count_restored"):
        BudgetMix(CounterEnv(), **kwargs)


def _failure_states():
    """Toy failure states made the way curated ones are: the oracle's path with a mistake in it."""
    states = []
    for task_id, kind, action in [("toy-02", "overshoot", "add(n=3)"), ("toy-03", "wasted_turn", WAIT),
                                  ("toy-07", "wasted_turn", WAIT)]:
        env = CounterEnv()
        env.reset(seed=0, options={"task_id": task_id})
        env.step(action)
        states.append({"id": f"fs-{task_id}", "task_id": task_id, "kind": kind, "description": f"did {action}",
                       "error_step": 0, "snapshot": json.loads(json.dumps(env.snapshot()))})
    return states


def test_error_injection_restores_the_exact_snapshot():
    states = _failure_states()
    env = ErrorInjection(CounterEnv(), states=states)
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        record = next(s for s in states if s["id"] == info["injected_error"]["id"])
        assert env.unwrapped.snapshot() == record["snapshot"]
        snap = record["snapshot"]
        # An agent that sees observations only gets its task (the first observation) and the prefix.
        assert obs == "\n\n".join([snap["first_observation"]] + [f"> {a}\n{o}" for a, o in snap["transcript"]])
        assert obs.startswith(snap["first_observation"]) and obs.endswith(snap["transcript"][-1][1])
        assert info["injected_error"] == {"id": record["id"], "kind": record["kind"],
                                          "description": record["description"], "step": 0}
        assert info["history"] == [{"action": None, "observation": snap["first_observation"]}] + \
            [{"action": a, "observation": o} for a, o in snap["transcript"]]
        assert info["turn"] == 1


def test_error_injection_under_a_revealed_budget_keeps_the_budget_text_last():
    from budgetgym.wrappers import TurnBudget

    states = _failure_states()
    env = TurnBudget(ErrorInjection(CounterEnv(), states=states), 6, reveal="remaining")
    obs, info = env.reset(seed=0)
    assert obs.startswith(env.unwrapped.first_observation)
    assert obs.endswith(f"[Turns remaining: {info['budget']['remaining']} of 6]")


def test_error_injection_kinds_p_and_tasks_without_states():
    states = _failure_states()
    only = ErrorInjection(CounterEnv(), kinds=["wasted_turn"], states=states)
    assert {only.reset(seed=s)[1]["injected_error"]["kind"] for s in range(10)} == {"wasted_turn"}
    with pytest.raises(ValueError, match="toy-05.*no failure state"):
        only.reset(options={"task_id": "toy-05"})
    assert only.reset(options={"task_id": "toy-03"})[1]["injected_error"]["id"] == "fs-toy-03"
    with pytest.raises(ValueError, match="unknown failure kinds"):
        ErrorInjection(CounterEnv(), kinds=["nope"], states=states)
    never = ErrorInjection(CounterEnv(), states=states, p=0.0)
    assert all("injected_error" not in never.reset(seed=s)[1] for s in range(5))
    half = ErrorInjection(CounterEnv(), states=states, p=0.5)
    half.reset(seed=0)
    injected = sum("injected_error" in half.reset()[1] for _ in range(2000))
    assert abs(injected / 2000 - 0.5) < 5 * math.sqrt(0.25 / 2000)
    with pytest.raises(ValueError, match="p must be"):
        ErrorInjection(CounterEnv(), states=states, p=1.5)


@pytest.mark.parametrize("kwargs,match", [
    ({"states": "abc"}, "states must be"), ({"states": [1]}, "states must be"), ({"states": 5}, "states must be"),
    ({"states": [{"id": "x", "task_id": "toy-02", "kind": "k", "snapshot": 3}]}, "snapshot"),
    ({"kinds": "overshoot"}, "kinds must be"), ({"kinds": 3}, "kinds must be"), ({"kinds": [None]}, "unknown failure kinds"),
    ({"tasks": 3}, "tasks must be"),
])
def test_error_injection_nonsense_arguments_give_one_clear_error(kwargs, match):
    arguments = {"states": _failure_states(), **kwargs}
    with pytest.raises(ValueError, match=match):
        ErrorInjection(CounterEnv(), **arguments)


def test_error_injection_split_and_tasks_narrow_the_failure_states():
    states = _failure_states()  # toy-02, toy-03 and toy-07: all on the train split
    train = ErrorInjection(CounterEnv(), states=states, split="train")
    assert [s["id"] for s in train.states] == ["fs-toy-02", "fs-toy-03", "fs-toy-07"]
    named = ErrorInjection(CounterEnv(), states=states, tasks=["toy-03", "toy-05"])
    assert {named.reset(seed=s)[1]["injected_error"]["id"] for s in range(6)} == {"fs-toy-03"}
    with pytest.raises(ValueError, match="toy-02.*no failure state"):
        named.reset(options={"task_id": "toy-02"})
    with pytest.raises(ValueError, match="no failure states .* of split 'test'"):
        ErrorInjection(CounterEnv(), states=states, split="test")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        ErrorInjection(CounterEnv(), states=states, split="dev")
    with pytest.raises(ValueError, match="unknown task id 'toy-99'"):
        ErrorInjection(CounterEnv(), states=states, tasks=["toy-99"])
    with pytest.raises(ValueError, match="list of task ids"):
        ErrorInjection(CounterEnv(), states=states, tasks="toy-03")


def test_error_injection_under_a_budget_counts_the_prefix():
    env = TurnBudget(ErrorInjection(CounterEnv(), states=_failure_states()), 2, reveal="remaining")
    obs, info = env.reset(seed=1)
    assert info["budget"]["used"]["turns"] == 1 and obs.endswith("[Turns remaining: 1 of 2]")
    assert steps_until_end(env)[0] == 1


def test_make_composes_the_wrappers():
    env = budgetgym.make(TOY_ID, budget=0.5, reveal="total")
    assert isinstance(env, TurnBudget) and env.reveal == "total"
    env = budgetgym.make(TOY_ID, budget_mix=(0.5, 1.0))
    assert isinstance(env, BudgetMix)
    with pytest.raises(ValueError, match="one of budget, budget_mix and schedule"):
        budgetgym.make(TOY_ID, budget=3, budget_mix=(0.5,))
    env = budgetgym.make(TOY_ID, split="test")
    assert set(t.split for t in env.unwrapped.tasks) == {"test"}


@settings(max_examples=60, deadline=None)
@given(cap=st.one_of(st.integers(1, 12), st.floats(0.01, 1.0)), reveal=st.sampled_from(["none", "total", "remaining"]),
       actions=st.lists(st.sampled_from([WAIT, "add(1)", "add(n=2)", "{bad", "hello"]), min_size=1, max_size=15),
       task=st.integers(0, 19))
def test_turn_budget_property(cap, reveal, actions, task):
    """For any cap and actions: the episode never outlives the cap, and info["budget"] adds up."""
    env = TurnBudget(CounterEnv(), cap, reveal=reveal)
    _, info = env.reset(seed=0, options={"task_id": f"toy-{task:02d}"})
    limit = share_cap(cap, info["full_budget"])
    for turns, action in enumerate(actions, 1):
        _, _, terminated, truncated, info = env.step(action)
        budget = info["budget"]
        assert budget["used"]["turns"] == turns and budget["cap"] == limit
        assert budget["remaining"] == limit - turns >= 0
        assert truncated == (turns == limit and not terminated)
        if terminated or truncated:
            break


def test_a_restored_prefix_longer_than_the_cap_leaves_nothing_and_says_so():
    """A turn-5 snapshot under TurnBudget(3): no negative remainder, and a step past the cap returns
    the env's own info (turn, task, success) with a clear message, without touching the env."""
    source = gym.make(TOY_ID)
    source.reset(seed=0, options={"task_id": "toy-04"})
    for _ in range(5):
        source.step("say(text='x')")
    env = TurnBudget(gym.make(TOY_ID), budget=3, reveal="remaining")
    observation, info = env.reset(options={"snapshot": source.unwrapped.snapshot()})
    assert info["budget"] == {"unit": "turns", "cap": 3, "used": used(5, 5, 40), "remaining": 0, "reveal": "remaining"}
    assert "[Turns remaining: 0 of 3]" in observation
    observation, reward, terminated, truncated, info = env.step("add(n=1)")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert "already spent 5 turns" in observation and "budget is 3" in observation
    assert info["task_id"] == "toy-04" and info["turn"] == 5 and info["success"] is False
    assert info["action_valid"] is False and info["action_error"] == observation
    assert env.unwrapped.turn == 5  # the env was not stepped


def test_stepping_on_after_the_cap_is_refused_with_the_envs_info():
    env = TurnBudget(gym.make(TOY_ID), budget=1)
    env.reset(seed=0, options={"task_id": "toy-04"})
    assert env.step("say(text='x')")[3] is True
    observation, _, _, truncated, info = env.step("add(n=1)")
    assert truncated and "the budget of 1 turns is spent" in observation
    assert info["turn"] == 1 and info["budget"]["remaining"] == 0 and "task_id" in info
