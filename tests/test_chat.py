"""budgetgym.chat: one rendering of an env as chat, for agents, trainers and exports."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.chat import (ChatView, action_from_message, assistant_message, messages_from_env,
                            messages_from_snapshot, system_prompt, text_env)
from budgetgym.wrappers import ErrorInjection, TurnBudget
from toy_env import CounterEnv

FC = "budgetgym/FunctionCalling-v0"


def _oracle_steps(env, n):
    for _ in range(n):
        env.step(env.unwrapped.oracle_action())


def test_native_view_has_openai_tool_calls_tool_roles_and_never_null_content():
    env = ChatView(gym.make(FC, split="test"), native=True)
    _, info = env.reset(seed=0, options={"task_index": 0})
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    _oracle_steps(env, 3)
    messages = messages_from_env(env, native=True)
    info_messages = env.step(env.unwrapped.oracle_action())[4]["messages"]
    assert messages == info_messages[: len(messages)]
    for message in info_messages:
        assert message["content"] is not None
    calls = [m for m in info_messages if m.get("tool_calls")]
    assert calls, "the oracle's tool calls are native calls"
    for message in calls:
        follower = info_messages[info_messages.index(message) + 1]
        assert follower["role"] == "tool" and follower["tool_call_id"] == message["tool_calls"][0]["id"]
        call = json.loads(action_from_message(message))
        assert set(call) == {"name", "arguments"}
    answers = [m for m in info_messages if m["role"] == "assistant" and not m.get("tool_calls")]
    for answer in answers:  # a message to the user is answered by the user
        assert info_messages[info_messages.index(answer) + 1]["role"] == "user"


def test_text_view_lists_the_tools_in_the_system_prompt_and_keeps_actions_as_text():
    env = ChatView(gym.make(FC, split="test"), native=False)
    _, info = env.reset(seed=0, options={"task_index": 1})
    system = info["messages"][0]["content"]
    assert "Tools:" in system and '{"name": "<tool>"' in system
    action = env.unwrapped.oracle_action()
    *_, info = env.step(action)
    assert info["messages"][-2] == {"role": "assistant", "content": action}
    assert info["messages"][-1]["role"] == "user"


def test_the_view_shows_what_the_wrappers_show():
    env = ChatView(TurnBudget(gym.make(FC, split="test"), budget=0.5, reveal="remaining"))
    observation, info = env.reset(seed=0, options={"task_index": 0})
    assert info["messages"][-1]["content"] == observation and "remaining" in observation.lower()
    observation, *_, info = env.step("Let me look.")
    assert info["messages"][-1]["content"] == observation


def test_an_injected_prefix_is_in_the_conversation():
    env = ChatView(ErrorInjection(gym.make(FC, split="test")), native=False)
    observation, info = env.reset(seed=0)
    base = text_env(env)
    assert len([m for m in info["messages"] if m["role"] == "assistant"]) == base.turn > 0
    assert info["messages"][-1]["content"] == observation


def test_messages_from_a_snapshot_equal_the_live_conversation():
    env = gym.make(FC, split="test")
    env.reset(seed=0, options={"task_index": 2})
    _oracle_steps(env, 2)
    snapshot = env.unwrapped.snapshot()
    live = messages_from_env(env, native=True)
    other = gym.make(FC, split="test")
    assert messages_from_snapshot(other, snapshot, native=True) == live


def test_action_from_message_reads_dicts_sdk_like_objects_and_bad_arguments():
    class Function:
        name = "add"
        arguments = '{"n": 2}'

    class Call:
        function = Function()

    class Message:
        tool_calls = [Call()]
        content = None

    assert json.loads(action_from_message(Message())) == {"name": "add", "arguments": {"n": 2}}
    assert action_from_message({"content": "hello"}) == "hello"
    assert action_from_message({"content": None}) == ""
    two = action_from_message({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}},
                                              {"function": {"name": "b", "arguments": "{not json"}}]})
    assert json.loads(two) == [{"name": "a", "arguments": {}}, {"name": "b", "arguments": "{not json"}]


def test_assistant_message_falls_back_to_text_for_messages_and_invalid_calls():
    env = CounterEnv()
    env.reset(options={"task_index": 0})
    assert assistant_message("hello", env, native=True, turn=0) == {"role": "assistant", "content": "hello"}
    assert assistant_message('{"name": "nope"}', env, native=True, turn=0)["content"] == '{"name": "nope"}'
    native = assistant_message('{"name": "add", "arguments": {"n": 1}}', env, native=True, turn=3)
    assert native["tool_calls"][0]["id"] == "call_3_0"
    assert system_prompt("Be brief.", [], native=False) == "Be brief."


def test_a_non_budgetgym_env_is_refused_clearly():
    with pytest.raises(TypeError, match="budgetgym text env"):
        ChatView(gym.make("CartPole-v1"))
