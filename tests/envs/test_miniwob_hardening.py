"""MiniWoB-v0 in a real Chromium under adversarial input: text that is not text is refused before
it reaches the browser, and a browser that dies mid-episode ends the episode (no exception out of
``step``), then a fresh one serves the next reset."""

from __future__ import annotations

import json
import os
import signal

import pytest

from budgetgym.envs.miniwob.browser import alive
from budgetgym.envs.miniwob.tools.type import text_error
from registered import make_or_skip


def test_text_error_refuses_controls_surrogates_and_webdriver_keys_only():
    for text in ("a\ud800b", "\udfff", "\x00", "x\ny", "\t", "\x1b[2J", "\x7f", "\ue007", "\ue03d"):
        assert text_error(text) is not None, ascii(text)
    for text in ("", "hello", "Jos\u00e9 \u00fc\u00df \u4e2d\u6587 \U0001f600", "a-b_c.d@e!", "\uf900"):
        assert text_error(text) is None, ascii(text)


def test_untypable_text_is_an_invalid_action_and_changes_nothing():
    env = make_or_skip("budgetgym/MiniWoB-v0", task="enter-text")
    try:
        env.reset(seed=3)
        field = next(e["ref"] for e in env.unwrapped.page.elements if e["tag"] == "input_text")
        before = env.unwrapped.page.render()
        for text in ("a\ud800", "\x00", "go\n", "\ue007"):
            action = json.dumps({"name": "type", "arguments": {"ref": field, "text": text}})  # \ud800 escaped
            observation, reward, terminated, truncated, info = env.step(action)
            assert not info["action_valid"] and "not text to type" in info["action_error"], ascii(text)
            assert not terminated and not truncated and reward == 0.0
            assert env.unwrapped.page.render() == before
    finally:
        env.close()


def test_a_browser_that_dies_mid_episode_ends_it_and_the_next_reset_gets_a_fresh_one():
    env = make_or_skip("budgetgym/MiniWoB-v0", task="login-user")
    try:
        env.reset(seed=1)
        env.step(env.unwrapped.oracle_action())
        for pid in env.unwrapped.tab.browser.pids():  # the browser this env's tab is in, by process id
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        observation, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert terminated and not truncated and reward == 0.0 and not info["success"]
        assert "the browser stopped answering" in observation and info["action_valid"]
        assert env.unwrapped.oracle_action() is None
        with pytest.raises(RuntimeError, match="call reset"):
            env.step("click(ref=1)")
        observation, _ = env.reset(seed=1)
        assert observation.startswith('Task: Enter the username "')
        from budgetgym.core import rollout

        assert rollout(env, "oracle", reset=False).success
    finally:
        env.close()
