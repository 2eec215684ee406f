"""``budgetgym serve``: the served env is the in-process env, through OpenEnv's own client and through
``budgetgym/Remote-v0``; the wrappers come from the reset; snapshots go through the state message."""

from __future__ import annotations

import json
import sys
import urllib.request

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import budgetgym
from budgetgym.core import text_env
from budgetgym.serve.client import RemoteEnv, RemoteEnvError
from budgetgym.serve.server import ServeConfig, Server
from serve_support import FC, TOKEN
from contract import BAD_ACTIONS, action_sequence


def remote(server, **kwargs) -> gym.Env:
    return gym.make("budgetgym/Remote-v0", url=server.url, env_id=FC, token=TOKEN, **kwargs)


def play_both(local: gym.Env, far: gym.Env, seed: int, options: dict | None = None, steps: int = 40) -> int:
    """Play the same actions on both (the oracle's, with bad ones mixed in); assert every return is equal."""
    first = local.reset(seed=seed, options=options)
    assert far.reset(seed=seed, options=options) == first
    played = 0
    for action in action_sequence(np.random.default_rng(seed), steps, first[1]["tools"]):
        action = action if action is not None else (text_env(local).oracle_action() or "I cannot do more.")
        mine, theirs = local.step(action), far.step(action)
        assert mine == theirs, action[:60]
        played += 1
        if mine[2] or mine[3]:
            break
    return played


def test_remote_env_is_the_in_process_env_with_its_wrappers(server):
    options = dict(budget_mix=[0.25, 0.5, 1.0], reveal="remaining", inject_errors=True)
    local, far = budgetgym.make(FC, **options), remote(server, **options)
    try:
        for seed in (0, 1, 2):
            assert play_both(local, far, seed) >= 1
        # a reset's options override the env's wrapper options for that episode
        task_id = text_env(local).tasks.ids[3]
        plain = budgetgym.make(FC, budget="1x", reveal="total")
        assert plain.reset(seed=5, options={"task_id": task_id}) == \
            far.reset(seed=5, options={"task_id": task_id, "budget": "1x", "reveal": "total", "budget_mix": None,
                                       "inject_errors": None})
        plain.close()
    finally:
        local.close()
        far.close()


def test_snapshots_go_through_the_state_message(server):
    local, far = budgetgym.make(FC, budget=0.5), remote(server, budget=0.5)
    try:
        far.reset(seed=3)
        local.reset(seed=3)
        for _ in range(2):
            action = text_env(local).oracle_action()
            assert local.step(action) == far.step(action)
        state = far.unwrapped.state()
        assert state["env_id"] == FC and state["turn"] == 2 and state["step_count"] == 2
        assert state["snapshot"] == text_env(local).snapshot()
        snapshot = far.unwrapped.snapshot()
        far.reset(seed=9)
        _, info = far.reset(options={"snapshot": snapshot})
        assert info["turn"] == 2 and far.unwrapped.state()["snapshot"] == snapshot
        action = text_env(local).oracle_action()
        assert far.step(action) == local.step(action)
    finally:
        local.close()
        far.close()


def test_openenv_core_client_drives_a_served_id(server):
    from openenv.core import GenericEnvClient

    host = server.url.removeprefix("http://")
    local = budgetgym.make(FC, budget=0.5, reveal="remaining")
    # OpenEnv's client sends no headers of its own: the token rides in the URL as HTTP Basic's password
    with GenericEnvClient(base_url=f"http://budgetgym:{TOKEN}@{host}").sync() as client:
        result = client.reset(seed=4, budget=0.5, reveal="remaining")
        observation, info = local.reset(seed=4)
        assert result.observation == {"text": observation, "info": info, "terminated": False, "truncated": False}
        assert result.done is False
        done = False
        while not done:
            action = text_env(local).oracle_action()
            observation, reward, terminated, truncated, info = local.step(action)
            result = client.step({"text": action})
            assert result.observation["text"] == observation and result.observation["info"] == info
            assert (result.reward, result.done) == (reward, terminated or truncated)
            done = result.done
        assert info["success"] is True
        state = client.state()
        assert state["snapshot"] == text_env(local).snapshot() and state["step_count"] == info["turn"]
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
            client.reset(task_id="no-such-task")
    local.close()


def test_remote_v0_keeps_gymnasiums_checks_and_answers_bad_actions_as_in_process(server):
    far = remote(server)
    local = budgetgym.make(FC)
    try:
        check_env(far.unwrapped, skip_render_check=True)
        assert far.observation_space.contains("any Unicode: é ✓ 漢字") and far.action_space.contains("go north")
        # The task with the longest budget: every bad action spends a turn, and all of them fit.
        longest = {"task_id": max(text_env(local).tasks, key=lambda task: task.max_turns).id}
        local.reset(seed=0, options=longest)
        far.reset(seed=0, options=longest)
        for action in BAD_ACTIONS:
            mine, theirs = local.step(action), far.step(action)
            assert mine == theirs and theirs[4]["action_valid"] is False, action[:40]
        for action in ('{"name": "x\udc80", "arguments": {}}', "a message with a lone surrogate \ud800"):
            assert local.step(action) == far.step(action)  # lone surrogates cross the wire and back
        with pytest.raises(TypeError, match="string"):
            far.step(42)
    finally:
        far.close()
        local.close()


def test_a_refused_reset_changes_nothing(server):
    far = remote(server)
    try:
        far.reset(seed=0)
        before = far.unwrapped.state()
        for options in ({"task_id": "no-such-task"}, {"budget": 0}, {"budget": True}, {"reveal": "everything"},
                        {"snapshot": {"format": "forged"}}, {"budget": 0.5, "budget_mix": [0.5]}):
            with pytest.raises(RemoteEnvError) as err:
                far.reset(seed=1, options=options)
            assert err.value.code == "EXECUTION_ERROR"
            assert far.unwrapped.state() == before, options
        with pytest.raises(ValueError, match="unknown reset options"):
            far.reset(options={"budgte": 3})
    finally:
        far.close()


def test_step_before_reset_is_refused_and_the_session_goes_on(server):
    far = RemoteEnv(server.url, FC, token=TOKEN)  # gym.make's OrderEnforcing would refuse it first
    try:
        with pytest.raises(RemoteEnvError, match="send a reset first"):
            far.step("hello")
        assert far.reset(seed=0)[1]["turn"] == 0
    finally:
        far.close()


def test_token_is_required_where_set(server):
    with pytest.raises(PermissionError, match="missing"):
        RemoteEnv(server.url, FC, token="")
    with pytest.raises(PermissionError, match="refused"):
        RemoteEnv(server.url, FC, token="wrong-token-0123456789")
    with urllib.request.urlopen(server.url + "/health", timeout=10) as response:  # health needs none
        assert json.loads(response.read()) == {"status": "healthy"}
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with pytest.raises(InvalidStatus) as err:
        connect(server.url.replace("http", "ws") + "/ws", open_timeout=10)
    assert err.value.response.status_code == 401
    with pytest.raises(ValueError, match="serves budgetgym/FunctionCalling-v0, not"):
        RemoteEnv(server.url, "budgetgym/Web-v0", token=TOKEN)


def test_serving_beyond_loopback_needs_a_token():
    with pytest.raises(ValueError, match="needs a token"):
        Server(ServeConfig(FC), "0.0.0.0", 0)
    with pytest.raises(ValueError, match="at least 16"):
        ServeConfig(FC, token="short")
    with pytest.raises(gym.error.Error):
        ServeConfig("budgetgym/NoSuchEnv-v0")


def test_budgetgym_serve_refuses_an_unknown_id():
    import subprocess
    import sys

    # (tests/serve/test_faults.py runs `budgetgym serve ID` itself, and kills it mid-episode)
    wrong = subprocess.run([sys.executable, "-m", "budgetgym.cli", "serve", "budgetgym/FunctionCaling-v0"],
                           capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "FunctionCalling-v0" in wrong.stderr


def test_the_rollout_loop_and_gymnasiums_vector_env_run_a_served_id_unchanged(server):
    from budgetgym.core.rollout import rollout

    shadow = budgetgym.make(FC, budget=0.5)  # the policy: the oracle of an in-process twin

    def policy(observation, info, env):
        action = text_env(shadow).oracle_action()
        if action is not None:
            shadow.step(action)
        return action

    shadow.reset(seed=7)
    far = remote(server, budget=0.5)
    played = rollout(far, policy, seed=7)
    local = budgetgym.make(FC, budget=0.5)
    assert played.success and played.actions == rollout(local, "oracle", seed=7).actions
    for env in (shadow, far, local):
        env.close()

    vector = gym.vector.SyncVectorEnv([lambda: remote(server), lambda: remote(server)])
    observations, infos = vector.reset(seed=[0, 1])
    assert list(observations) == [budgetgym.make(FC).reset(seed=s)[0] for s in (0, 1)]
    _, rewards, terminated, truncated, _ = vector.step(["hello", '{"name": "nothing", "arguments": {}}'])
    assert len(rewards) == 2
    vector.close()


def test_a_missing_serve_extra_is_one_line_naming_it(capsys, monkeypatch):
    from budgetgym.cli import main
    from budgetgym.core.extras import MissingExtra

    monkeypatch.setitem(sys.modules, "openenv.core.env_server", None)  # import now raises, as without the extra
    assert main(["serve", FC, "--port", "8765"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "budgetgym serve needs the 'openenv' package: pip install 'budgetgym[serve]'" in err
    monkeypatch.setitem(sys.modules, "websockets.sync.client", None)
    with pytest.raises(MissingExtra, match="Remote-v0 needs the 'websockets' package"):
        RemoteEnv("http://127.0.0.1:9", FC)
