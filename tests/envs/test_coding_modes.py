"""Coding-v0's two test modes on every task set: the whole suite visible (SWE-smith) or the
fail-to-pass tests withheld from the workspace (SWE-bench), graded out of the agent's reach."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import TaskSet, load_tasks, rollout
from budgetgym.envs.coding.env import WITHHELD_SUFFIX, tasks_in_mode
from coding_support import require

TASKS = load_tasks("coding")
TASK = next(t for t in TASKS if t.split == "train" and len(t.data["fail_to_pass"]) >= 2)


@pytest.fixture(scope="module")
def env():
    require("local")
    environment = gym.make("budgetgym/Coding-v0", tests="withheld")
    yield environment
    environment.close()


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def test_the_mode_applies_to_every_task_set_and_refuses_nonsense():
    assert tasks_in_mode(TASKS, "visible").ids == TASKS.ids
    withheld = tasks_in_mode(TASKS, "withheld")
    assert withheld.ids == tuple(t + WITHHELD_SUFFIX for t in TASKS.ids)
    task = withheld.get(TASK.id + WITHHELD_SUFFIX)
    assert task.data["oracle_turns"] == TASK.data["oracle_turns"] and task.max_turns == TASK.max_turns
    assert "not in your checkout" in task.instruction and "without changing the tests" not in task.instruction
    both = TaskSet([{**TASK.data, "tests": "visible"}, {**TASK.data, "id": "x-withheld", "tests": "withheld"}])
    assert tasks_in_mode(both, "withheld").ids == ("x-withheld",)  # a library record names its own mode
    assert tasks_in_mode(both, None).ids == both.ids
    with pytest.raises(ValueError, match="tests must be one of"):
        gym.make("budgetgym/Coding-v0", tests="hidden")


def test_withheld_tests_are_not_in_the_workspace_and_say_nothing_before_the_submission(env):
    observation, info = env.reset(options={"task_id": TASK.id + WITHHELD_SUFFIX})
    base = env.unwrapped
    workspace_tests = "".join(d.decode() for p, d in base.ws.files.items() if p.startswith("tests/"))
    for node in TASK.data["fail_to_pass"]:
        assert f"def {node.split('::')[-1]}(" not in workspace_tests
    assert TASK.data["pass_to_pass"][0].split("::")[-1] in workspace_tests
    bug = TASK.data["bug"]
    env.step(call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]))
    observation, _, _, _, info = env.step(call("run_tests"))
    assert info["progress"] == 0.0  # the fix is in, but the withheld tests are not run for the agent
    assert TASK.data["fail_to_pass"][0].split("::")[-1] not in observation
    observation, reward, terminated, _, info = env.step(call("submit"))
    assert terminated and reward == 1.0 and info["progress"] == 1.0
    assert f"{len(TASK.data['fail_to_pass'])} of {len(TASK.data['fail_to_pass'])} tests of the issue pass" in observation
    assert "Left out" not in observation  # the cut test files are the workspace's own, not the agent's edits


def test_the_oracle_solves_a_withheld_task_in_its_turns_without_putting_the_tests_back(env):
    run = rollout(env, "oracle", seed=0, options={"task_id": TASK.id + WITHHELD_SUFFIX})
    assert run.success and run.turns == TASK.data["oracle_turns"]
    assert all(not p.startswith("tests/") or d == env.unwrapped.ws.initial[p] for p, d in env.unwrapped.ws.files.items())


@pytest.mark.parametrize("mode", ["visible", "withheld"])
def test_special_casing_the_tests_literal_inputs_fails_in_both_modes(mode):
    """The exploit answers every ``assert f(literals) == literal`` it can see (the test file in the
    visible mode, the issue's quoted lines in both) from a table, the bug left in: it won this task
    in both modes before grading ran the hidden perturbed copies of the fail-to-pass tests."""
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.coding import SpecialCaseLiterals

    require("local")
    environment = gym.make("budgetgym/Coding-v0", tests=mode)
    try:
        task_id = "coding-splitbill-000" + (WITHHELD_SUFFIX if mode == "withheld" else "")
        result = play_episode(environment, SpecialCaseLiterals(), seed=0, options={"task_id": task_id})
        report = environment.unwrapped.ws.verdict[1]
    finally:
        environment.close()
    assert not result.success and "beyond the tests' own inputs" in report, report
    assert "tests of the issue pass" in report
