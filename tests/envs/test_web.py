"""Web-v0: the catalogue, the instructions, the search, the reward, the oracle, restore and the
failure states, and the strategies that must not win."""

from __future__ import annotations

import json
from collections import Counter

import gymnasium as gym
import pytest

from budgetgym.core import SnapshotError, rollout
from budgetgym.core.jsonl import read_jsonl
from budgetgym.envs.web import WebEnv
from budgetgym.envs.web import assets, generate
from budgetgym.envs.web.catalogue import CATEGORIES, PRODUCTS_PATH, load_catalogue
from budgetgym.envs.web.goal import Goal
from budgetgym.envs.web.search import tokenize


@pytest.fixture(scope="module")
def env():
    return WebEnv()


def singles(env):
    """The single-item instructions (the shopping lists have their own tests: test_web_lists.py)."""
    return [t for t in env.tasks if "goals" not in t.data]


def test_shipped_assets_are_the_generators_output():
    products, tasks, failures = assets.build()
    assert read_jsonl(PRODUCTS_PATH) == products
    assert read_jsonl(generate.TASKS_PATH) == tasks
    assert read_jsonl(generate.FAILURES_PATH) == failures


def test_catalogue_size_and_shape():
    catalogue = load_catalogue()
    assert len(catalogue) >= 2000
    assert len({p.category for p in catalogue.products}) >= 10 and len(CATEGORIES) >= 10
    for product in catalogue.products:
        assert product.attributes and product.options and product.price > 0
        values = [v for group in product.options.values() for v in group]
        assert len(values) == len(set(values)), product.id  # an option value names one element
        assert all(len(group) >= 2 for group in product.options.values())


def test_a_goal_is_met_exactly_where_it_scores_one(env):
    """``Goal.meets`` (the potential's fast verdict) is ``score``'s verdict of 1.0: every product of a
    goal's type, with the asked options selected, with each one changed, and with none."""
    checked = 0
    for task in singles(env):
        goal = Goal.from_record(task["goal"])
        for product in env.catalogue.by_type[goal.type]:
            selections = [dict(goal.options), {}]
            for group in goal.options:
                for value in product.options.get(group, ()):
                    selections.append({**goal.options, group: value})
            for selected in selections:
                assert goal.meets(product, selected) == (goal.score(product, selected) == 1.0), (task.id, product.id)
                checked += 1
    assert checked > 10_000


def test_instructions_and_the_fixed_test_split(env):
    splits = Counter(t.split for t in singles(env))
    assert sum(splits.values()) >= 500 and splits["test"] >= 100
    assert len({t.instruction for t in env.tasks}) == len(env.tasks)
    for task in singles(env):
        goal = Goal.from_record(task["goal"])
        assert goal.options, task.id  # every instruction asks an option: buying blind never scores 1.0
        assert goal.can_meet(env.catalogue[task["target"]])
        near = sum(goal.misses(p) == 1 for p in env.catalogue.by_type[goal.type])
        assert near >= 2, task.id


def test_oracle_buys_a_full_score_item_for_every_instruction_within_the_budget(env):
    for task in singles(env) + [t for t in env.tasks if "goals" in t.data][::4]:
        result = rollout(env, "oracle", options={"task_id": task.id})
        assert result.success and result.turns == task.oracle_turns <= task.max_turns, task.id
        assert result.steps[-1].reward == 1.0


def test_every_failure_state_restores_and_the_oracle_recovers(env):
    states = env.failure_states()
    assert len(states) >= 100 and len({s["kind"] for s in states}) >= 5
    for state in states:
        observation, info = env.reset(options={"snapshot": state["snapshot"]})
        assert observation == state["snapshot"]["transcript"][-1][1]
        assert env.state_key() not in {json.dumps({"kind": "done"})}
        result = rollout(env, "oracle", start=(observation, info))
        assert result.success and info["turn"] + result.turns <= info["full_budget"], state["id"]


def test_score_is_the_share_of_asked_criteria_met_and_reward_is_success(env):
    task = env.tasks[0]
    goal = Goal.from_record(task["goal"])
    target = env.catalogue[task["target"]]
    assert goal.score(target, dict(goal.options)) == 1.0
    assert goal.score(target, {}) == pytest.approx((goal.criteria - len(goal.options)) / goal.criteria)
    other_type = next(p for p in env.catalogue.products if p.type != goal.type)
    assert goal.score(other_type, {}) == 0.0
    # the purchase's info["score"] is that score, the reward is success: buy the target without options
    env.reset(seed=0, options={"task_id": task.id})
    env.step(f"search[{task['oracle_query']}]")
    env.step(f"click[{target.id}]")
    _, reward, terminated, _, info = env.step("click[Buy Now]")
    assert terminated and not info["success"] and info["score"] == goal.score(target, {}) > 0.5
    assert reward == 0.0
    env.reset(seed=0, options={"task_id": task.id})
    while (action := env.oracle_action()) is not None:
        _, reward, terminated, _, info = env.step(action)
    assert terminated and info["success"] and info["score"] == reward == 1.0


def _play(env, task_id, actions):
    """The episode's return and its score (0 when nothing was bought)."""
    env.reset(seed=0, options={"task_id": task_id})
    total, info = 0.0, {}
    for action in actions(env):
        if action is None:
            break
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            break
    return total, info.get("score", 0.0)


def _first_result(env):
    yield f"search[{env.task.instruction}]"
    yield f"click[{env.shop.page_results()[0]}]"
    yield "click[Buy Now]"


def _cheapest_result(env):
    yield f"search[{env.task.instruction}]"
    listed = env.shop.page_results()
    yield f"click[{min(listed, key=lambda pid: env.catalogue[pid].price)}]"
    yield "click[Buy Now]"


def _top_hit_with_the_asked_options(env):
    yield f"search[{env.task.instruction}]"
    yield f"click[{env.shop.page_results()[0]}]"
    for group, value in env.shop.goal.options.items():
        if value in env.shop.product.options.get(group, ()):
            yield f"click[{value}]"
    yield "click[Buy Now]"


@pytest.mark.parametrize("strategy, most", [(_first_result, 0.0), (_cheapest_result, 0.0),
                                            (_top_hit_with_the_asked_options, 0.05)])
def test_shortcut_strategies_rarely_succeed(env, strategy, most):
    """They collect a share of WebShop's score (reported), and of the return no more than they solve."""
    played = [_play(env, t.id, strategy) for t in singles(env)]
    returns = [total for total, _ in played]
    assert set(returns) <= {0.0, 1.0} and sum(returns) / len(returns) <= most
    assert sum(score for _, score in played) / len(played) > 0.2


def test_bad_clicks_and_queries_cost_the_turn_and_change_nothing(env):
    env.reset(seed=0, options={"task_id": env.tasks[1].id})
    env.step(f"search[{env.task['oracle_query']}]")
    for action in ("click[P99999]", "click[Buy Now]", "search[   ]", "search[" + "x" * 500 + "]", "next page please",
                   '[{"name": "click", "arguments": {"element": "Next >"}}, {"name": "click", "arguments": {"element": "nope"}}]'):
        before = env.snapshot()
        observation, reward, terminated, _, info = env.step(action)
        after = env.snapshot()
        assert after["state"] == before["state"] and after["turn"] == before["turn"] + 1, action
        assert not terminated and reward == 0.0
        assert "There is no [" in observation or "empty" in observation or not info["action_valid"], observation


def test_every_admissible_action_runs(env):
    env.reset(seed=0, options={"task_id": env.tasks[2].id})
    env.step(f"search[{env.task['oracle_query']}]")
    results_snapshot = env.snapshot()
    env.step(env.oracle_action())
    item_snapshot = env.snapshot()
    for snap in (results_snapshot, item_snapshot):
        _, info = env.reset(options={"snapshot": snap})
        for action in info["admissible_actions"]:
            env.reset(options={"snapshot": snap})
            env.step(action)
            assert env.last_error is None, (action, env.last_error)


def test_bare_commands_and_tool_calls_are_the_same_action(env):
    task_id = env.tasks[3].id
    bare = [_play(env, task_id, lambda e: iter([f"search[{e.task['oracle_query']}]"])), env.snapshot()["state"]]
    call = [_play(env, task_id, lambda e: iter([json.dumps({"name": "search", "arguments": {"query": e.task["oracle_query"]}})])),
            env.snapshot()["state"]]
    assert bare == call
    env.step("next page")
    assert env.shop.page["page"] == 2
    env.step("back")
    assert env.shop.page["page"] == 1


def test_progress_follows_the_good_path(env):
    env_progress = WebEnv(reward_mode="progress")
    env_progress.reset(seed=0, options={"task_id": env.tasks[4].id})
    seen = []
    while (action := env_progress.oracle_action()) is not None:
        _, _, _, _, info = env_progress.step(action)
        seen.append(info["progress"])
    assert seen[0] == 0.25 and seen[1] == 0.5 and seen[-1] == 1.0 and seen == sorted(seen)


def test_corrupt_shop_states_are_refused_whole(env):
    env.reset(seed=0, options={"task_id": env.tasks[5].id})
    env.step(f"search[{env.task['oracle_query']}]")
    env.step(env.oracle_action())
    good = env.snapshot()
    product = good["state"]["page"]["product"]
    for state in (
        {**good["state"], "catalogue": "0" * 16},
        {**good["state"], "page": {"kind": "item", "product": "P99999", "selected": {}}},
        {**good["state"], "page": {"kind": "item", "product": product, "selected": {"size": "huge"}}},
        {**good["state"], "page": {"kind": "results", "query": "hose", "page": 999}},
        {**good["state"], "page": {"kind": "done", "product": product, "selected": {}, "reward": 1.0}},
        {**good["state"], "history": "nope"},
        {**good["state"], "extra": 1},
    ):
        with pytest.raises(SnapshotError):
            WebEnv().reset(options={"snapshot": {**good, "state": state}})
        shop_before = env.shop.get_state()
        with pytest.raises(SnapshotError):
            env.reset(options={"snapshot": {**good, "state": state}})
        assert env.shop.get_state() == shop_before  # the shop was validated whole before any change
    restored, _ = WebEnv().reset(options={"snapshot": good})
    assert restored == good["transcript"][-1][1]


def test_search_ranks_deterministically_and_finds_by_attributes():
    catalogue = load_catalogue()
    index = catalogue.index
    assert index.search("waterproof boots") == index.search_uncached("Waterproof   BOOTS!")
    top = [catalogue[pid] for pid in index.search("waterproof leather boots")[:3]]
    assert all(p.type == "boots" and {"waterproof", "leather"} <= set(p.attributes) for p in top)
    assert index.search("zzzz qqqq") == ()
    assert tokenize("T-Shirts for the Kids") == ["tshirt", "kid"]


def test_registered_and_made_through_gymnasium():
    env = gym.make("budgetgym/Web-v0", split="test")
    observation, info = env.reset(seed=0)
    assert observation.startswith("Instruction: ") and info["admissible_actions"] == ["search[<query>]"]
    assert {t["function"]["name"] for t in info["tools"]} == {"search", "click", "back", "next_page"}


def test_oracle_finishes_from_random_states_within_its_own_length(env):
    """From wherever a few random clicks and searches lead, the oracle needs at most the task's
    oracle_turns: one search (or back) puts it on the path, and the path never gets longer."""
    import random

    rng = random.Random(5)
    for task in list(env.tasks)[::7]:
        env.reset(seed=0, options={"task_id": task.id})
        for _ in range(rng.randint(1, 3)):
            choices = [a for a in env.admissible_actions() if a != "click[Buy Now]"]
            choices.append(f"search[{rng.choice(task.instruction.split())} {env.shop.goal.type}]")
            env.step(rng.choice(choices))
        start = env.turn
        result = rollout(env, "oracle", reset=False)
        assert result.success and env.turn - start <= task.oracle_turns, task.id
