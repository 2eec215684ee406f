"""MiniWoB-v0 in a real Chromium: the keyword, the text view, bad references, the missing-browser
error, and that closing the env leaves no browser process behind after many episodes."""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

from budgetgym.core import rollout
from budgetgym.envs.miniwob.env import MiniWoBNotInstalled, _alive, _descendants, select_tasks
from registered import make_or_skip

# The figure is 1,000 episodes; CI runs this many (0.2-0.8 s each, by load), and
# benchmarks/bench_web.py --miniwob-episodes 1000 runs the full figure.
EPISODES_IN_CI = 100


def _browsers() -> list[int]:
    return [pid for pid in _descendants(os.getpid()) if _alive(pid)]


def test_the_keyword_chooses_the_task():
    assert select_tasks("login") == ["miniwob/login-user"]
    assert select_tasks("click-test") == ["miniwob/click-test"]  # an exact name wins over click-test-2
    assert len(select_tasks("click")) == 8
    with pytest.raises(ValueError, match="supported tasks are"):
        select_tasks("no-such-task")


def test_missing_browser_names_what_to_install(monkeypatch):
    pytest.importorskip("miniwob", reason="the miniwob package is not installed: pip install 'budgetgym[web]'")
    monkeypatch.setenv("MINIWOB_CHROME_BINARY", "/nonexistent/chromium")
    with pytest.raises(MiniWoBNotInstalled, match="apt-get install chromium chromium-driver"):
        gym.make("budgetgym/MiniWoB-v0")


def test_page_as_text_and_a_bad_reference():
    env = make_or_skip("budgetgym/MiniWoB-v0", task="login")
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


def test_many_episodes_then_close_leaves_no_browser_process():
    env = make_or_skip("budgetgym/MiniWoB-v0")
    tasks = list(env.unwrapped.tasks.ids)
    try:
        solved = 0
        for episode in range(EPISODES_IN_CI):
            result = rollout(env, "oracle", seed=episode, options={"task_id": tasks[episode % len(tasks)]})
            solved += result.success
            if episode == 10:
                running = len(_browsers())
                assert running > 0
        assert solved == EPISODES_IN_CI
        assert len(_browsers()) <= running + 2  # one browser all along, not one per episode or task
    finally:
        env.close()
    assert _browsers() == []


def test_missing_package_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "miniwob", None)  # what `import miniwob` meets when it is not installed
    with pytest.raises(MiniWoBNotInstalled, match=r"pip install 'budgetgym\[web\]'"):
        gym.make("budgetgym/MiniWoB-v0")
