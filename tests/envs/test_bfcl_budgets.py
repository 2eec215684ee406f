"""budgetgym/BFCL-v0's ``oracle_turns`` is the shortest solution under its rules, on the real
bfcl-eval (skipped without it): per user turn one step with all the turn's ground-truth calls (BFCL's
parallel calls; two steps past the parser's 32 calls) and one answer. Merging the oracle's steps
across user turns, or answering without the calls, never solves a task in fewer turns."""

from __future__ import annotations

import math

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import MAX_CALLS_PER_STEP

pytest.importorskip("bfcl_eval", reason="bfcl_eval is not importable; install it with `pip install --no-deps bfcl-eval mpmath`")

ENV_ID = "budgetgym/BFCL-v0"
SAMPLE = 40  # base tasks the attacks play (each an episode of a few steps)


def _merged(ground_truth: list[list[str]], index: int) -> str:
    """The calls of user turns ``index`` and ``index + 1`` in one step, in BFCL's list form."""
    calls = ground_truth[index] + (ground_truth[index + 1] if index + 1 < len(ground_truth) else [])
    return "[" + ", ".join(calls[:MAX_CALLS_PER_STEP]) + "]"


def test_oracle_turns_are_one_call_step_and_one_answer_a_user_turn():
    env = gym.make(ENV_ID)
    for task in env.unwrapped.tasks:
        steps = sum(1 + math.ceil(len(calls) / MAX_CALLS_PER_STEP) for calls in task["ground_truth"])
        assert task.oracle_turns == steps, task.id


def test_merging_the_next_user_turns_calls_or_skipping_calls_never_beats_oracle_turns():
    env = gym.make(ENV_ID, split="base")
    tasks = [task for task in env.unwrapped.tasks if len(task["ground_truth"]) >= 2][:SAMPLE]
    wins_below = attempts = 0
    for task in tasks:
        ground_truth = task["ground_truth"]
        for attack in ("merge", "answer-only"):
            env.reset(options={"task_id": task.id})
            merged_into_previous = False
            turns = 0
            while True:
                index = env.unwrapped.user_turn
                if attack == "merge" and not merged_into_previous and ground_truth[index]:
                    action = _merged(ground_truth, index)  # this turn's calls and the next turn's together
                    merged_into_previous = True
                elif attack == "merge" and merged_into_previous:
                    merged_into_previous = False
                    action = "Done."  # the calls were made a turn early: answer at once
                else:
                    action = "Done."  # no calls at all
                _, _, terminated, truncated, info = env.step(action)
                turns += 1
                if action != "Done.":
                    _, _, terminated, truncated, info = env.step("Done.")
                    turns += 1
                if terminated or truncated:
                    break
            attempts += 1
            wins_below += info["success"] and turns < task.oracle_turns
    assert attempts == 2 * len(tasks) and wins_below == 0
