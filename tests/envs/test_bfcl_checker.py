"""budgetgym/BFCL-v0's verdicts equal BFCL's own ``multi_turn_checker`` on the same calls, on the real
bfcl-eval (skipped without it): right and wrong conversations, scored with the process's kept
references of the task forgotten (cold) and kept from a clean episode (warm).

Each entry of the sample is played with its ground truth, changed at one seeded user turn in one of
four ways (none, the turn's last call dropped, the turn left without calls, the turn's calls made
twice, the next turn's calls made early); BFCL's checker gets the same calls, one step a user turn.
"""

from __future__ import annotations

import random
import re

import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import MAX_CALLS_PER_STEP

pytest.importorskip("bfcl_eval", reason="bfcl_eval is not importable; install it with `pip install --no-deps bfcl-eval mpmath`")

CHANGES = ("none", "drop_last", "no_calls", "twice", "early")
# The whole base set, and the first entries of the other categories.
SAMPLE = {"base": 200, "miss_func": 25, "miss_param": 25, "long_context": 25}


def _changed(ground_truth: list[list[str]], change: str, rng: random.Random) -> list[list[str]]:
    turns = [list(calls) for calls in ground_truth]
    with_calls = [i for i, calls in enumerate(turns) if calls]
    if change == "none" or not with_calls:
        return turns
    turn = rng.choice(with_calls)
    if change == "drop_last":
        turns[turn].pop()
    elif change == "no_calls":
        turns[turn] = []
    elif change == "twice":
        turns[turn] = turns[turn] * 2
    elif change == "early" and turn + 1 < len(turns):
        turns[turn] += turns[turn + 1]
    return turns


def _env_verdict(env, task_id: str, turns: list[list[str]]) -> tuple[bool, str | None] | None:
    """(solved, BFCL's error type of the failed turn) as the env scores ``turns``; None where the
    env refused a call (a function held back by miss_func is not a tool until its turn)."""
    env.reset(options={"task_id": task_id})
    for calls in turns:
        for start in range(0, len(calls), MAX_CALLS_PER_STEP):
            _, _, terminated, truncated, info = env.step("[" + ", ".join(calls[start:start + MAX_CALLS_PER_STEP]) + "]")
            if not info["action_valid"]:
                return None
            assert not (terminated or truncated)
        observation, _, terminated, truncated, info = env.step("Done.")
        if terminated or truncated:
            error = re.search(r"failed BFCL's check \(([^)]*)\)", observation)
            return info["success"], error.group(1) if error else None
    raise AssertionError(f"{task_id}: the conversation did not end after its last user turn")


def _checker_verdict(task, turns: list[list[str]], model: str) -> tuple[bool, str | None]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    decoded = [[calls] if calls else [] for calls in turns]
    entry = {"id": task.id, "initial_config": task["initial_config"], "involved_classes": task["involved_classes"]}
    try:
        result = multi_turn_checker.multi_turn_checker(decoded, task["ground_truth"], entry, task.split, model)
    finally:
        # BFCL's executor keeps every instance it builds in its module's globals, for good.
        for name in [n for n in vars(multi_turn_utils) if n.startswith(model)]:
            delattr(multi_turn_utils, name)
    return bool(result["valid"]), None if result["valid"] else result["error_type"]


def test_verdicts_equal_bfcls_checker_with_the_kept_references_cold_and_warm():
    from budgetgym.envs.bfcl import BFCLEnv
    from budgetgym.envs.bfcl.backend import forget_references

    warm = BFCLEnv()
    compared = passed = 0
    failed_types = set()
    for category, count in SAMPLE.items():
        for index, task in enumerate(BFCLEnv(categories=(category,)).tasks[:count]):
            rng = random.Random(f"bfcl-checker/{task.id}")
            turns = _changed(task["ground_truth"], CHANGES[index % len(CHANGES)], rng)
            forget_references()
            first = _env_verdict(warm, task.id, turns)
            if first is None:
                continue
            forget_references()
            for _ in range(2):  # the second episode keeps the references of the clean path
                _env_verdict(warm, task.id, task["ground_truth"])
            second = _env_verdict(warm, task.id, turns)
            expected = _checker_verdict(task, turns, f"budgetgym_test_checker_{index}")
            assert first == second == expected, (task.id, turns, first, second, expected)
            compared += 1
            passed += expected[0]
            failed_types.add(expected[1])
    assert compared >= 250 and 50 <= passed <= compared - 50, (compared, passed)
    assert {"multi_turn:instance_state_mismatch", "multi_turn:empty_turn_model_response"} <= failed_types


def test_a_tasks_references_are_kept_at_its_second_episode_and_served_after(monkeypatch):
    from budgetgym.envs.bfcl import BFCLEnv
    from budgetgym.envs.bfcl import backend

    env = BFCLEnv(categories=("base",))
    task = env.tasks[0]
    key = (task.id, task.fingerprint)
    backend.forget_references()
    turns = len(task["ground_truth"])
    verdicts = [_env_verdict(env, task.id, task["ground_truth"])]
    assert key not in backend._REFERENCES  # a one-pass evaluation keeps nothing
    verdicts.append(_env_verdict(env, task.id, task["ground_truth"]))
    assert len(backend._REFERENCES[key]) == turns
    kept = list(backend._REFERENCES[key])
    replays = []
    execute = backend.Backend._execute
    monkeypatch.setattr(backend.Backend, "_execute", lambda self, *args: replays.append(args) or execute(self, *args))
    verdicts.append(_env_verdict(env, task.id, task["ground_truth"]))  # served from the store
    assert replays == [] and backend._REFERENCES[key] == kept and verdicts == [(True, None)] * 3
    backend.forget_references()
    assert key not in backend._REFERENCES
