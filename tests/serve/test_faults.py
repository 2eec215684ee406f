"""Load and faults, bounded for CI: malformed and oversized requests are refused with the right
status and change nothing; sessions are capped and expire; a server killed mid-episode gives the
client one clear error; 16 sessions at once run without an error."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.error
import urllib.request

import gymnasium as gym
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from budgetgym.serve.client import RemoteEnv
from budgetgym.serve.server import ServeConfig
from serve_support import FC, TOKEN, child_server, running


def session(url: str, token: str | None = TOKEN):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(url.replace("http", "ws", 1) + "/ws", additional_headers=headers, open_timeout=10, legacy=True)


def ask(ws, message) -> dict:
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def test_malformed_frames_are_refused_with_openenvs_codes_and_change_nothing(server):
    with session(server.url) as ws:
        ask(ws, {"type": "reset", "data": {"seed": 0}})
        ask(ws, {"type": "step", "data": {"text": '{"name": "nothing", "arguments": {}}'}})
        before = ask(ws, {"type": "state"})
        for frame, code in [("not json", "INVALID_JSON"), ("[1, 2]", "VALIDATION_ERROR"), ("null", "VALIDATION_ERROR"),
                            ('{"type": "teleport"}', "UNKNOWN_TYPE"), ('{"data": {}}', "UNKNOWN_TYPE"),
                            ('{"type": "step"}', "VALIDATION_ERROR"), ('{"type": "step", "data": []}', "VALIDATION_ERROR"),
                            ('{"type": "step", "data": {"text": 5}}', "VALIDATION_ERROR"),
                            ('{"type": "step", "data": {"text": "a", "extra": 1}}', "VALIDATION_ERROR"),
                            ('{"type": "state", "data": {"x": 1}}', "VALIDATION_ERROR"),
                            ('{"type": "reset", "data": {"seed": -1}}', "EXECUTION_ERROR"),
                            ('{"type": "reset", "data": {"seed": 1, "env_kwargs": {"split": "x"}}}', "EXECUTION_ERROR"),
                            ('{"type": "reset", "data": {"seed": 1, "budget": "' + "9" * 5000 + 'x"}}', "EXECUTION_ERROR"),
                            (b"\x00binary", "INVALID_JSON")]:
            reply = ask(ws, frame)
            assert reply["type"] == "error" and reply["data"]["code"] == code, frame
            assert ask(ws, {"type": "state"}) == before, frame
        assert ask(ws, {"type": "step", "data": {"text": "hello"}})["type"] == "observation"


def test_oversized_requests_are_refused_and_change_nothing():
    with running(ServeConfig(FC, max_message_bytes=65536)) as server:
        with session(server.url, None) as ws:
            ask(ws, {"type": "reset", "data": {"seed": 0}})
            before = ask(ws, {"type": "state"})
            for text in ("x" * 70_000, json.dumps({"type": "step", "data": {"text": "é" * 40_000}},
                                                  ensure_ascii=False)):  # 70 kB; 80 kB in UTF-8
                reply = ask(ws, {"type": "step", "data": {"text": text}} if text.startswith("x") else text)
                assert reply["data"]["code"] == "MESSAGE_TOO_BIG"
                assert ask(ws, {"type": "state"}) == before
            ws.send(json.dumps({"type": "step", "data": {"text": "x" * 200_000}}))  # past the transport's limit
            with pytest.raises(ConnectionClosed) as err:
                ws.recv(timeout=30)
            assert err.value.rcvd.code == 1009
        for method, body, status in (("POST", b"x" * 70_000, 413), ("POST", b"{}", 405), ("PUT", b"", 405)):
            request = urllib.request.Request(server.url + "/budgetgym", data=body, method=method)
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(request, timeout=10)
            assert err.value.code == status
        assert json.loads(urllib.request.urlopen(server.url + "/budgetgym", timeout=10).read())["active_sessions"] == 0


def test_sessions_are_capped_and_a_freed_slot_is_reusable():
    with running(ServeConfig(FC, max_sessions=2)) as server:
        first, second = session(server.url, None), session(server.url, None)
        ask(first, {"type": "reset", "data": {"seed": 0}})
        ask(second, {"type": "reset", "data": {"seed": 0}})
        with session(server.url, None) as third:
            reply = json.loads(third.recv(timeout=30))
            assert reply["data"]["code"] == "CAPACITY_REACHED" and reply["data"]["max_sessions"] == 2
            with pytest.raises(ConnectionClosed) as err:
                third.recv(timeout=30)
            assert err.value.rcvd.code == 1013
        assert ask(first, {"type": "step", "data": {"text": "hi"}})["type"] == "observation"  # the others go on
        second.close()
        deadline = time.monotonic() + 30
        while json.loads(urllib.request.urlopen(server.url + "/budgetgym", timeout=10).read())["active_sessions"] > 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with session(server.url, None) as fourth:
            assert ask(fourth, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        first.close()


def test_an_idle_session_expires_with_one_clear_error():
    with running(ServeConfig(FC, idle_seconds=0.5)) as server:
        env = RemoteEnv(server.url, FC)
        env.reset(seed=0)
        time.sleep(1.5)
        with pytest.raises(ConnectionError, match="idle for 0.5 s.*episode is lost"):
            env.step("hello")
        with pytest.raises(ConnectionError, match="idle"):  # the same error again, no hang
            env.step("hello")
        assert json.loads(urllib.request.urlopen(server.url + "/budgetgym", timeout=10).read())["active_sessions"] == 0


def test_budgetgym_serve_killed_mid_episode_gives_the_client_one_clear_error():
    with child_server(FC, "--split", "test", env={"BUDGETGYM_SERVE_TOKEN": TOKEN}) as (process, url):
        env = gym.make("budgetgym/Remote-v0", url=url, env_id=FC, token=TOKEN)
        _, info = env.reset(seed=0)
        assert info["task_id"] in gym.make(FC, split="test").unwrapped.tasks.ids  # the server's --split
        env.step('{"name": "nothing", "arguments": {}}')
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        with pytest.raises(ConnectionError, match=f"server at {url} ended .*the episode is lost"):
            env.step("hello")
        with pytest.raises(ConnectionError, match="the episode is lost"):
            env.reset(seed=1)
        env.close()  # closing a lost session is quiet


def test_sixteen_sessions_at_once_run_without_an_error(server):
    errors: list[BaseException] = []
    steps = [0] * 16
    stop = time.monotonic() + 3.0

    def run(index: int) -> None:
        try:
            env = RemoteEnv(server.url, FC, token=TOKEN, budget_mix=[0.5, 1.0])
            try:
                seed = index * 1000
                _, info = env.reset(seed=seed)
                while time.monotonic() < stop:
                    _, _, terminated, truncated, info = env.step('{"name": "nothing", "arguments": {}}')
                    steps[index] += 1
                    assert info["action_valid"] is False
                    if terminated or truncated:
                        seed += 1
                        env.reset(seed=seed)
            finally:
                env.close()
        except BaseException as err:  # collected: a thread's failure must fail the test
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    assert all(n > 0 for n in steps)
    deadline = time.monotonic() + 30
    while json.loads(urllib.request.urlopen(urllib.request.Request(
            server.url + "/budgetgym", headers={"Authorization": f"Bearer {TOKEN}"}), timeout=10).read())["active_sessions"]:
        assert time.monotonic() < deadline  # every session's env is closed when its client leaves
        time.sleep(0.05)


class _SetInInfo(gym.Wrapper):
    """An env that breaks the contract: a step's info holds a set (JSON cannot carry it)."""

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, {**info, "broken": {1, 2}} if action == "break" else info


def _broken_env(**kwargs):
    from registered import TOY_ID

    return _SetInInfo(gym.make(TOY_ID, **kwargs))


BROKEN_ID = "budgetgym-test/BrokenInfo-v0"
if BROKEN_ID not in gym.registry:
    gym.register(BROKEN_ID, entry_point=_broken_env)


def test_an_env_whose_info_json_cannot_carry_gets_an_error_not_a_dead_session():
    with running(ServeConfig(BROKEN_ID)) as server:
        env = RemoteEnv(server.url, BROKEN_ID)
        env.reset(seed=0)
        with pytest.raises(Exception, match="JSON cannot carry"):
            env.step("break")
        assert env.step("add 1")[4]["action_valid"] is True  # the session goes on
        env.close()
