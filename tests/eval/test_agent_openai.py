import json
import pickle
import socket

import gymnasium as gym
import pytest

from budgetgym.eval.agents import AgentError, OpenAIChatAgent
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.executors import ProcessExecutor, ThreadExecutor
from budgetgym.eval.sweep import run_sweep
from budgetgym.eval.episode_log import read_records
from chat_server import API_KEY, MODEL, ChatServer, blind_counter_solver, completion, counter_solver, error
from eval_support import TOY_ID
from toy_env import ParallelCounterEnv

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
        result = play_episode(ParallelCounterEnv(), agent_for(server), seed=0, options={"task_id": "toy-03"})
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
        result = play_episode(gym.make(TOY_ID), agent_for(server, max_retries=3), seed=0,
                              options={"task_id": "toy-00"})
    assert result.success and len(server.requests) == 4


def test_a_stalled_server_costs_its_retries_then_one_clear_line():
    with ChatServer() as server:
        server.stall().stall()
        with pytest.raises(AgentError, match=r"did not answer within 0.2 s, 2 tries in a row.*--timeout") as err:
            play_episode(gym.make(TOY_ID), agent_for(server, timeout=0.2, max_retries=1), seed=0,
                         options={"task_id": "toy-00"})
    assert len(server.requests) == 2 and "\n" not in str(err.value)


def test_the_defaults_bound_a_stalled_turn_to_about_a_minute():
    agent = OpenAIChatAgent(MODEL)
    tries = agent.max_retries + 1
    assert tries * agent.timeout + agent.backoff * (2 ** agent.max_retries - 1) <= 75


@pytest.mark.parametrize("mode", ["native", "text"])
def test_a_streamed_reply_plays_as_the_whole_one(mode):
    """The test server sends the reply as server-sent events (one delta, the finish, the usage)."""
    reply = completion(tool_calls=[("add", {"n": 3})]) if mode == "native" else \
        completion('<tool_call>{"name": "add", "arguments": {"n": 3}}</tool_call>')
    with ChatServer() as server:
        server.reply(reply).reply(reply)
        agent = agent_for(server, tool_mode=mode, stream=True)
        result = play_episode(gym.make(TOY_ID), agent, seed=0, options={"task_id": "toy-04"})
    assert result.success and result.turns == 2
    assert all(request["stream"] is True for request in server.requests)
    assert agent.last_turn["completion_tokens"] == reply["usage"]["completion_tokens"]
    if mode == "native":
        assert server.requests[1]["messages"][2]["tool_calls"][0]["function"] == {"name": "add",
                                                                                  "arguments": '{"n": 3}'}


def test_persistent_server_errors_give_up_with_a_clear_error():
    with ChatServer() as server:
        for _ in range(3):
            server.reply(error("internal"), 500)
        with pytest.raises(AgentError, match="kept failing after 3 tries"):
            play_episode(gym.make(TOY_ID), agent_for(server, max_retries=2), seed=0, options={"task_id": "toy-00"})
    assert len(server.requests) == 3


def test_a_refused_connection_fails_at_once_with_the_url_and_a_hint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # A retry would sleep for an hour: the test finishing at all shows there was none.
    agent = OpenAIChatAgent(MODEL, base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=3,
                            backoff=3600)
    with pytest.raises(AgentError, match=f"cannot connect to http://127.0.0.1:{port}/v1: the connection was "
                                         "refused.*--base-url"):
        play_episode(gym.make(TOY_ID), agent, seed=0, options={"task_id": "toy-00"})


def test_llama_server_takes_the_replayed_tool_call_message():
    # llama-cpp-python answers "content": null with a 500 validation error; the agent sends "".
    with ChatServer(responder=counter_solver, llama=True) as server:
        result = play_episode(gym.make(TOY_ID), agent_for(server, tool_mode="native"), seed=0,
                              options={"task_id": "toy-04"})
    assert result.success and result.turns == 2
    replayed = server.requests[1]["messages"][2]
    assert replayed["role"] == "assistant" and replayed["content"] == "" and replayed["tool_calls"]


def test_a_validation_error_is_permanent_whatever_its_status():
    from chat_server import llama_validation_error

    with ChatServer() as server:
        server.reply(llama_validation_error(2), 500)
        # Backoff of an hour: a retry would never finish.
        with pytest.raises(AgentError, match=r"rejected the request as invalid \(HTTP 500\): 1 validation error"):
            play_episode(gym.make(TOY_ID), agent_for(server, backoff=3600), seed=0, options={"task_id": "toy-00"})
        server.reply(error("Field required: messages.1.content"), 422)
        with pytest.raises(AgentError, match=r"invalid \(HTTP 422\)"):
            play_episode(gym.make(TOY_ID), agent_for(server, backoff=3600), seed=0, options={"task_id": "toy-00"})
    assert len(server.requests) == 2


def test_auto_mode_falls_back_to_text_when_the_server_drops_tools(tmp_path):
    # llama-cpp-python's default chat format takes `tools` and drops them: the model chats. Before the
    # sweep the agent asks the server once to call a tool, gets none, switches to text mode and warns;
    # every worker then plays in text mode, and the sweep completes.
    with ChatServer(responder=blind_counter_solver, llama=True, drop_tools=True) as server:
        agent = agent_for(server)
        with pytest.warns(RuntimeWarning, match="answered a request to call one without a tool call"):
            result = run_sweep(TOY_ID, agent, tasks="test", k=(1, 2), budgets=("1x", 1.0), seed=0,
                               executor=ThreadExecutor(4), out=tmp_path / "episodes.jsonl")
    assert len(result.records) == 10 and all(r["success"] for r in result.records)
    assert all(s["mode"] == "text" and s["valid"] for r in result.records for s in r["steps"])
    assert "tools" in server.requests[0] and all("tools" not in r for r in server.requests[1:])
    assert "Tools:" in server.requests[-1]["messages"][0]["content"]
    assert "--tool-mode text" in agent.fallback_reason


def test_auto_mode_keeps_native_tools_where_the_server_honours_them(tmp_path):
    with ChatServer(responder=blind_counter_solver, llama=True) as server:
        agent = agent_for(server)
        result = run_sweep(TOY_ID, agent, tasks="test", k=1, budgets=(1.0,), out=tmp_path / "episodes.jsonl")
    assert all(r["success"] for r in result.records) and agent.fallback_reason is None
    assert all(s["mode"] == "native" for r in result.records for s in r["steps"])


def test_an_episode_without_a_tool_call_also_switches_to_text(tmp_path):
    # Without the check before a sweep (an agent used directly), a whole episode with native tools and
    # no tool call in any reply switches the agent to text mode for the following episodes.
    with ChatServer(responder=blind_counter_solver, llama=True, drop_tools=True) as server:
        agent = agent_for(server)
        env = gym.make(TOY_ID)
        first = play_episode(env, agent, seed=0, options={"task_id": "toy-04"})
        with pytest.warns(RuntimeWarning, match="no tool call in any reply of a whole episode"):
            second = play_episode(env, agent, seed=0, options={"task_id": "toy-04"})
    assert not first.success and {s["mode"] for s in first.steps} == {"native"}
    assert second.success and {s["mode"] for s in second.steps} == {"text"}


def test_episodes_record_each_turn_and_the_agent_configuration(tmp_path):
    with ChatServer(responder=counter_solver) as server:
        agent = agent_for(server, tool_mode="native", temperature=0.3, max_tokens=64)
        result = run_sweep(TOY_ID, agent, tasks=["toy-04"], k=1, budgets=(1.0,), out=tmp_path / "e.jsonl")
        record = result.records[0]
        assert record["agent_config"] == {"name": "openai", "model": MODEL, "base_url": server.url,
                                          "temperature": 0.3, "max_tokens": 64, "tool_mode": "native",
                                          "send_seed": True}
        assert len(record["steps"]) == record["turns"] == 2
        for step in record["steps"]:
            assert step["valid"] is True and step["error"] is None and step["mode"] == "native"
            assert step["prompt_tokens"] == 1 and step["completion_tokens"] == 1 and step["latency_s"] >= 0
        # A rerun with another temperature would report the old results as its own: refused, naming it.
        hotter = agent_for(server, tool_mode="native", temperature=1.0, max_tokens=64)
        with pytest.raises(ValueError, match=r"another configuration.*temperature: 0\.3 -> 1\.0"):
            run_sweep(TOY_ID, hotter, tasks=["toy-04"], k=1, budgets=(1.0,), out=tmp_path / "e.jsonl")


def test_invalid_actions_are_recorded_with_their_error(tmp_path):
    with ChatServer() as server:
        server.reply(completion("add(n=9)")).reply(completion("add(3)")).reply(completion("add(3)"))
        result = run_sweep(TOY_ID, agent_for(server, tool_mode="text"), tasks=["toy-04"], k=1, budgets=(1.0,),
                           out=tmp_path / "e.jsonl")
    bad, good, _ = result.records[0]["steps"]
    assert bad["valid"] is False and "maximum" in bad["error"] and bad["mode"] == "text"
    assert good["valid"] is True and good["error"] is None


def test_a_lone_surrogate_from_the_server_round_trips_through_the_episode_file(tmp_path):
    with ChatServer() as server:
        server.reply('{"id": "x", "object": "chat.completion", "created": 0, "model": "toy-model", "choices": '
                     '[{"index": 0, "message": {"role": "assistant", "content": "add(1) \\ud800"}, '
                     '"finish_reason": "stop"}]}')
        server.reply(completion("add(3)")).reply(completion("add(3)"))
        result = run_sweep(TOY_ID, agent_for(server, tool_mode="text"), tasks=["toy-04"], k=1, budgets=(1.0,),
                           out=tmp_path / "e.jsonl")
    assert result.records[0]["actions"][0] == "add(1) \ud800" and result.records[0]["success"]
    assert "\ufffd" in server.requests[1]["messages"][2]["content"]  # what UTF-8 can carry
    assert read_records(tmp_path / "e.jsonl") == result.records


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

    def without_latency(name):  # the one field that is measured, not computed
        records = read_records(tmp_path / name)
        for record in records:
            for step in record["steps"]:
                assert step.pop("latency_s") >= 0
        return records

    assert without_latency("serial.jsonl") == without_latency("processes.jsonl") == without_latency("threads.jsonl")
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


def test_the_recorded_base_url_keeps_no_secrets():
    from budgetgym.eval.agents.openai_chat import public_url

    assert public_url("https://user:s3cret@api.example.com:8443/v1?key=abc#frag") == "https://api.example.com:8443/v1"
    agent = OpenAIChatAgent(MODEL, base_url="http://me:pw@127.0.0.1:8000/v1?token=t", api_key="sk-secret")
    assert "pw" not in json.dumps(agent.config) and "sk-secret" not in json.dumps(agent.config)
    assert agent.config["base_url"] == "http://127.0.0.1:8000/v1"
