"""ChatEpisode, the engine under the adapters, and the oracle chat policy."""

import json

import pytest

from budgetgym.chat import system_prompt
from budgetgym.integrations import BudgetSpec, ChatEpisode, OracleChatPolicy
from budgetgym.integrations.episode import STALL_ACTION


def test_text_mode_conversation_and_the_end(probe):
    episode = ChatEpisode(probe.env_id, BudgetSpec(budget=probe.oracle_turns, reveal="total"), split=probe.split)
    messages, info = episode.start(probe.task_id, seed=0)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == system_prompt(episode.env.unwrapped.instructions, info["tools"], native=False)
    assert {k: episode.budget[k] for k in ("unit", "cap", "remaining", "reveal")} == {
        "unit": "turns", "cap": probe.oracle_turns, "remaining": probe.oracle_turns, "reveal": "total"}
    assert episode.budget["used"]["turns"] == 0
    policy = OracleChatPolicy(probe.env_id, probe.task_id, 0, split=probe.split)
    conversation = list(messages)
    while not episode.done:
        reply = policy(conversation)
        step = episode.act(reply)
        assert [m["role"] for m in step.messages] == ["user"]  # text mode: every answer is a user message
        conversation += [{"role": "assistant", "content": reply}, *step.messages]
    assert conversation == episode.messages
    assert step.terminated and not step.truncated and step.reward == 1.0 == episode.total_reward
    assert episode.success and episode.budget["remaining"] == 0
    with pytest.raises(RuntimeError, match="over"):
        episode.act(reply)
    episode.close()
    policy.close()


def test_native_mode_answers_tool_calls_with_tool_messages():
    episode = ChatEpisode("budgetgym/FunctionCalling-v0", native=True, split="test")
    episode.start("fc-curated-filesystem-project-cleanup", seed=0)
    assert "Tools:" not in episode.messages[0]["content"]
    completion = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "list_directory", "arguments": json.dumps({"path": "/"})}}]}
    step = episode.act(completion)  # a chat-completion message, as a server returns it
    assert [m["role"] for m in step.messages] == ["tool"] and "projects" in step.messages[0]["content"]
    assert step.messages[0]["tool_call_id"] == "x"  # the model's own id, so its next prompt pairs up
    assert episode.budget["cap"] == episode.info["full_budget"]  # no cap set: the full budget
    episode.close()


def test_stalling_costs_the_turn_and_a_mix_draws_from_the_seed():
    episode = ChatEpisode("budgetgym/FunctionCalling-v0", BudgetSpec(mix=(0.25, 1.0)), split="test")
    drawn = set()
    for seed in range(8):
        episode.start("fc-curated-filesystem-project-cleanup", seed=seed)
        drawn.add(episode.budget["drawn"])
        step = episode.act(STALL_ACTION)
        assert step.info["action_valid"] is False and step.reward == 0.0
    assert drawn == {0.25, 1.0}
    episode.close()


@pytest.mark.parametrize("kwargs, message", [
    ({"budget": 3, "mix": (0.5,)}, "one of a budget, a budget mix and a schedule"),
    ({"budget": 0}, "must be >= 1"),
    ({"reveal": "loud"}, "reveal must be one of"),
])
def test_bad_budgets_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BudgetSpec(**kwargs)


def test_budget_from_a_trainer_config():
    assert BudgetSpec.from_config(None) == BudgetSpec()
    assert BudgetSpec.from_config({"budget_mix": [0.5, 1.0], "reveal": "remaining"}) == BudgetSpec(
        mix=(0.5, 1.0), reveal="remaining")

    class Section:
        budget = 0.5
        reveal = "total"

    assert BudgetSpec.from_config(Section()) == BudgetSpec(budget=0.5, reveal="total")
