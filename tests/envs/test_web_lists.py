"""Web-v0's long-horizon tasks, the shopping lists: their oracles and budgets, the cart, failure
states on both splits, the heuristics that must not win, and a progress reward that cannot be farmed."""

from __future__ import annotations

import random

import gymnasium as gym
import pytest

from budgetgym.core import SnapshotError, rollout
from budgetgym.envs.web import WebEnv
from budgetgym.envs.web.env import FOUND, OPENED, OPTIONS_SET, READY
from budgetgym.envs.web.goal import Order
from budgetgym.envs.web.shop import ADD, BACK_TO_SEARCH, BUY


@pytest.fixture(scope="module")
def env():
    return WebEnv()


def lists(env, split=None):
    return [t for t in env.tasks if "goals" in t.data and (split is None or t.split == split)]


def test_shopping_lists_are_long_with_failure_states_on_both_splits(env):
    states = env.failure_states()
    for split, count in (("train", 150), ("test", 50)):
        tasks = lists(env, split)
        assert len(tasks) == count
        for task in tasks:
            order = Order.from_task(task.data)
            assert len({g.type for g in order.goals}) == len(order.goals) >= 4, task.id
            assert task.oracle_turns == sum(2 + len(g.options) for g in order.goals) + len(order.goals) >= 15
            assert task.max_turns >= 30
            for goal, target, query in zip(order.goals, task["targets"], task["oracle_queries"]):
                assert goal.can_meet(env.catalogue[target]) and target in env.catalogue.index.search(query)[:10]
        ids = {t.id for t in tasks}
        kinds = {s["kind"] for s in states if s["task_id"] in ids}
        assert kinds == set(env.failure_kinds), split


def test_the_oracle_solves_a_list_in_exactly_its_turns_and_no_merge_beats_it(env):
    from test_budgets_bind import _merged, _oracle_solution

    made = gym.make("budgetgym/Web-v0")
    for task in lists(env)[:2]:
        solution = _oracle_solution(made, task.id, seed=0)
        assert len(solution) == task.oracle_turns
        assert sum(a.calls[0].arguments.get("element") == ADD for a in solution) == len(task["goals"]) - 1
        for width in (2, None):
            made.reset(seed=0, options={"task_id": task.id})
            for action in _merged(solution, width, False):
                *_, terminated, truncated, info = made.step(action)
                if terminated or truncated:
                    break
            assert not info["success"]  # a second call a turn is an invalid action


def test_the_cart_keeps_one_line_per_type_and_buy_scores_the_mean(env):
    task = lists(env, "test")[0]
    order = Order.from_task(task.data)
    first, second = task["targets"][:2]
    env.reset(seed=0, options={"task_id": task.id})
    assert "Cart: empty" in env.step(f"search[{task['oracle_queries'][0]}]")[0]
    env.step(f"click[{first}]")
    assert f"click[{ADD}]" in env.admissible_actions()
    env.step(f"click[{ADD}]")  # no options selected: the line misses them
    assert env.shop.cart == [{"product": first, "selected": {}}] and env.shop.goal == order.goals[0]
    for value in order.goals[0].options.values():
        env.step(f"click[{value}]")
    env.step(f"click[{ADD}]")  # the same type again: the line is replaced, the first item is met
    assert env.shop.cart == [{"product": first, "selected": dict(order.goals[0].options)}]
    assert env.shop.goal == order.goals[1]
    snapshot = env.snapshot()
    bad = {**snapshot["state"], "cart": snapshot["state"]["cart"] * 2}
    with pytest.raises(ValueError, match="one line per product type"):
        env.shop.check_state(bad)
    with pytest.raises(SnapshotError):
        WebEnv().reset(options={"snapshot": {**snapshot, "state": bad}})
    env.step(f"search[{task['oracle_queries'][1]}]")
    env.step(f"click[{second}]")
    _, reward, terminated, _, info = env.step(f"click[{BUY}]")  # 2 of n items, the second without options
    second_goal = order.goals[1]
    expected = (1.0 + second_goal.score(env.catalogue[second], {})) / len(order.goals)
    assert terminated and not info["success"] and info["score"] == pytest.approx(expected) and reward == 0.0
    restored, _ = WebEnv().reset(options={"snapshot": env.snapshot()})
    assert restored.startswith("Instruction:") and "not bought" in restored


def test_the_title_overlap_heuristic_solves_at_most_5_percent_of_lists(env):
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.web import TitleOverlap

    made = gym.make("budgetgym/Web-v0")
    for split in ("train", "test"):
        tasks = lists(env, split)[::2]
        solved, scores = 0, []
        for task in tasks:
            solved += play_episode(made, TitleOverlap(), seed=0, options={"task_id": task.id}).success
            scores.append(made.unwrapped.shop.page.get("reward", 0.0))  # WebShop's score of what it bought
        assert solved <= 0.05 * len(tasks), split
        assert max(scores) > 0.5  # it does shop the items: the lists, not a bug, stop it


def test_progress_is_a_potential_that_a_step_back_gives_back():
    env = WebEnv(reward_mode="progress")
    task = next(t for t in lists(env, "test") if len(t["goals"][0]["options"]) == 2)
    env.reset(seed=0, options={"task_id": task.id})
    seen, total = [], 0.0
    while (action := env.oracle_action()) is not None:
        _, reward, _, _, info = env.step(action)
        seen.append(info["progress"])
        total += reward
        if len(seen) == 4:  # the first item open with its options set: leave and come back
            for back in ("back", f"click[{BACK_TO_SEARCH}]"):
                _, reward, _, _, info = env.step(back)
                total += reward
            assert info["progress"] == 0.0
    assert seen[3] == pytest.approx(0.9 / len(task["goals"]))
    assert seen[4:8] == seen[:4] and seen[4:] == sorted(seen[4:]) and seen[-1] == 1.0 == pytest.approx(total)


def _potential_by_definition(env):
    """The potential as the Rewards section defines it, from ``Goal.can_meet`` on the open page."""
    shop = env.shop
    page = shop.page
    if page["kind"] == "done":
        return 1.0 if page["reward"] == 1.0 else 0.0
    goals, met, goal = shop.order.goals, shop.met(), shop.goal
    done = READY * sum(met)
    if not met[goals.index(goal)]:
        if page["kind"] == "results" and any(goal.can_meet(env.catalogue[p]) for p in shop.page_results()):
            done += FOUND
        elif page["kind"] == "item" and goal.can_meet(shop.product):
            right = sum(page["selected"].get(g) == v for g, v in goal.options.items())
            done += OPENED + OPTIONS_SET * right / len(goal.options)
    return done / len(goals)


def test_progress_is_the_potential_by_its_definition_on_wandering_episodes(env):
    # The env reads the potential from each goal's fitting products worked out once per task, and
    # keeps its reading of each cart per task; an agent that wanders (searches, opens, selects, adds,
    # goes back) checks it against the definition, each episode twice (the second reads kept carts).
    tasks = lists(env, "test")[:6] + [t for t in env.tasks if "goals" not in t.data][:6]
    for number, task in [(n, t) for n, t in enumerate(tasks) for _ in range(2)]:
        rng = random.Random(number)
        env.reset(seed=number, options={"task_id": task.id})
        for _ in range(40):
            oracle = env.oracle_action()
            options = [a for a in env.current_info()["admissible_actions"] if a != "search[<query>]"]
            action = oracle if not options or rng.random() < 0.5 else rng.choice(options)
            if action is None:
                break
            _, _, terminated, truncated, info = env.step(action)
            assert info["progress"] == pytest.approx(_potential_by_definition(env)), (task.id, action)
            if terminated or truncated:
                break


def test_reopen_and_leave_farms_nothing_and_the_probe_finds_no_farm():
    from budgetgym.eval.agents import RandomAgent
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.web import ReopenAndLeave
    from budgetgym.eval.probes import format_exploit_table, run_exploit_probe

    made = gym.make("budgetgym/Web-v0", split="test", reward_mode="progress")
    ids = [t.id for t in made.unwrapped.tasks][::30]
    farmed = [play_episode(made, ReopenAndLeave(), seed=n, options={"task_id": i}) for n, i in enumerate(ids)]
    randomly = [play_episode(made, RandomAgent(), seed=n, options={"task_id": i}) for n, i in enumerate(ids)]
    assert any(len(set(p.actions)) > 3 for p in farmed)  # it did go round the loop
    assert sum(p.reward for p in farmed) <= max(0.0, sum(p.reward for p in randomly)) + 1e-9
    result = run_exploit_probe("budgetgym/Web-v0", tasks="test", sample=4, seed=1, reward_mode="progress")
    assert not result["flagged"], format_exploit_table(result)


def _admissible_by_definition(env):
    """The admissible actions as the module docstring defines them, from the open page's elements."""
    shop = env.shop
    if shop.done:
        return []
    return ["search[<query>]", *(f"click[{label}]" for label in shop.elements()), *(["back"] if shop.history else [])]


def test_admissible_actions_are_the_open_pages_elements_on_wandering_episodes():
    # The env keeps a page's click actions by what the page shows (a results page's query and
    # number, an item page's product and whether the order is a list): wandering twice over lists
    # and single items, back and forth, the second time on pages seen before, checks them against
    # the page itself.
    env = WebEnv()
    tasks = lists(env, "test")[:4] + [t for t in env.tasks if "goals" not in t.data][:4]
    for round_ in range(2):
        rng = random.Random(11)
        for number, task in enumerate(tasks):
            _, info = env.reset(seed=number, options={"task_id": task.id})
            for _ in range(30):
                assert info["admissible_actions"] == _admissible_by_definition(env), (round_, task.id)
                options = [a for a in info["admissible_actions"] if a != "search[<query>]"] + ["back"]
                action = env.oracle_action() if rng.random() < 0.5 else rng.choice(options)
                if action is None:
                    break
                _, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    assert info["admissible_actions"] == _admissible_by_definition(env)
                    assert (info["admissible_actions"] == []) == terminated
                    break
    # The same product's page in a list (with Add to Cart) and for a single item (without).
    single = next(t for t in env.tasks if "goals" not in t.data)
    for task in (lists(env)[0], single, lists(env)[0]):
        env.reset(seed=0, options={"task_id": task.id})
        env.shop.page = {"kind": "item", "product": env.catalogue.products[0].id, "selected": {}}
        assert env.admissible_actions() == _admissible_by_definition(env)
        assert (f"click[{ADD}]" in env.admissible_actions()) == ("goals" in task.data)
