"""SWEBench-v0 end to end: a SWE-bench format instance written here for a shipped library, its image
built locally (the coding image with the buggy library committed at /testbed), graded by swebench."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import load_tasks, rollout
from budgetgym.envs.coding.sandbox import Limits
from coding_support import require
from swebench_data import TASK_ID, write_swebench_instances

pytest.importorskip("swebench", reason="SWEBench-v0 needs the swebench extra: pip install 'budgetgym[swebench]'")


@pytest.fixture(scope="module")
def instance_file(tmp_path_factory):
    require("docker")
    return write_swebench_instances(tmp_path_factory.mktemp("swebench"))


@pytest.fixture
def env(instance_file):
    environment = gym.make("budgetgym/SWEBench-v0", instances=str(instance_file))
    yield environment
    environment.close()


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def test_without_instances_it_says_what_is_missing(monkeypatch):
    monkeypatch.delenv("BUDGETGYM_SWEBENCH_INSTANCES", raising=False)
    with pytest.raises(FileNotFoundError, match="instances"):
        gym.make("budgetgym/SWEBench-v0")


def test_the_gold_patch_resolves_the_instance(env):
    run = rollout(env, "oracle", seed=0)
    last = run.steps[-1].observation
    assert run.success and run.turns == 2, last
    assert "resolved." in last and "not resolved" not in last


def test_submitting_at_once_or_deleting_the_tests_does_not_resolve(env):
    env.reset(seed=0)
    observation, reward, terminated, _, _ = env.step(call("submit"))
    assert terminated and reward == 0.0 and "not resolved" in observation
    env.reset(seed=0)
    env.step(call("run_command", command="rm -rf tests && mkdir tests && printf 'def test_ok():\\n    pass\\n' > tests/test_ok.py"))
    observation, reward, terminated, _, _ = env.step(call("submit"))
    assert terminated and reward == 0.0, observation


def test_a_hand_fix_through_the_tools_resolves_and_a_snapshot_restores_it(env):
    task = load_tasks("coding").get(TASK_ID)
    bug = task["bug"]
    env.reset(seed=0)
    observation, *_ = env.step(call("search", query=task["locate"]["query"]))
    assert bug["path"] in observation
    env.step(call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]))
    snap = env.unwrapped.snapshot()
    assert bug["fixed"].strip() in snap["state"]["patch"]
    env.reset(seed=0)
    env.reset(options={"snapshot": snap})
    observation, reward, terminated, _, _ = env.step(call("submit"))
    assert terminated and reward == 1.0, observation


def test_the_file_tools_keep_to_the_repository_and_cost_the_turn(instance_file):
    """The path checks of the coding family's workspace hold at ``/testbed`` too: escapes, links out
    of the repository, folders and the size limit are refused, and nothing changes."""
    task = load_tasks("coding").get(TASK_ID)
    bug = task["bug"]
    env = gym.make("budgetgym/SWEBench-v0", instances=str(instance_file), limits=Limits(file_bytes=4096),
                   max_turns=20)
    try:
        env.reset(seed=0)
        base = env.unwrapped
        made = env.step(call("run_command", command="ln -s /etc/passwd leak && ln -s / rootlink && mkdir folder "
                                                    "&& printf '\\377\\376' > blob.bin"))[0]
        assert "[exit code 0]" in made, made
        before = base.ws.diff()
        cases = [
            (call("view_file", path="../etc/passwd"), "outside the workspace /testbed"),
            (call("view_file", path="/workspace/x.py"), "outside the workspace /testbed"),
            (call("create_file", path="/etc/evil.py", content="x"), "outside the workspace /testbed"),
            (call("view_file", path="leak"), "resolves outside the workspace /testbed"),
            (call("create_file", path="rootlink/tmp/evil.py", content="x"), "resolves outside the workspace /testbed"),
            (call("replace_in_file", path="leak", old="root", new="x"), "resolves outside the workspace /testbed"),
            (call("create_file", path="folder", content="x"), "is a folder"),
            (call("create_file", path="blob.bin", content="x"), "already exists"),
            (call("create_file", path=bug["path"], content="x"), "already exists"),
            (call("create_file", path="big.py", content="x" * 5000), "larger than 4096 bytes"),
            (call("view_file", path="missing.py"), "no such file"),
        ]
        for action, message in cases:
            observation, reward, terminated, truncated, _ = env.step(action)
            assert message in observation, (action, observation)
            assert not (terminated or truncated) and reward == 0.0
        assert base.ws.diff() == before
        assert base.sandbox.run("test -e /tmp/evil.py || test -e /etc/evil.py").exit_code != 0
    finally:
        env.close()


def test_a_write_after_the_gold_patch_sends_the_oracle_back_to_it(env):
    env.reset(seed=0)
    base = env.unwrapped
    env.step(base.oracle_action())
    assert base.ws.gold_applied and base.structured_oracle().calls[0].name == "submit"
    env.step(call("create_file", path="notes.txt", content="a change after the gold patch\n"))
    assert not base.ws.gold_applied and base.structured_oracle().calls[0].name == "run_command"
    # the tree is reset to the starting commit, index included (each step stages the changes to take
    # its patch, and `git checkout -- .` restored from that index: the gold patch then failed to apply)
    result = rollout(env, "oracle", reset=False)
    assert result.success and "notes.txt" not in base.ws.diff(), result.steps[-1].observation


def test_a_patch_that_rigs_the_runner_is_graded_without_those_files(env):
    """``conftest.py`` files marking every test passed and a ``.pth`` with its module: the instance
    resolved when the whole patch was applied; grading leaves them out and names them."""
    from budgetgym.eval.exploits.coding import DISARM, PASSING_PLUGIN

    env.reset(seed=0)
    env.step(call("create_file", path="conftest.py", content=PASSING_PLUGIN))
    env.step(call("create_file", path="tests/conftest.py", content=PASSING_PLUGIN))
    env.step(call("create_file", path="budget.pth", content="import budget_disarm\n"))
    env.step(call("create_file", path="budget_disarm.py", content=DISARM))
    observation, reward, terminated, _, _ = env.step(call("submit"))
    assert terminated and reward == 0.0 and "not resolved" in observation, observation
    assert "conftest.py, tests/conftest.py" in observation and "budget.pth" in observation


def test_graded_patch_keeps_source_changes_and_drops_runner_hooks():
    from budgetgym.envs.coding.swebench.env import graded_patch

    def chunk(path, new=False, mode="100644"):
        head = f"diff --git a/{path} b/{path}\n" + (f"new file mode {mode}\n" if new else "")
        return head + f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"

    kept = chunk("pkg/core.py") + chunk("pkg/new.py", new=True) + chunk("README.md")
    dropped = (chunk("conftest.py", new=True) + chunk("pkg/conftest.py") + chunk("setup.cfg") + chunk("x.pth", new=True)
               + chunk("pkg/__pycache__/a.pyc", new=True) + chunk("link", new=True, mode="120000")
               + chunk("pytest.py", new=True) + chunk("shadow.py", new=True) + chunk("iniconfig/__init__.py", new=True))
    patch, left_out = graded_patch(kept + dropped)
    assert patch == kept
    assert left_out == sorted(["conftest.py", "pkg/conftest.py", "setup.cfg", "x.pth", "pkg/__pycache__/a.pyc", "link",
                               "pytest.py", "shadow.py", "iniconfig/__init__.py"])


def test_a_killed_container_or_a_huge_file_is_answered_and_the_repository_restored(env):
    """Both raised SandboxDied out of step() (the huge file on every later step too, until it was
    gone); now the turn is answered, the container rebuilt with the changes made before it."""
    env.reset(seed=0)
    base = env.unwrapped
    env.step(call("create_file", path="kept.txt", content="made before\n"))
    patch = base.ws.diff()
    for turn, command in enumerate(["kill -9 -1", "seq 1 1428571 > big.txt"], 2):
        observation, reward, terminated, truncated, info = env.step(call("run_command", command=command))
        assert "rebuilt from the state before this action" in observation, observation
        assert info["turn"] == turn and not (terminated or truncated) and reward == 0.0
        assert base.ws.diff() == patch
    observation, *_ = env.step(call("view_file", path="kept.txt"))
    assert "made before" in observation


def test_failure_states_come_from_the_gold_patch_on_both_splits_and_the_oracle_recovers(tmp_path_factory):
    """Built on first use through the core's builder: the test instance's one-line fix has only the
    deleted-lines form, the train instance's two added lines only the partial one; a state restores
    with the mistaken edit in the repository, and ErrorInjection starts from it on its split."""
    from budgetgym.envs.coding.swebench.mistakes import MISTAKE_MARKER
    from budgetgym.wrappers import ErrorInjection

    require("docker")
    path = write_swebench_instances(tmp_path_factory.mktemp("swebench-both"), train=True)
    env = gym.make("budgetgym/SWEBench-v0", instances=str(path))
    try:
        states = env.unwrapped.failure_states()
        assert {(s["task_id"], s["kind"]) for s in states} == {("budgetgym__intervals-1", "wrong_edit"),
                                                                ("budgetgym__intervals-2", "partial_fix")}
        assert all(MISTAKE_MARKER in s["snapshot"]["transcript"][s["error_step"]][0] for s in states)
        injected = ErrorInjection(env, split="train")
        observation, info = injected.reset(seed=0)
        assert info["task_id"] == "budgetgym__intervals-2"
        patch = env.unwrapped.ws.diff()
        assert "+    if within.length == 0:" in patch and "return 1.0" not in patch
        assert observation.startswith("Issue:")  # the builder has played the oracle from each state to success
    finally:
        env.close()
