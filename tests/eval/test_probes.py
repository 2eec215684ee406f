import gymnasium as gym
import pytest

from budgetgym.eval.agents import NoisyOracleAgent, OracleAgent, RandomAgent
from budgetgym.eval.probes import (matched_clean_snapshot, oracle_path_states, run_action_quality_probe,
                                   run_recovery_probe)
from eval_support import TOY_ID, failure_state


def test_matched_clean_state_is_the_oracles_state_at_the_same_turn(toy_failure_states):
    env = gym.make(TOY_ID)
    record = toy_failure_states[1]  # toy-09 (target 6) after the small step add(1)
    clean = matched_clean_snapshot(env, record)
    assert clean["task_id"] == record["task_id"] and clean["turn"] == record["snapshot"]["turn"] == 1
    assert clean["seed"] == record["snapshot"]["seed"]
    assert [a for a, _ in clean["transcript"]] == ["add(3)"] and not clean["solved"]
    # Where the oracle has finished before the failure state's turn there is no clean twin.
    late = failure_state("fs-late", "toy-08", "small-step", ["add(3)", "add(1)"])  # oracle: add(3), add(2)
    assert matched_clean_snapshot(env, late) is None


def test_recovery_with_the_oracle_is_perfect_in_both_arms(toy_failure_states):
    states = [toy_failure_states[0], toy_failure_states[2]]
    result = run_recovery_probe(TOY_ID, OracleAgent(), states=states, attempts=2)
    assert result["skipped_states"] == []
    rows = {row["kind"]: row for row in result["kinds"]}
    assert set(rows) == {"wasted-turn", "all"} and rows["all"]["states"] == 2
    assert rows["all"]["failure_recovery"] == rows["all"]["clean_success"] == 1.0 and rows["all"]["gap"] == 0.0
    assert len(result["episodes"]) == 2 * 2 * 2
    # From the failure state the oracle needs 2 more turns (6 to go), from the clean twin 1 (3 to go).
    assert {(e["arm"], e["turns"]) for e in result["episodes"]} == {("failure", 2), ("clean", 1)}


def test_recovery_on_a_split_and_named_tasks(toy_failure_states):
    # toy-04 is on the test split, toy-09 and toy-03 on train.
    test = run_recovery_probe(TOY_ID, OracleAgent(), states=toy_failure_states, split="test", attempts=1)
    assert test["split"] == "test" and {e["task"] for e in test["episodes"]} == {"toy-04"}
    named = run_recovery_probe(TOY_ID, OracleAgent(), states=toy_failure_states, tasks=["toy-03", "toy-09"], attempts=1)
    assert named["tasks"] == ["toy-03", "toy-09"] and {e["task"] for e in named["episodes"]} == {"toy-03", "toy-09"}
    with pytest.raises(ValueError, match="no failure states"):
        run_recovery_probe(TOY_ID, OracleAgent(), states=toy_failure_states, split="test", tasks=["toy-03"])


def test_recovery_rates_side_by_side_per_kind(toy_failure_states):
    result = run_recovery_probe(TOY_ID, NoisyOracleAgent(0.6), states=toy_failure_states, attempts=16, seed=4)
    rows = {row["kind"]: row for row in result["kinds"]}
    assert set(rows) == {"wasted-turn", "small-step", "all"} and not result["skipped_states"]
    assert rows["wasted-turn"]["states"] == 2 and rows["small-step"]["states"] == 1
    for row in rows.values():
        assert 0.0 <= row["failure_recovery"] <= 1.0 and 0.0 <= row["clean_success"] <= 1.0
        assert row["gap"] == pytest.approx(row["failure_recovery"] - row["clean_success"])
        assert row["gap_ci_low"] <= row["gap"] <= row["gap_ci_high"]
    assert len(result["episodes"]) == 3 * 2 * 16
    assert rows["all"]["failure_recovery"] < 1.0  # a noisy agent does fail sometimes: the rates measure something


def test_a_state_without_a_clean_twin_is_skipped():
    late = failure_state("fs-late", "toy-00", "wasted-turn", ["say(text='a')", "say(text='b')"])  # oracle: 1 turn
    fine = failure_state("fs-fine", "toy-04", "wasted-turn", ["say(text='a')"])
    result = run_recovery_probe(TOY_ID, OracleAgent(), states=[late, fine], attempts=1)
    assert result["skipped_states"] == ["fs-late"]
    with pytest.raises(ValueError, match="no failure state has a matched clean state"):
        run_recovery_probe(TOY_ID, OracleAgent(), states=[late], attempts=1)


def test_unknown_kinds_are_refused(toy_failure_states):
    with pytest.raises(ValueError, match="unknown failure kinds"):
        run_recovery_probe(TOY_ID, OracleAgent(), states=toy_failure_states, kinds=["typo"])


def test_oracle_path_states():
    states = oracle_path_states(gym.make(TOY_ID), ["toy-04", "toy-00"])
    assert [s["id"] for s in states] == ["toy-04@0", "toy-04@1", "toy-00@0"]


def test_action_quality_of_the_oracle_against_random():
    oracle = OracleAgent()
    result = run_action_quality_probe(TOY_ID, oracle, RandomAgent(), oracle, tasks="all", rollouts=2)
    assert result["mean_quality_a"] == 1.0  # the oracle's action, finished by the oracle, always succeeds
    assert result["mean_quality_b"] < 1.0 and result["a_better"] > 0 and result["b_better"] == 0.0
    assert result["a_better"] + result["b_better"] + result["ties"] == pytest.approx(1.0)
    assert -1 <= result["difference_ci"][0] < result["mean_difference"] < result["difference_ci"][1] <= 1


def test_action_quality_of_an_agent_against_itself_is_a_tie():
    agent = NoisyOracleAgent(0.5)
    result = run_action_quality_probe(TOY_ID, agent, NoisyOracleAgent(0.5), NoisyOracleAgent(0.3), tasks=5,
                                      rollouts=4)
    assert result["ties"] == 1.0 and result["mean_difference"] == 0.0
    assert all(row["a"]["action"] == row["b"]["action"] for row in result["per_state"])
