"""The study in miniature: the learner really learns, and the report's numbers are the files'."""

from __future__ import annotations

import json

import numpy as np
import pytest

import budgetgym  # noqa: F401
from budgetgym.core.tasks import load_tasks
from budgetgym.eval.metrics import difference_grid
from budgetgym.eval.sweep import run_sweep
from budgetgym.train.features import read_budget
from budgetgym.train.grpo import TrainConfig, train
from budgetgym.train.policy import LinearSoftmaxPolicy
from budgetgym.train.study import StudyConfig, run_study, summarize_study

FC = "budgetgym/FunctionCalling-v0"


@pytest.mark.parametrize("reward", ["sparse", "oracle-distance"])
def test_group_relative_training_beats_the_base_on_its_training_tasks(tmp_path, reward):
    # FunctionCalling steps in microseconds, so a real learning signal fits in a test: candidates
    # are the oracle's action among the family's proposed mistakes, the reward is the env's own
    # (issue 28: the learner trains with the oracle-distance shaping as with the sparse reward).
    config = TrainConfig(FC, "full", iterations=16, tasks_per_iteration=8, group_size=6, learning_rate=1.0, seed=1,
                         reward=reward)
    trained = train(config, tmp_path / "run", name="trained")
    tasks = [t.id for t in load_tasks("function_calling") if t.split == "train"][:80]
    base = run_sweep(FC, LinearSoftmaxPolicy.base(), tasks=tasks, k=1, budgets=(1.0,), n=6, seed=7).records
    after = run_sweep(FC, trained, tasks=tasks, k=1, budgets=(1.0,), n=6, seed=7).records
    cell = difference_grid(base, after, [1.0], [1])[0]
    assert cell.ci_low > 0, cell  # Pass@1 at full budget: trained minus base, beyond its interval
    curve = [json.loads(line) for line in (tmp_path / "run" / "curve.jsonl").read_text().splitlines()]
    assert [row["iteration"] for row in curve] == list(range(16))


def test_training_pays_the_chosen_reward_and_counts_success_from_the_env(tmp_path):
    with pytest.raises(ValueError, match="reward must be one of"):
        TrainConfig(FC, "full", reward="dense")
    with pytest.raises(ValueError, match="reward_mode"):
        TrainConfig(FC, "full", env_kwargs={"split": "train", "reward_mode": "progress"})
    from budgetgym.core.env import text_env
    from budgetgym.train.grpo import training_env

    assert text_env(training_env(FC, "mix", "milestone")).reward_mode == "progress"
    curves = {}
    for reward in ("sparse", "milestone"):
        train(TrainConfig(FC, "full", iterations=2, tasks_per_iteration=4, group_size=3, reward=reward, seed=3),
              tmp_path / reward)
        curves[reward] = [json.loads(line) for line in (tmp_path / reward / "curve.jsonl").read_text().splitlines()]
    # The first iteration plays the same episodes under both rewards (same weights, same seeds): the same
    # successes, counted from the env's success, while the returns differ (milestones pay before the end).
    assert curves["sparse"][0]["success_rate"] == curves["milestone"][0]["success_rate"]
    assert curves["sparse"][0]["mean_reward"] != curves["milestone"][0]["mean_reward"]


def test_training_resumes_to_the_same_weights_and_refuses_a_changed_configuration(tmp_path):
    config = TrainConfig(FC, "mix", iterations=4, tasks_per_iteration=3, group_size=3, checkpoint_every=2)
    whole = train(config, tmp_path / "whole")

    class Interrupted(Exception):
        pass

    def stop_at_third(row):
        if row["iteration"] == 2:
            raise Interrupted  # a kill after the iteration-2 checkpoint, mid-way through the next one

    with pytest.raises(Interrupted):
        train(config, tmp_path / "resumed", progress=stop_at_third)
    assert json.loads((tmp_path / "resumed" / "state.json").read_text())["iteration"] == 2
    resumed = train(config, tmp_path / "resumed")
    assert np.array_equal(resumed.weights, whole.weights)
    assert (tmp_path / "resumed" / "curve.jsonl").read_text() == (tmp_path / "whole" / "curve.jsonl").read_text()
    with pytest.raises(ValueError, match="another configuration"):
        train(TrainConfig(FC, "mix", iterations=4, tasks_per_iteration=3, group_size=3, checkpoint_every=2,
                          learning_rate=0.1), tmp_path / "whole")


def test_the_policy_reads_the_budget_from_the_text_only():
    assert read_budget("You see a door.\n\n[Turns remaining: 3 of 12]", "", 0).bucket() == "q1"
    assert read_budget("x", "Start.\n\n[Turn budget: you have 10 turns in total.]", 9).remaining == 1
    assert read_budget("x", "Start.", 5).bucket() == "unk"


def test_the_study_writes_a_report_whose_numbers_are_recomputed_from_its_files(tmp_path):
    config = StudyConfig.quick()
    summary = run_study(tmp_path, config, log=lambda message: None)
    saved = json.loads((tmp_path / "summary.json").read_text())
    assert json.loads(json.dumps(summarize_study(tmp_path, config), sort_keys=True)) == saved
    report = (tmp_path / "report.md").read_text()
    for claim in summary["claims"]:
        assert f"## Claim {claim['claim']}" in report and claim["verdict"] in report
    for name in ("base", "full", "mix"):
        assert (tmp_path / f"episodes-{name}.jsonl").exists()
    assert (tmp_path / "pass_by_budget.png").stat().st_size > 0
    # A second run resumes: nothing is trained or played again, and the report is the same.
    again = run_study(tmp_path, config, log=lambda message: None)
    assert json.loads(json.dumps(again, sort_keys=True)) == saved


# ------------------------------------------------------------------ the verdict rules, on made-up numbers


def _cells(budgets, ks, value, low, high):
    return [{"budget": b, "k": k, "pass": value(b, k), "ci_low": low(b, k), "ci_high": high(b, k), "tasks": 40}
            for b in budgets for k in ks]


def _summary(*, edge_tight=(0.05, -0.05, 0.15), quality_rows=None, recovery=None):
    budgets, ks = [0.5, 1.0], [1, 4]
    wide = (0.3, 0.2, 0.4)

    def pick(b, k, i):
        return wide[i] if (b, k) == (1.0, 4) else edge_tight[i] if (b, k) == (0.5, 1) else 0.0

    diff = _cells(budgets, ks, lambda b, k: pick(b, k, 0), lambda b, k: pick(b, k, 1), lambda b, k: pick(b, k, 2))
    rows = quality_rows if quality_rows is not None else [
        {"state": f"s{i}", "a": {"quality": 0.5}, "b": {"quality": 0.5}} for i in range(20)]
    quality = {"states": len(rows), "a_better": 0.0, "b_better": 0.0, "ties": 1.0, "mean_quality_a": 0.5,
               "mean_quality_b": 0.5, "mean_difference": 0.0, "difference_ci": [-0.01, 0.01], "per_state": rows}
    from budgetgym.train.study import quality_summary

    states = recovery or {name: {"s1": 0.5, "s2": 1.0} for name in ("base", "full", "mix")}
    return {"config": {"seed": 0}, "differences": {f"{b}-{a}/{r}": diff for a, b in (("base", "full"), ("base", "mix"),
                                                                                     ("full", "mix"))
                                                   for r in ("none", "remaining")},
            "action_quality": quality_summary(quality, 0),
            "recovery": {name: {"failure": {"states": len(v), "per_state": v, "rate": float(np.mean(list(v.values())))}}
                         for name, v in states.items()}}, budgets, ks


def test_claim_1_reads_intervals_only():
    from budgetgym.train.study import judge_claims

    # The tight edge's point (0.05) is below the wide one (0.3) but its interval reaches 0.15, under 0.2: agrees.
    assert judge_claims(*_summary(edge_tight=(0.05, -0.05, 0.15)))[0]["verdict"] == "agrees"
    # A point below but an interval that overlaps the wide edge's: no finding (it "agreed" on the point before).
    assert judge_claims(*_summary(edge_tight=(0.1, -0.05, 0.25)))[0]["verdict"].startswith("inconclusive")


def test_claim_2_counts_only_states_where_the_two_differ():
    from budgetgym.train.study import judge_claims

    # All ties: no evidence either way (it "agreed" before, the trained agent being better at 0% of states).
    claim = judge_claims(*_summary())[2]
    assert claim["claim"] == 2 and claim["verdict"].startswith("inconclusive") and claim["measured"]["differing_states"] == 0
    # 20 ties, and the trained agent better at 9 of the 10 states where they differ: not "not consistently better".
    rows = [{"state": f"t{i}", "a": {"quality": 0.5}, "b": {"quality": 0.5}} for i in range(20)]
    rows += [{"state": f"d{i}", "a": {"quality": 0.2}, "b": {"quality": 0.8 if i < 9 else 0.1}} for i in range(10)]
    claim = judge_claims(*_summary(quality_rows=rows))[2]
    assert claim["measured"]["differing_states"] == 10 and claim["measured"]["b_better_where_differ"] == 0.9
    assert claim["verdict"] == "does not agree"


def test_recovery_on_mismatched_state_sets_is_an_error():
    from budgetgym.train.study import judge_claims

    recovery = {"base": {"s1": 0.0, "s2": 0.0}, "full": {"s1": 1.0, "s3": 1.0}, "mix": {"s1": 0.0, "s2": 1.0}}
    with pytest.raises(ValueError, match="different states"):
        judge_claims(*_summary(recovery=recovery))


def test_compare_rewards_reads_intervals_and_counts_a_tie_as_no_difference():
    from budgetgym.train.study import compare_rewards, interval_verdict

    assert interval_verdict(0.01, 0.3, "up", "down") == "up"
    assert interval_verdict(-0.3, -0.01, "up", "down") == "down"
    assert interval_verdict(-0.2, 0.4, "up", "down").startswith("no difference")
    budgets, ks = [0.5, 1.0], [1]
    wide = _cells(budgets, ks, lambda b, k: 0.2, lambda b, k: -0.1, lambda b, k: 0.5)
    better = _cells(budgets, ks, lambda b, k: 0.3, lambda b, k: 0.1, lambda b, k: 0.5)
    summary = {"differences": {f"{g}-oracle-distance-{g}/{r}": (better if g == "full" else wide)
                               for g in ("full", "mix") for r in ("none", "remaining")}}
    rows = compare_rewards(summary, ["sparse", "oracle-distance"], budgets, ks)
    assert len(rows) == 2 * 2 * 2  # regime x reveal x (tight, full)
    assert {r["verdict"] for r in rows if r["regime"] == "full"} == {"oracle-distance better"}
    assert all(r["verdict"].startswith("no difference") for r in rows if r["regime"] == "mix")  # a point of +0.2 decides nothing


# ------------------------------------------------------------------ the language-model policy


@pytest.fixture(scope="module")
def lm_study(tmp_path_factory):
    from budgetgym.train.study import StudyConfig

    from budgetgym.integrations.episode import BudgetSpec
    from budgetgym.train import lm

    # --model DIR: a Hugging Face causal LM directory, here one made locally (nothing downloaded).
    chats = lm.scripted_conversations([FC], agent_p=0.3, tasks=2, budget=BudgetSpec(reveal="remaining"))
    model_dir = lm.make_tiny_lm(tmp_path_factory.mktemp("init"), chats, size="micro")
    out = tmp_path_factory.mktemp("lm-study")
    config = StudyConfig.tiny(FC, max_new_tokens=8, model=str(model_dir), device="cpu", max_oracle_turns=5)
    return out, config, run_study(out, config, log=lambda message: None)


def test_the_lm_study_at_tiny_size_writes_a_report_recomputed_from_its_files(lm_study):
    out, config, summary = lm_study
    assert config.policy == "lm"  # the default study's learner writes its actions as text
    assert json.loads(json.dumps(summarize_study(out, config), sort_keys=True)) == \
        json.loads((out / "summary.json").read_text())
    report = (out / "report.md").read_text()
    assert "causal language model" in report and "## Limitations" in report
    for claim in summary["claims"]:
        assert claim["verdict"] in report
    sft = [json.loads(line) for line in (out / "sft_curve.jsonl").read_text().splitlines()]
    assert all(np.isfinite(row["loss"]) for row in sft)
    for name in ("full", "mix"):
        curve = [json.loads(line) for line in (out / f"train-{name}" / "curve.jsonl").read_text().splitlines()]
        assert curve and all(np.isfinite(row["loss"]) for row in curve)
        assert (out / f"train-{name}" / "model" / "config.json").exists()
    assert {r["agent_config"]["name"] for r in (json.loads(line) for line in
                                                 (out / "episodes-base.jsonl").read_text().splitlines())} == {"base"}


def test_the_sft_base_and_a_grpo_step_change_the_weights(lm_study):
    import torch

    from budgetgym.train import lm
    from budgetgym.train.lm_grpo import policy_gradient_step

    out, config, _ = lm_study
    init, _ = lm.load(config.model)
    model, tokenizer = lm.load(out / "base")
    assert any(not torch.equal(a, b) for a, b in zip(init.parameters(), model.parameters()))  # SFT moved them
    agent = lm.LMAgent(model, tokenizer, name="base", max_new_tokens=4)
    import gymnasium as gym

    env = gym.make(FC, split="train")
    traces = []
    for seed in (0, 1):
        observation, info = env.reset(seed=seed)
        agent.reset(env, observation, info, seed)
        agent.act(observation, info)
        traces.append(list(agent.trace))
    env.close()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = policy_gradient_step(model, optimizer, [([(1.0, traces[0]), (0.0, traces[1])], np.array([0.5, -0.5]))])
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    # A group whose returns are all equal carries no signal: nothing changes.
    after = [p.detach().clone() for p in model.parameters()]
    assert policy_gradient_step(model, optimizer, [([(1.0, traces[0]), (1.0, traces[1])], np.zeros(2))]) == []
    assert all(torch.equal(a, b) for a, b in zip(after, model.parameters()))


def test_rows_played_in_one_batch_see_what_each_would_see_alone(lm_study):
    # The K attempts of a GRPO group share one KV cache with per-row padding: each row's next-token
    # logits must be those of its own tokens run alone, through growth by different amounts.
    import torch

    from budgetgym.train import lm

    out, _, _ = lm_study
    model, tokenizer = lm.load(out / "base")
    rows = lm.TokenRows(model, pad_id=tokenizer.pad_token_id, eos_id=-1, temperature=1.0, max_new_tokens=3,
                        stats=lm.new_stats())
    rows.start([[5, 6, 7, 8, 9], [10, 11]], seeds=[0, 1])
    rows.sample([0, 1])
    rows.extend({0: [12], 1: [13, 14, 15, 16]})
    rows.sample([1])  # row 0 waits a turn
    rows.extend({0: [17, 18]})
    rows.sample([0, 1])
    for row in (0, 1):
        (ids, sampled), = rows.segments(row)
        assert sum(sampled) == 9 - 3 * (row == 0)
        with torch.no_grad():
            alone = model(input_ids=torch.tensor([ids[:rows.fed[row]]])).logits[0, -1]
        assert torch.allclose(rows.logits[row], alone, atol=1e-4)


def test_a_chat_is_encoded_for_training_as_it_is_played(lm_study):
    from budgetgym.integrations.episode import BudgetSpec
    from budgetgym.train import lm

    out, _, _ = lm_study
    _, tokenizer = lm.load(out / "base")
    flags: list[list[bool]] = []
    chats = lm.scripted_conversations([FC], agent_p=0.5, tasks=2, budget=BudgetSpec(reveal="remaining"),
                                      oracle_flags=flags)
    for chat, own in zip(chats, flags):
        ids, labels = lm.encode_conversation(tokenizer, chat, 10**6, learn=own)
        assert tokenizer.decode(ids) == lm.render(tokenizer, chat)  # the turn-by-turn tokens are the whole chat's
        learned = tokenizer.decode([t for t in labels if t != -100])
        actions = [m["tool_calls"][0]["function"]["arguments"]["action"] for m in chat if m.get("tool_calls")]
        assert len(own) == len(actions) + 1 and not own[-1]  # the closing reply is never learned
        for action, mine in zip(actions, own):
            assert (json.dumps(action)[1:-1] in learned) or not mine
        # A reply as the model would write it (its tokens, markers and end-of-turn included) plays its
        # action: decoding that drops special tokens lost the <tool_call> markers, and every action.
        written, _ = lm.turn_texts(tokenizer, chat[:2], chat[2], None)
        assert lm.reply_action(lm.reply_text(tokenizer, lm.text_ids(tokenizer, written))) == actions[0]
