"""Coding-v0 on both backends: the oracle, bad input, snapshots, a dying sandbox, reward integrity."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import SnapshotError, load_failure_states, load_tasks, rollout
from budgetgym.core.budgets import full_budget
from budgetgym.envs.coding.env import task_files
from budgetgym.envs.coding.repos import repo_files, repo_names
from budgetgym.envs.coding.sandbox import SandboxUnavailable
from coding_support import BACKENDS, require

TASKS = load_tasks("coding")


@pytest.fixture(scope="module", params=BACKENDS)
def env(request):
    require(request.param)
    environment = gym.make("budgetgym/Coding-v0", backend=request.param)
    yield environment
    environment.close()


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def first_task(split="train"):
    return next(t for t in TASKS if t.split == split)


def test_assets_cover_the_promise():
    assert len(repo_names()) >= 8 and len(TASKS) >= 80
    assert {t.split for t in TASKS} == {"train", "test"}
    for task in TASKS:
        assert task.max_turns == full_budget(task["oracle_turns"])
        assert task["fail_to_pass"] and task["pass_to_pass"]
        assert task["bug"]["fixed"] not in task.instruction  # the issue shows the symptom, not the fix
        initial, original = task_files(task.data)
        assert initial[task["bug"]["path"]] != original[task["bug"]["path"]]
    operators = {t["bug"]["operator"] for t in TASKS}
    assert {"flip_comparison", "off_by_one", "swap_arithmetic", "wrong_default", "dropped_branch"} <= operators


def test_each_library_suite_is_real():
    for name in repo_names():
        tests = [p for p in repo_files(name) if p.startswith("tests/test_")]
        source = [p for p in repo_files(name) if p.endswith(".py") and not p.startswith("tests/")]
        assert len(tests) >= 2 and len(source) >= 3, name
        assert sum(repo_files(name)[p].count("def test_") for p in tests) >= 15, name


def test_the_oracle_solves_every_task_on_the_local_backend():
    require("local")
    env = gym.make("budgetgym/Coding-v0")
    try:
        failed = [t.id for t in TASKS if not rollout(env, "oracle", seed=0, options={"task_id": t.id}).success]
    finally:
        env.close()
    assert not failed


def test_the_oracle_solves_sampled_tasks(env):
    for task in list(TASKS)[::24]:
        run = rollout(env, "oracle", seed=0, options={"task_id": task.id})
        assert run.success and run.turns == task["oracle_turns"], task.id


def test_progress_is_measured_on_run_tests_only(env):
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    progress = []
    while (action := base.oracle_action()) is not None:
        name = json.loads(action)["name"]
        _, _, terminated, _, info = env.step(action)
        progress.append((name, info["progress"]))
    assert progress[2] == ("replace_in_file", 0.0)  # the fix is in, but nobody ran the tests yet
    assert progress[3] == ("run_tests", 1.0)
    assert info["success"]


def test_bad_input_costs_the_turn_and_changes_nothing(env):
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    key = base.state_key()
    bug = task["bug"]
    cases = [
        ('{"name": "view_file", "arguments": {"path": 3}}', "Invalid action"),
        (call("view_file", path="../../etc/passwd"), "outside the workspace"),
        (call("view_file", path="/etc/passwd"), "outside the workspace"),
        (call("create_file", path="/tmp/x.py", content="x"), "outside the workspace"),
        (call("replace_in_file", path=bug["path"], old="no such text anywhere", new="x"), "not found"),
        (call("replace_in_file", path=bug["path"], old="\n", new="\n\n"), "occurs"),
        (call("create_file", path=bug["path"], content="x"), "already exists"),
        (call("view_file", path="missing.py"), "no such file"),
        (call("run_command", command="sleep 10", timeout=1), "time limit"),
    ]
    for turn, (action, message) in enumerate(cases, 1):
        observation, reward, terminated, truncated, info = env.step(action)
        assert message in observation, (action, observation)
        assert info["turn"] == turn and not terminated and reward == 0.0
        assert base.state_key() == key, action


def test_text_no_shell_or_file_system_takes_is_a_tool_error_without_host_paths(env):
    """NUL and lone surrogates in a command, a path or content, names and paths past the OS's
    limits, a path through a file: each raised out of step() (ValueError, UnicodeEncodeError,
    OSError showing the host's folder); now each is a tool error, the turn spent, nothing changed."""
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    key = base.state_key()
    cases = [
        (call("run_command", command="echo a\x00b"), "NUL"),
        (call("run_command", command="echo \ud800"), "lone surrogate"),
        (call("create_file", path="bad\udcff.py", content="x"), "lone surrogate"),
        (call("view_file", path="bad\x00.py"), "NUL"),
        (call("create_file", path="notes.txt", content="half \udc80 a character"), "lone surrogate"),
        (call("create_file", path="n" * 256 + ".py", content="x"), "longer than 255 bytes"),
        (call("create_file", path="/".join(["d" * 200] * 21) + "/x.py", content="x"), "longer than 2048 bytes"),
        (call("create_file", path="README.md/inside.py", content="x"), "is a file, not a folder"),
        (call("create_file", path="tab\there.py", content="x"), "control character"),
    ]
    host = str(getattr(base.sandbox, "root", "/nonexistent-host-folder"))
    for turn, (action, message) in enumerate(cases, 1):
        observation, reward, terminated, truncated, info = env.step(action)
        assert observation.startswith("Error:") and message in observation, (action, observation)
        assert host not in observation, observation
        assert info["turn"] == turn and not (terminated or truncated) and reward == 0.0
        assert base.state_key() == key, action


def test_snapshot_fast_path_restores_files_exactly(env):
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    env.step(call("create_file", path="notes/new.txt", content="scratch\n"))
    env.step(call("run_command", command=f"rm {task['bug']['path']}"))
    snap = base.snapshot()
    assert snap["state"]["deleted"] == [task["bug"]["path"]]
    files = dict(base.ws.files)
    env.reset(options={"task_id": list(TASKS)[-1].id})
    observation, info = env.reset(options={"snapshot": json.loads(json.dumps(snap))})
    assert base.ws.files == files and info["turn"] == 2
    assert rollout(env, "oracle", start=(observation, info)).success


def test_episodes_started_from_every_shipped_failure_state_give_snapshots_the_env_restores():
    """17 of 130 gave snapshots the env refused: a state restored without its measured progress
    snapshotted progress 0 beside the episode's own, and the restore found them at odds."""
    require("local")
    env = gym.make("budgetgym/Coding-v0")
    refused = []
    try:
        for state in load_failure_states("coding"):
            env.reset(options={"snapshot": json.loads(json.dumps(state["snapshot"]))})
            env.step(call("view_file", path="README.md", start_line=1, end_line=1))
            again = json.loads(json.dumps(env.unwrapped.snapshot()))
            try:
                env.reset(options={"snapshot": again})
            except SnapshotError as err:
                refused.append((state["id"], str(err)))
    finally:
        env.close()
    assert not refused, refused[:3]


def test_a_state_without_its_measured_progress_restores_and_snapshots_consistently():
    """The shipped failure states were written before the state carried the measured progress."""
    require("local")
    from budgetgym.core.env import snapshot_digest

    task = first_task()
    env = gym.make("budgetgym/Coding-v0")
    try:
        env.reset(options={"task_id": task.id})
        bug = task["bug"]
        env.step(call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]))
        env.step(call("run_tests"))
        snap = json.loads(json.dumps(env.unwrapped.snapshot()))
        assert snap["progress"] == 1.0
        for key in ("progress", "file_count"):
            del snap["state"][key]
        snap["digest"] = snapshot_digest(snap)
        env.reset(options={"snapshot": snap})
        env.step(call("view_file", path="README.md", start_line=1, end_line=1))
        again = json.loads(json.dumps(env.unwrapped.snapshot()))
        assert again["state"]["progress"] == again["progress"] == 1.0
        env.reset(options={"snapshot": again})
    finally:
        env.close()


def test_corrupt_state_is_refused_before_anything_changes(env):
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    env.step(call("create_file", path="keep.txt", content="keep\n"))
    snap = base.snapshot()
    files = dict(base.ws.files)
    for state in ({"files": {"../escape.py": "x"}, "binary": {}, "deleted": [], "searched": False, "viewed": False, "tested": False},
                  {"files": {}, "binary": {"a.bin": "zz"}, "deleted": [], "searched": False, "viewed": False, "tested": False},
                  {"files": {}, "binary": {}, "deleted": ["not/in/repo.py"], "searched": False, "viewed": False, "tested": False},
                  {"files": {}}):
        with pytest.raises(SnapshotError):
            env.reset(options={"snapshot": {**snap, "state": state}})
        assert base.ws.files == files and base.sandbox.files() == files  # the running workspace itself


def test_a_sandbox_that_dies_is_rebuilt_with_nothing_lost(env):
    task = first_task()
    env.reset(options={"task_id": task.id})
    base = env.unwrapped
    env.step(call("create_file", path="work.txt", content="progress so far\n"))
    files = dict(base.ws.files)
    sandbox = base.sandbox
    if sandbox.backend == "local":
        import shutil

        shutil.rmtree(sandbox.workspace)
    else:
        sandbox.container.kill()
    observation, _, terminated, _, info = env.step(call("view_file", path="work.txt"))
    assert "rebuilt" in observation and not terminated
    assert base.ws.files == files
    observation, *_ = env.step(call("view_file", path="work.txt"))
    assert "progress so far" in observation
    assert rollout(env, "oracle", start=(observation, info)).success


@pytest.mark.parametrize("exploit", ["submit_at_once", "edit_tests", "delete_tests", "fake_runner", "conftest"])
def test_gaming_the_tests_does_not_win(env, exploit):
    task = first_task()
    env.reset(options={"task_id": task.id})
    test_file = task["fail_to_pass"][0].split("::")[0]
    steps = {
        "submit_at_once": [],
        "edit_tests": [call("create_file", path=test_file, content="def test_nothing():\n    pass\n", overwrite=True)],
        "delete_tests": [call("run_command", command="rm -rf tests")],
        "fake_runner": [call("run_command", command="mkdir -p bin && printf '#!/bin/sh\\nexit 0\\n' > bin/pytest "
                                                     "&& chmod +x bin/pytest && printf 'import sys\\nsys.exit(0)\\n' > pytest.py")],
        "conftest": [call("create_file", path="conftest.py", content=(
            "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
            "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"))],
    }[exploit]
    for action in [*steps, call("run_tests")]:
        env.step(action)
    observation, reward, terminated, truncated, info = env.step(call("submit"))
    assert terminated and reward == 0.0 and not info["success"], observation
    assert "not resolved" in observation


def test_a_submission_needs_a_test_run_of_the_repository_as_it_is(env):
    """An untested submission (never tested, or changed since the last run, through a tool or a
    command) is refused: the turn is spent, nothing is graded, the episode goes on; so the oracle's
    test run is one the rules ask for and ``1x`` is the shortest solution."""
    task = first_task()
    bug = task["bug"]
    env.reset(options={"task_id": task.id})
    refusals = []
    for action in [call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]), call("submit"),
                   call("run_tests"), call("run_command", command=f"echo >> {bug['path']}"), call("submit"),
                   call("run_command", command="ls"), call("run_tests")]:
        observation, reward, terminated, truncated, info = env.step(action)
        assert not (terminated or truncated) and reward == 0.0, observation
        if action == call("submit"):
            refusals.append(observation)
            assert observation.startswith("Error: run_tests first") and env.unwrapped.ws.verdict is None
    assert len(refusals) == 2
    observation, reward, terminated, truncated, info = env.step(call("submit"))
    assert terminated and reward == 1.0 and info["success"], observation


def test_running_out_of_turns_without_a_submission_is_unsolved(env):
    """The full budget's last turn graded the repository as submitted, where a TurnBudget cap did
    not: the same fix, never submitted, succeeded at T=1.0 and failed at every tighter T, and under
    a cap one turn short of the oracle's the auto-graded fix saved the submission's turn (1x was no
    floor). Now no budget grades: an episode that ends unsubmitted is unsolved."""
    task = first_task()
    env.reset(options={"task_id": task.id})
    bug = task["bug"]
    for _ in range(task.max_turns - 2):
        env.step(call("search", query="def "))
    _, _, terminated, truncated, info = env.step(call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]))
    assert not (terminated or truncated)
    observation, reward, terminated, truncated, info = env.step(call("view_file", path="README.md"))
    assert truncated and not terminated and reward == 0.0 and not info["success"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_last_turn_measures_progress_so_a_fix_undone_after_the_tests_pays_back(backend):
    """Under reward_mode="progress", fix, run the tests (+1.0), put the bug back and let a cap run out:
    the return was 1.0 on a repository that fails, the last measure being the test run's; the last
    turn (a cap's as the full budget's) now measures the repository as it is."""
    from budgetgym.wrappers import TurnBudget

    require(backend)
    env = TurnBudget(gym.make("budgetgym/Coding-v0", backend=backend, reward_mode="progress"), 4)
    try:
        task = first_task()
        bug = task["bug"]
        env.reset(options={"task_id": task.id})
        rewards = [env.step(call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"]))[1],
                   env.step(call("run_tests"))[1],
                   env.step(call("replace_in_file", path=bug["path"], old=bug["fixed"], new=bug["buggy"]))[1]]
        _, reward, terminated, truncated, info = env.step(call("view_file", path="README.md"))
        assert rewards[1] == 1.0 and truncated and not info["success"]
        assert sum(rewards) + reward == 0.0 and info["progress"] == 0.0
    finally:
        env.close()


def test_a_gone_docker_engine_gives_one_clear_error():
    require("docker")
    env = gym.make("budgetgym/Coding-v0", backend="docker")
    try:
        env.reset(options={"task_id": first_task().id})
        import docker

        dead = docker.DockerClient(base_url="unix:///nonexistent/docker.sock", version="1.41")
        sandbox = env.unwrapped.sandbox
        sandbox.client = dead
        sandbox.container.client = dead
        with pytest.raises(SandboxUnavailable, match="Docker engine is gone"):
            env.step(call("run_command", command="true"))
    finally:
        live = docker.from_env()
        env.unwrapped.sandbox.client = live
        if env.unwrapped.sandbox.container is not None:
            env.unwrapped.sandbox.container.client = live
        env.close()


def test_the_contract_checks_hold_on_docker_too():
    """The registered id runs the contract suite on the default (local) backend; the same checks on Docker."""
    require("docker")
    from gymnasium.utils.env_checker import check_env

    env = gym.make("budgetgym/Coding-v0", backend="docker")
    try:
        check_env(env.unwrapped, skip_render_check=True)
        task = first_task("test")
        runs = []
        for _ in range(2):
            run = rollout(env, "oracle", seed=3, options={"task_id": task.id})
            runs.append([(step.action, step.observation) for step in run.steps])
        assert runs[0] == runs[1]  # byte for byte
        env.reset(options={"task_id": task.id})
        env.step(call("search", query=task["locate"]["query"]))
        snap = env.unwrapped.snapshot()
        observation, info = env.reset(options={"snapshot": snap})
        assert observation == snap["transcript"][-1][1] and info["turn"] == 1
        assert rollout(env, "oracle", start=(observation, info)).success
    finally:
        env.close()


def test_one_file_per_role_assets_is_the_one_command_and_mistakes_holds_the_kinds(capsys):
    """generate.py had a command line of its own beside assets.py; the mistakes lived in env.py."""
    from budgetgym.envs.coding import assets, generate, mistakes
    from budgetgym.envs.coding.env import CodingEnv

    assert not hasattr(generate, "main") and CodingEnv.failure_kinds == mistakes.KINDS
    with pytest.raises(SystemExit) as refused:
        assets.main(["--seed", "1"])  # another task set, but where to? nothing shipped is touched
    assert refused.value.code == 2 and "--out" in capsys.readouterr().err
