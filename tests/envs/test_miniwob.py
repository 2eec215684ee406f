"""MiniWoB-v0 in a real Chromium: the keyword, the text view, bad references, the missing-browser
error, that the oracle solves every task within its stated turns and closing the env leaves no
browser process behind after many episodes, and the curated failure states on both splits."""

from __future__ import annotations

import gc
import os

import gymnasium as gym
import pytest

from budgetgym.core import full_budget, load_tasks, rollout
from budgetgym.envs.miniwob import assets
from budgetgym.envs.miniwob.browser import alive, descendants
from budgetgym.envs.miniwob.env import MiniWoBNotInstalled, select_tasks
from budgetgym.envs.miniwob.oracles import ORACLE_TURNS
from registered import make_or_skip

# The figure is 1,000 episodes; CI runs this many (0.2-0.8 s each, by load), and
# benchmarks/bench_web.py --miniwob-episodes 1000 runs the full figure.
EPISODES_IN_CI = 100


@pytest.fixture(scope="module")
def shared_env():
    """One env (one browser) for the tests that only play episodes: a browser start costs seconds."""
    env = make_or_skip("budgetgym/MiniWoB-v0")
    yield env
    env.close()


def _browsers() -> list[int]:
    return [pid for pid in descendants(os.getpid()) if alive(pid)]


def test_the_keyword_chooses_the_task():
    assert select_tasks("login") == ["miniwob/login-user", "miniwob/login-user-popup"]
    assert select_tasks("login-user") == ["miniwob/login-user"]  # an exact name wins over login-user-popup
    assert select_tasks("click-tab-2") == ["miniwob/click-tab-2"]
    assert len(select_tasks("click")) == 13
    with pytest.raises(ValueError, match="supported tasks are"):
        select_tasks("no-such-task")


def test_missing_browser_names_what_to_install(monkeypatch):
    pytest.importorskip("miniwob", reason="the miniwob package is not installed: pip install 'budgetgym[web]'")
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/nonexistent/chromium")
    with pytest.raises(MiniWoBNotInstalled, match="apt-get install chromium chromium-driver"):
        gym.make("budgetgym/MiniWoB-v0")


def test_page_as_text_and_a_bad_reference():
    env = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
    try:
        observation, info = env.reset(seed=1)
        assert observation.startswith('Task: Enter the username "')
        assert "input_text#username" in observation and "input_password#password" in observation
        assert "click(ref=7)" in info["admissible_actions"]
        before = env.unwrapped.snapshot()
        observation, reward, terminated, _, _ = env.step("click(ref=999)")
        assert "There is no element [999]" in observation and not terminated and reward == 0.0
        assert env.unwrapped.snapshot()["transcript"][:-1] == before["transcript"]
        result = rollout(env, "oracle", reset=False)
        assert result.success and result.turns == 3
        observation, *_ = env.reset(seed=1)
        env.step("click(ref=11)")  # log in with empty fields: judged wrong, the episode ends
        assert env.unwrapped.page.done and not env.unwrapped.page.raw_reward > 0
    finally:
        env.close()


def test_the_task_list_is_the_generators_and_each_budget_follows_the_rule():
    tasks = load_tasks("miniwob")
    assert [dict(task.data) for task in tasks] == assets.tasks()
    assert len(tasks) >= 30 and set(tasks.splits) == {"train", "test"}
    assert {task["miniwob_task"] for task in tasks.select("test")} == assets.TEST_TASKS
    for task in tasks:
        assert task["oracle_turns"] == ORACLE_TURNS[task["miniwob_task"]]
        assert task["max_turns"] == full_budget(task["oracle_turns"])


def test_many_episodes_then_close_leaves_no_browser_process():
    """The oracle solves every task, each at three seeds or more, within the turns its task states
    (a task whose oracle needed more would be truncated short of its full budget's margin)."""
    env = make_or_skip("budgetgym/MiniWoB-v0")
    tasks = list(env.unwrapped.tasks.ids)
    try:
        solved, longest = 0, {}
        for episode in range(EPISODES_IN_CI):
            task_id = tasks[episode % len(tasks)]
            result = rollout(env, "oracle", seed=episode, options={"task_id": task_id})
            solved += result.success
            longest[task_id] = max(longest.get(task_id, 0), result.turns)
            if episode == 10:
                running = len(_browsers())
                assert running > 0
        assert solved == EPISODES_IN_CI
        assert {t: n for t, n in longest.items() if n > env.unwrapped.all_tasks.get(t)["oracle_turns"]} == {}
        assert len(_browsers()) <= running + 2  # one browser all along, not one per episode or task
    finally:
        env.close()
    assert _browsers() == []


def test_missing_package_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "miniwob", None)  # what `import miniwob` meets when it is not installed
    with pytest.raises(MiniWoBNotInstalled, match=r"pip install 'budgetgym\[web\]'"):
        gym.make("budgetgym/MiniWoB-v0")


def test_failure_states_cover_both_splits_and_both_kinds_and_the_oracle_recovers(shared_env):
    """The shipped states: over a hundred, several instances (episode seeds) of a task, each kind
    on each split; two of them restored in the browser, where the page shows the mistake's effect
    and the oracle still solves the task within its full budget."""
    from budgetgym.wrappers import ErrorInjection

    env = shared_env
    states = env.unwrapped.failure_states()
    splits = {task.id: task.split for task in env.unwrapped.all_tasks}
    assert len(states) >= 100 and len({s["snapshot"]["seed"] for s in states}) >= 5
    assert {(splits[s["task_id"]], s["kind"]) for s in states} == {
        (split, kind) for split in ("train", "test") for kind in ("wrong_click", "idle_click")}
    assert len({s["id"] for s in states}) == len(states)
    injected = ErrorInjection(env, split="test")
    for kind, seed in (("wrong_click", 0), ("idle_click", 3)):
        state = next(s for s in states if s["kind"] == kind and splits[s["task_id"]] == "test"
                     and s["snapshot"]["seed"] == seed)
        observation, info = env.reset(options={"snapshot": state["snapshot"]})
        assert info["task_id"] == state["task_id"] and "The episode is over" not in observation
        result = rollout(env, "oracle", start=(observation, info))
        assert result.success
    observation, info = injected.reset(seed=0)
    assert info["task_id"] in {t for t, split in splits.items() if split == "test"}


def test_an_instance_with_nothing_to_do_is_drawn_again(shared_env):
    """click-checkboxes-transfer's seed 0 draws "Select nothing and click Submit" (clicking every
    box twice, or Submit alone, won it): the env draws another instance from that seed, the same
    one every time, so a replay meets the same page."""
    options = {"task_id": "miniwob/click-checkboxes-transfer"}
    observation, _ = shared_env.reset(seed=0, options=options)
    assert not observation.startswith("Task: Select nothing") and observation.startswith("Task: Select ")
    again, _ = shared_env.reset(seed=0, options=options)
    assert again == observation


def test_a_task_in_rounds_is_done_right_only_when_every_instance_is(shared_env):
    """click-link is four instances in a row: the oracle needs one click each (its stated turns),
    the page says which instance it shows, and a wrong link in a later instance ends the episode."""
    from budgetgym.envs.miniwob.oracles import ROUNDS

    rounds = ROUNDS["click-link"]
    assert ORACLE_TURNS["click-link"] == rounds
    options = {"task_id": "miniwob/click-link"}
    observation, _ = shared_env.reset(seed=5, options=options)
    assert f"Instance 1 of {rounds}" in observation
    result = rollout(shared_env, "oracle", reset=False)
    assert result.success and result.turns == rounds
    shared_env.reset(seed=5, options=options)
    observation, reward, terminated, *_ = shared_env.step(shared_env.unwrapped.oracle_action())
    assert f"Instance 2 of {rounds}" in observation and not terminated and reward == 0.0
    page = shared_env.unwrapped.page
    right = shared_env.unwrapped.oracle_action()
    wrong = next(f"click(ref={e['ref']})" for e in page.elements
                 if "alink" in e["classes"].split() and f"click(ref={e['ref']})" != right)
    observation, reward, terminated, _, info = shared_env.step(wrong)
    assert terminated and reward == 0.0 and not info["success"] and "not done right" in observation


def test_envs_share_one_browser_each_in_its_own_tab():
    """Two envs of a process: one browser (the same processes), two pages that do not see each
    other's actions; a refused restore leaves the running page as it was; closing one env, or
    dropping one unclosed, leaves the others' pages serving (the browser quits with the last, as the many-episodes test checks)."""
    from budgetgym.core import SnapshotError

    first = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
    second = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
    twin = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
    try:
        for env in (first, second, twin):
            env.reset(seed=1)
        assert first.unwrapped.tab.browser is second.unwrapped.tab.browser
        assert first.unwrapped.tab.handle != second.unwrapped.tab.handle
        first.step(first.unwrapped.oracle_action())  # types the username in the first page only
        assert second.unwrapped.page.render() == twin.unwrapped.page.render()
        assert second.step("click(ref=2)")[0] == twin.step("click(ref=2)")[0]
        bad = first.unwrapped.snapshot()
        bad["transcript"][-1][1] += " (edited)"
        del bad["digest"]
        with pytest.raises(SnapshotError, match="diverged"):
            second.reset(options={"snapshot": bad})
        ahead, behind = rollout(second, "oracle", reset=False), rollout(twin, "oracle", reset=False)
        assert ahead.success and [s.observation for s in ahead.steps] == [s.observation for s in behind.steps]
        first.close()
        collected = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
        collected.reset(seed=3)
        del collected  # its tab is closed at the browser's next command, and the others go on
        gc.collect()
        assert rollout(second, "oracle", seed=2).success
        second.reset(options={"snapshot": twin.unwrapped.snapshot()})  # a restore opens a spare tab
        assert second.unwrapped.page.render() == twin.unwrapped.page.render()
    finally:
        for env in (first, second, twin):
            env.close()
