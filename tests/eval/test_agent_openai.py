import json
import pickle
import socket

import gymnasium as gym
import pytest

from budgetgym.eval.agents import AgentError, OpenAIChatAgent
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.executors import ProcessExecutor, ThreadExecutor
from budgetgym.eval.sweep import run_sweep
from chat_server import API_KEY, MODEL, ChatServer, completion, counter_solver, error
from eval_support import TOY_ID

pytest.importorskip("openai")


def agent_for(server: ChatServer, **options) -> OpenAIChatAgent:
    options.setdefault("backoff", 0.001)
    return OpenAIChatAgent(MODEL, base_url=server.url, api_key=API_KEY, **options)


def test_native_tool_calls_play_an_episode():
    with ChatServer() as server:
        server.reply(completion(tool_calls=[("add", {"n": 3})])).reply(completion(tool_calls=[("add", {"n": 3})]))
        env = gym.make(TOY_ID)
        result = play_episode(env, agent_for(server, temperature=0.2), seed=9, options={"task_id": "toy-04"})
    assert result.success and result.turns == 2
    assert json.loads(result.actions[0]) == {"name": "add", "arguments": {"n": 3}}
    first, second = server.requests
    assert {t["function"]["name"] for t in first["tools"]} == {"add", "say"}
    assert first["temperature"] == 0.2 and first["seed"] == 9
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "Reach 6." in first["messages"][1]["content"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "add"
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "Counter: 3."}


def test_several_tool_calls_in_one_turn():
    with ChatServer() as server:
        server.reply(completion(tool_calls=[("add", {"n": 3}), ("add", {"n": 2})]))
        result = play_episode(gym.make(TOY_ID), agent_for(server), seed=0, options={"task_id": "toy-03"})
    assert result.success and result.turns == 1
    assert json.loads(result.actions[0]) == [{"name": "add", "arguments": {"n": 3}},
                                             {"name": "add", "arguments": {"n": 2}}]


def test_text_mode_puts_the_tools_in_the_prompt():
    reply = 'I need 6, so I add 3.\n<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>'
    with ChatServer() as server:
        server.reply(completion(reply)).reply(completion(reply))
        result = play_episode(gym.make(TOY_ID), agent_for(server, tool_mode="text"), seed=0,
                              options={"task_id": "toy-04"})
    assert result.success
    assert all("tools" not in request for request in server.requests)
    system = server.requests[0]["messages"][0]["content"]
    assert "add: Add n to the counter." in system and '"maximum": 3' in system and "<tool_call>" in system
    assert server.requests[1]["messages"][2] == {"role": "assistant", "content": reply}


def test_auto_mode_falls_back_to_text_when_the_server_refuses_tools():
    with ChatServer() as server:
        server.reply(error('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'), 400)
        server.reply(completion("add(3)")).reply(completion("add(3)"))
        agent = agent_for(server)
        result = play_episode(gym.make(TOY_ID), agent, seed=0, options={"task_id": "toy-04"})
    assert result.success
    assert "tools" in server.requests[0] and "tools" not in server.requests[1] and "tools" not in server.requests[2]
    assert "Tools:" in server.requests[1]["messages"][0]["content"]
    assert not agent.native


def test_server_errors_are_retried():
    with ChatServer() as server:
        server.reply(error("overloaded"), 500).reply(error("unavailable"), 503).reply(error("slow down"), 429)
        server.reply(completion(tool_calls=[("add", {"n": 2})]))
        result = play_episode(gym.make(TOY_ID), agent_for(server), seed=0, options={"task_id": "toy-00"})
    assert result.success and len(server.requests) == 4


def test_persistent_server_errors_give_up_with_a_clear_error():
    with ChatServer() as server:
        for _ in range(3):
            server.reply(error("internal"), 500)
        with pytest.raises(AgentError, match="kept failing after 3 tries"):
            play_episode(gym.make(TOY_ID), agent_for(server, max_retries=2), seed=0, options={"task_id": "toy-00"})
    assert len(server.requests) == 3


def test_server_down():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    agent = OpenAIChatAgent(MODEL, base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=1,
                            backoff=0.001)
    with pytest.raises(AgentError, match="cannot reach http://127.0.0.1:.* is the server running"):
        play_episode(gym.make(TOY_ID), agent, seed=0, options={"task_id": "toy-00"})


def test_wrong_key_model_and_url_fail_at_once():
    with ChatServer() as server:
        env = gym.make(TOY_ID)
        bad_key = OpenAIChatAgent(MODEL, base_url=server.url, api_key="wrong", backoff=0.001)
        with pytest.raises(AgentError, match="refused the API key"):
            play_episode(env, bad_key, seed=0, options={"task_id": "toy-00"})
        bad_model = OpenAIChatAgent("no-such-model", base_url=server.url, api_key=API_KEY, backoff=0.001)
        with pytest.raises(AgentError, match="model 'no-such-model'.*/v1"):
            play_episode(env, bad_model, seed=0, options={"task_id": "toy-00"})
        bad_url = OpenAIChatAgent(MODEL, base_url=server.url.removesuffix("/v1"), api_key=API_KEY, backoff=0.001)
        with pytest.raises(AgentError, match="404.*base URL"):
            play_episode(env, bad_url, seed=0, options={"task_id": "toy-00"})
    assert len(server.requests) == 0  # none of them was retried, and none reached the scripted replies


@pytest.mark.parametrize("malformed", ["this is not JSON", {"choices": []}, {"choices": [{"index": 0}]}, {"id": "x"}])
def test_malformed_replies_are_retried_then_reported(malformed):
    with ChatServer() as server:
        server.reply(malformed).reply(completion(tool_calls=[("add", {"n": 2})]))
        result = play_episode(gym.make(TOY_ID), agent_for(server), seed=0, options={"task_id": "toy-00"})
        assert result.success
        for _ in range(3):
            server.reply(malformed)
        with pytest.raises(AgentError, match="malformed reply"):
            play_episode(gym.make(TOY_ID), agent_for(server, max_retries=2), seed=0, options={"task_id": "toy-00"})


def test_malformed_tool_arguments_are_the_models_mistake_not_a_crash():
    with ChatServer() as server:
        server.reply(completion(tool_calls=[("add", "{n: 3")])).reply(completion(tool_calls=[("add", {"n": 2})]))
        env = gym.make(TOY_ID)
        agent = agent_for(server)
        observation, info = env.reset(seed=0, options={"task_id": "toy-00"})
        agent.reset(env, observation, info, seed=0)
        observation, _, _, _, info = env.step(agent.act(observation, info))
        assert info["action_valid"] is False and "not valid JSON" in observation
        observation, _, terminated, _, info = env.step(agent.act(observation, info))
        assert terminated and info["success"]
    assert server.requests[1]["messages"][3]["content"].startswith("Invalid action")


def test_a_restored_state_is_shown_as_the_models_own_history():
    env = gym.make(TOY_ID)
    env.reset(seed=4, options={"task_id": "toy-04"})
    env.step("say(text='hello')")
    snapshot = env.unwrapped.snapshot()
    with ChatServer() as server:
        server.reply(completion(tool_calls=[("add", {"n": 3})])).reply(completion(tool_calls=[("add", {"n": 3})]))
        result = play_episode(env, agent_for(server), seed=4, options={"snapshot": snapshot})
    assert result.success and result.turns == 2
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "say(text='hello')" and messages[3]["content"] == "You said 'hello'."


def test_the_agent_pickles_without_its_client():
    with ChatServer() as server:
        server.reply(completion(tool_calls=[("add", {"n": 2})]))
        agent = agent_for(server)
        play_episode(gym.make(TOY_ID), agent, seed=0, options={"task_id": "toy-00"})
        assert agent._client is not None
        copy = pickle.loads(pickle.dumps(agent))
        assert copy._client is None and copy.base_url == server.url


def test_a_sweep_through_the_server_is_the_same_on_processes_and_threads(tmp_path):
    with ChatServer(responder=counter_solver) as server:
        agent = agent_for(server, tool_mode="native")
        sweep = dict(tasks=5, k=(1, 2), budgets=(0.5, 1.0), seed=1)
        serial = run_sweep(TOY_ID, agent, out=tmp_path / "serial.jsonl", **sweep)
        run_sweep(TOY_ID, agent, out=tmp_path / "processes.jsonl", executor=ProcessExecutor(2), **sweep)
        run_sweep(TOY_ID, agent, out=tmp_path / "threads.jsonl", executor=ThreadExecutor(4), **sweep)
    assert all(r["success"] for r in serial.records) and serial.records[0]["agent"] == f"openai:{MODEL}"
    assert (tmp_path / "serial.jsonl").read_bytes() == (tmp_path / "processes.jsonl").read_bytes()
    assert (tmp_path / "serial.jsonl").read_bytes() == (tmp_path / "threads.jsonl").read_bytes()
    assert len(server.requests) == 3 * sum(r["turns"] for r in serial.records)


def test_tools_that_change_mid_episode_reach_the_model():
    extra = {"type": "function", "function": {"name": "reset_counter", "description": "Set the counter to 0.",
                                              "parameters": {"type": "object", "properties": {}}}}
    with ChatServer() as server:
        for _ in range(4):
            server.reply(completion("add(1)"))
        for mode in ("native", "text"):
            env = gym.make(TOY_ID)
            agent = agent_for(server, tool_mode=mode)
            observation, info = env.reset(seed=0, options={"task_id": "toy-04"})
            agent.reset(env, observation, info, seed=0)
            agent.act(observation, info)
            agent.act("Counter: 1.", {**info, "tools": info["tools"] + [extra]})
    native_first, native_second, text_first, text_second = server.requests
    assert "reset_counter" not in json.dumps(native_first["tools"])
    assert "reset_counter" in json.dumps(native_second["tools"])
    assert "reset_counter" not in text_first["messages"][0]["content"]
    assert "reset_counter" in text_second["messages"][0]["content"]
