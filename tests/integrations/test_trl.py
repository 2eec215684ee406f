"""TRL's GRPOTrainer on budgetgym through ``environment_factory``: the adapter alone, then a few real
GRPO steps of a tiny causal LM made here (tokenizer trained on the suite's text, config-built model,
a short supervised warm-up on the oracle's Web-v0 episodes) on FunctionCalling-v0 and Web-v0."""

from __future__ import annotations

import math
import os

import pytest

import budgetgym
from budgetgym.integrations.episode import BudgetSpec
from budgetgym.integrations.trl import ACT_NOTE, OVER, TRLEnvironmentFactory, trl_rows
from budgetgym.core.budgets import read_reveal, resolve_cap

FC, NAV, WEB = "budgetgym/FunctionCalling-v0", "budgetgym/Navigation-v0", "budgetgym/Web-v0"
FC_TASKS = ["fc-banking-s0-0151", "fc-filesystem-s0-0076"]  # three oracle turns each: short chats
NAV_TASKS = ["nav-easy-000"]
WEB_TASKS = ["web-train-0000", "web-train-0001"]  # four oracle turns each
FC_MIX = (0.5, 1.0)


def _row(env_id, task_id, **extra):
    return {**trl_rows(env_id, split="train", task_ids=[task_id])[0], **extra}


def test_the_env_plays_the_oracle_to_the_reward_and_answers_after_the_end_without_a_step():
    factory = TRLEnvironmentFactory(BudgetSpec(budget="1.5x", reveal="remaining"))
    env = factory()
    row = _row(FC, FC_TASKS[0])
    assert row["prompt"][0]["content"].endswith(ACT_NOTE) and row["prompt"][1] == {"role": "user", "content": ""}
    first = env.reset(**row)
    cap = env.episode.budget["cap"]
    assert cap == resolve_cap("1.5x", row["full_budget"], row["oracle_turns"]) and read_reveal(first).remaining == cap
    while not env.episode.done:
        answer = env.act(env.episode.env.unwrapped.oracle_action() or "Done.")
    assert answer.endswith(OVER) and env.get_reward() == 1.0
    assert env.act("anything") == OVER  # no step after the end: the reward stays the env's
    record = factory.episodes[-1]
    assert record.success and record.calls_after_end == 1 and record.reward == 1.0 and record.cap == cap
    factory.close()


def test_a_cap_truncates_and_bad_arguments_cost_a_turn_without_raising():
    factory = TRLEnvironmentFactory(BudgetSpec(budget=2, reveal="none"))
    env = factory()
    env.reset(**_row(NAV, NAV_TASKS[0]))
    assert "Invalid" in env.act({"name": "no_such_tool", "arguments": {}})  # an object: played as its JSON
    last = env.act("\x00\ud800 go nowhere")
    assert last.endswith(OVER) and factory.episodes[-1].truncated and factory.episodes[-1].turns == 2
    assert env.get_reward() == 0.0
    with pytest.raises(ValueError, match="needs task_id"):
        env.reset(env_id=NAV)
    factory.close()


def test_attempts_of_a_group_draw_their_own_caps_and_a_second_pool_repeats_them():
    def caps(factory):
        envs = [factory() for _ in range(6)]
        row = _row(FC, FC_TASKS[0])
        for env in envs:
            env.reset(**row)
        factory.close()
        return [(e.seed, e.cap, e.drawn) for e in factory.episodes]

    first = caps(TRLEnvironmentFactory(BudgetSpec(mix=FC_MIX, reveal="remaining")))
    assert first == caps(TRLEnvironmentFactory(BudgetSpec(mix=FC_MIX, reveal="remaining")))
    assert len({seed for seed, _, _ in first}) == 6 and {drawn for _, _, drawn in first} == set(FC_MIX)


def test_the_act_tool_is_the_only_tool_trl_sees():
    import inspect

    from budgetgym.integrations.trl import BudgetgymTRLEnv

    public = [name for name, _ in inspect.getmembers(BudgetgymTRLEnv, predicate=inspect.isfunction)
              if not name.startswith("_")]
    assert sorted(public) == ["act", "get_reward", "reset"]


# ------------------------------------------------------------------ GRPO, end to end


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from budgetgym.train import lm

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    budget = BudgetSpec(budget="1.5x", reveal="remaining")
    # The tokenizer learns both families' text; the warm-up is the oracle's Web-v0 episodes only, so that
    # in CI's time the model writes act calls and its sampled attempts reach different progress.
    fc_chats = lm.scripted_conversations([FC], agent_p=0.3, task_ids=FC_TASKS, episodes_per_task=2, budget=budget)
    web_chats = lm.scripted_conversations([WEB], agent_p=0.0, task_ids=WEB_TASKS, episodes_per_task=2, budget=budget)
    model_dir = lm.make_tiny_lm(tmp_path_factory.mktemp("tiny-lm"), fc_chats + web_chats, size="tiny")
    model, tokenizer = lm.load(model_dir)
    lm.supervised_fine_tune(model, tokenizer, web_chats, steps=100, batch_size=2, learning_rate=5e-3, max_length=2048)
    return model, tokenizer


def test_grpo_steps_train_on_the_envs_rewards_and_caps(tiny_lm, tmp_path, monkeypatch):
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = tiny_lm
    # In order (no shuffling, two prompts a step): every step has a Web-v0 group and a FunctionCalling-v0 group.
    rows = [_row(env_id, task, environment=name) for pair in zip(WEB_TASKS, FC_TASKS)
            for env_id, task, name in zip((WEB, FC), pair, ("web", "fc"))]
    fc = TRLEnvironmentFactory(BudgetSpec(mix=FC_MIX, reveal="remaining"))
    web = TRLEnvironmentFactory(BudgetSpec(budget="1.5x", reveal="remaining"), reward_mode="progress")
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=8, num_generations=4,
                      max_completion_length=384, max_steps=3, logging_steps=1, report_to="none", learning_rate=2e-3,
                      save_strategy="no", temperature=0.7, max_tool_calling_iterations=6, seed=0, beta=0.0,
                      shuffle_dataset=False)

    batches = []  # per logged step: the episodes the envs played for it, and the trainer's log

    class Batches(TrainerCallback):
        seen = {"fc": 0, "web": 0}

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "rewards/BudgetgymTRLEnv/mean" in logs:
                new = fc.episodes[self.seen["fc"]:] + web.episodes[self.seen["web"]:]
                self.seen = {"fc": len(fc.episodes), "web": len(web.episodes)}
                batches.append((new, dict(logs)))

    trainer = GRPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                          environment_factory={"fc": fc, "web": web}, callbacks=[Batches()])
    trainer.train()
    assert len(batches) == 3
    for batch, logs in batches:  # the trainer's reward is the mean of what the envs paid for its rollouts
        assert len(batch) == 8
        assert logs["rewards/BudgetgymTRLEnv/mean"] == pytest.approx(sum(e.reward for e in batch) / 8, abs=1e-6)
        assert math.isfinite(logs["loss"])
    played = fc.episodes + web.episodes
    assert {e.env_id for e in played} == {FC, WEB}
    assert any(e.actions for e in played), [logs for _, logs in batches]
    for record in played:  # replayed in a fresh env: the same cap, rewards and end
        env = BudgetSpec(mix=FC_MIX if record.env_id == FC else None, budget=None if record.env_id == FC else "1.5x",
                         reveal="remaining").make(record.env_id, split="train",
                                                  **({"reward_mode": "progress"} if record.env_id == WEB else {}))
        _, info = env.reset(seed=record.seed, options={"task_id": record.task_id})
        assert info["budget"]["cap"] == record.cap
        if record.env_id == WEB:
            assert record.cap == resolve_cap("1.5x", info["full_budget"], info["oracle_turns"])
        else:
            assert record.drawn in FC_MIX and record.cap == resolve_cap(record.drawn, info["full_budget"], None)
        rewards, end = [], (False, False)
        for action in record.actions:
            _, reward, terminated, truncated, _ = env.step(action)
            rewards.append(reward)
            end = (terminated, truncated)
        env.close()
        assert rewards == record.rewards and end == (record.terminated, record.truncated)
        assert record.turns <= record.cap
    assert any(logs["grad_norm"] > 0 for _, logs in batches)
    changed = sum(float((p.detach() - before[name]).abs().sum()) for name, p in model.named_parameters())
    assert changed > 0 and all(torch.isfinite(p).all() for p in model.parameters())
    fc.close()
    web.close()


def test_the_model_as_an_evaluation_agent_plays_what_its_act_calls_say(tiny_lm):
    from budgetgym.core.rollout import rollout
    from budgetgym.train.lm import LMAgent

    model, tokenizer = tiny_lm
    agent = LMAgent(model, tokenizer, name="tiny", temperature=1.0, max_new_tokens=48)
    env = budgetgym.make(WEB, budget=3, reveal="remaining", split="train")
    observation, info = env.reset(seed=0, options={"task_id": WEB_TASKS[0]})
    agent.reset(env, observation, info, seed=0)
    played = rollout(env, lambda o, i, e: agent.act(o, i), start=(observation, info))
    agent.act(played.steps[-1].observation, played.steps[-1].info)  # one more reply: the last action enters the chat
    calls = [m["tool_calls"][0]["function"]["arguments"]["action"] for m in agent.messages if m.get("tool_calls")]
    assert calls == [step.action for step in played.steps] and played.turns == 3
    assert agent.messages[1]["content"] == observation and agent.stats["tokens"] > 0
    env.close()
