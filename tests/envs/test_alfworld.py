"""ALFWorld-v0: the missing-requirement message, and play on small ALFWorld-format games the tests
write from the domain and grammar files the ``alfworld`` wheel ships (``tests/alfworld_data.py``)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import rollout
from budgetgym.envs.alfworld import ALFWorldNotInstalled
from alfworld_data import GAMES, write_alfworld_data

ENV_ID = "budgetgym/ALFWorld-v0"


def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def test_make_says_what_to_install_or_set(monkeypatch, tmp_path):
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    with pytest.raises(ALFWorldNotInstalled) as err:
        gym.make(ENV_ID)
    message = str(err.value)
    if not _have("alfworld"):
        assert "pip install 'budgetgym[alfworld]'" in message
    elif not _have("fast_downward"):
        assert "budgetgym[alfworld]" in message and "textworld[pddl]" in message
    else:  # importing alfworld sets ALFWORLD_DATA to ~/.cache/alfworld when it is unset
        assert "ALFWORLD_DATA" in message and "alfworld-download" in message
        monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
        with pytest.raises(ALFWorldNotInstalled, match=f"no json_2.1.1 folder in ALFWORLD_DATA={tmp_path}"):
            gym.make(ENV_ID)
    assert isinstance(err.value, ImportError)


@pytest.fixture
def alfworld_env(monkeypatch, tmp_path):
    pytest.importorskip("alfworld", reason="the alfworld extra is not installed (pip install 'budgetgym[alfworld]')")
    pytest.importorskip("fast_downward", reason="textworld[pddl]'s fast-downward-textworld did not build here")
    monkeypatch.setenv("ALFWORLD_DATA", str(write_alfworld_data(tmp_path)))
    env = gym.make(ENV_ID)
    yield env
    env.close()


def test_the_written_games_are_the_task_set(alfworld_env):
    tasks = alfworld_env.unwrapped.all_tasks
    assert sorted(tasks.ids) == sorted(game.folder for game in GAMES)
    assert tasks.splits == ("test", "train")  # ALFWorld's valid_seen and valid_unseen are the test split
    for game in GAMES:
        task = tasks.get(game.folder)
        assert task["alfworld_split"] == game.folder.split("/")[0] and task.instruction == game.goal_text
        assert task.split == ("train" if task["alfworld_split"] == "train" else "test")
        assert task["oracle_turns"] == len(game.walkthrough) and task.max_turns == max(6, 2 * len(game.walkthrough))


def test_every_walkthrough_wins_and_the_planner_oracle_wins_every_game(alfworld_env):
    env = alfworld_env.unwrapped
    for game in GAMES:
        alfworld_env.reset(options={"task_id": game.folder})
        for command in game.walkthrough:
            _, reward, terminated, _, info = alfworld_env.step(command)
            assert info["action_valid"]
        assert terminated and reward == 1.0 and info["success"]
        alfworld_env.reset(options={"task_id": game.folder})
        result = rollout(alfworld_env, "oracle", reset=False)
        assert result.success and env.turn <= len(game.walkthrough) + 1, game.folder


def test_the_planner_oracle_solves_it_and_bad_input_changes_nothing(alfworld_env):
    observation, info = alfworld_env.reset(options={"task_id": GAMES[0].folder})
    assert "Your task is to: put a mug in shelf" in observation and "Welcome" not in observation
    assert "go to countertop 1" in info["admissible_actions"]
    observation, _, terminated, _, info = alfworld_env.step("fly to the moon")
    assert observation == "Nothing happens." and not terminated and info["turn"] == 1
    result = rollout(alfworld_env, "oracle", reset=False)
    assert result.success and alfworld_env.unwrapped.turn <= alfworld_env.unwrapped.task.max_turns


@pytest.mark.parametrize("action", [
    "go to countertop 1. take mug 1 from countertop 1", "go to countertop 1 then go to shelf 1", "go to countertop 1, look",
    "take mug 1 and apple 1 from countertop 1", "take all from countertop 1", "save", "script", "restore", "quit",
    '{"name": "command", "arguments": {"command": "look\\u0000"}}', 'command(command="go to \\x00countertop 1")',
    '{"name": "command", "arguments": {"command": "\\ud800"}}', "go to countertop\u00a01"])
def test_one_game_action_a_command_and_nothing_for_the_host(alfworld_env, action):
    """ALFWorld's commands follow Navigation's rules (``tools.command``): one action, printable ASCII."""
    alfworld_env.reset(options={"task_id": GAMES[0].folder})
    env = alfworld_env.unwrapped
    before = (env.state_key(), env.admissible_actions())
    observation, reward, terminated, _, info = alfworld_env.step(action)
    assert not info["action_valid"] and observation.startswith("Invalid action:") and reward == 0.0, observation
    assert (env.state_key(), env.admissible_actions(), info["turn"]) == (*before, 1)


def test_a_snapshot_restores_by_replay(alfworld_env):
    alfworld_env.reset(options={"task_id": GAMES[0].folder})
    alfworld_env.step("go to countertop 1")
    snap = alfworld_env.unwrapped.snapshot()
    assert snap["state"] is None
    alfworld_env.step("take mug 1 from countertop 1")
    observation, info = alfworld_env.reset(options={"snapshot": snap})
    assert "take mug 1 from countertop 1" in info["admissible_actions"] and info["turn"] == 1


def test_the_oracle_recovers_from_a_detour(alfworld_env):
    env = alfworld_env.unwrapped
    alfworld_env.reset(options={"task_id": GAMES[1].folder})  # the apple goes in the closed fridge
    for detour in ("go to cabinet 1", "open cabinet 1", "go to countertop 1", "take mug 1 from countertop 1"):
        assert alfworld_env.step(detour)[4]["action_valid"]
    assert env.oracle_action() == env.oracle_action()  # planned once per state
    result = rollout(alfworld_env, "oracle", reset=False)
    assert result.success and env.turn <= env.task.max_turns


def test_engines_are_reused_across_games_and_a_refused_restore_leaves_the_episode_as_it_was(monkeypatch, tmp_path):
    pytest.importorskip("fast_downward", reason="textworld[pddl]'s fast-downward-textworld did not build here")
    import budgetgym.envs.alfworld.env as alfworld_module

    monkeypatch.setattr(alfworld_module, "ENGINES_KEPT", 2)
    monkeypatch.setenv("ALFWORLD_DATA", str(write_alfworld_data(tmp_path)))
    wrapped = gym.make(ENV_ID)
    env = wrapped.unwrapped
    wrapped.reset(options={"task_id": GAMES[0].folder})
    wrapped.step("go to countertop 1")
    snap = env.snapshot()
    games = set()
    for game in GAMES:  # six games through two engines: each new game goes into the older engine
        wrapped.reset(options={"task_id": game.folder})
        games |= {id(engine.game) for engine in env._engines.engines()}
    assert len(env._engines.engines()) == 2 and len(games) == 2
    wrapped.reset(options={"task_id": GAMES[2].folder})
    wrapped.step("go to cabinet 1")
    before = (env.last_observation, env.turn, env.admissible_actions())
    forged = {**snap, "transcript": [["go to countertop 1", "You arrive somewhere else."]]}
    with pytest.raises(Exception, match="diverged|digest|corrupt"):
        wrapped.reset(options={"snapshot": forged})
    assert (env.last_observation, env.turn, env.admissible_actions()) == before
    observation = wrapped.step("open cabinet 1")[0]
    assert "You open the cabinet 1" in observation and "keychain 1" in observation
    wrapped.close()


def test_the_host_programs_argv_survives_loading_games(alfworld_env):
    argv = list(sys.argv)
    for game in GAMES:
        alfworld_env.reset(options={"task_id": game.folder})
    assert sys.argv == argv


def test_envs_in_several_threads_play_alike_and_leave_the_process_as_it_was(monkeypatch, tmp_path):
    """Envs made, played and closed in a thread pool share the process's idle engines and the
    translator's memory: every walkthrough still wins, no two envs hold one engine, and the
    translator and ``sys.argv`` are the process's own afterwards."""
    fast_downward = pytest.importorskip("fast_downward", reason="textworld[pddl]'s fast-downward-textworld did not build here")
    monkeypatch.setenv("ALFWORLD_DATA", str(write_alfworld_data(tmp_path)))
    translate, argv = fast_downward.pddl2sas, list(sys.argv)
    held: dict[int, int] = {}  # id(engine) -> the thread holding it now
    clashes = []

    def play(worker: int) -> list[bool]:
        wins = []
        for round_ in range(2):
            env = gym.make(ENV_ID)
            for game in GAMES[worker::3]:
                env.reset(options={"task_id": game.folder})
                for engine in env.unwrapped._engines.engines():
                    if held.setdefault(id(engine), worker) != worker:
                        clashes.append((worker, held[id(engine)]))
                for command in game.walkthrough:
                    _, reward, terminated, _, _ = env.step(command)
                wins.append(terminated and reward == 1.0)
            for engine in env.unwrapped._engines.engines():
                held.pop(id(engine), None)
            env.close()
        return wins

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(play, range(3)))
    assert all(all(wins) and len(wins) == 4 for wins in results), results
    assert not clashes
    assert fast_downward.pddl2sas is translate and sys.argv == argv


def test_a_failure_state_is_built_from_a_mistake_and_error_injection_recovers_from_it(alfworld_env):
    import random

    from budgetgym.core.failures import build_failure_state
    from budgetgym.wrappers import ErrorInjection

    base = alfworld_env.unwrapped
    assert base.failure_kinds == ("wrong_receptacle", "skipped_ahead", "left_early", "wrong_object", "wasted_action")
    task = base.tasks.get("valid_unseen/pick_and_place_simple-Cup-None-SideTable-6/trial_budgetgym_6")
    # One kind that moves the game's facts (the builder checks it left the clean path): one build is ~10 s.
    states = [build_failure_state(alfworld_env, task, "wrong_object", random.Random(0))]
    assert states[0] is not None and states[0]["kind"] == "wrong_object"
    taken = states[0]["snapshot"]["transcript"][-1]
    assert "take" in str(taken) and "cup 1" not in states[0]["description"].split(" instead")[0]
    env = ErrorInjection(alfworld_env, states=states)
    observation, info = env.reset(seed=0)
    assert info["injected_error"]["kind"] == "wrong_object"
    assert rollout(env, "oracle", start=(observation, info)).success


def test_failure_states_are_built_on_first_use_for_the_test_split_and_cached(alfworld_env, monkeypatch, tmp_path):
    """``ErrorInjection`` on the test split builds the split's states (one draw per game and kind
    here; the defaults give 115 from these six games), each one the planner recovers from; a second
    process reads them back from the cache (its in-process memory is cleared here)."""
    import budgetgym.envs.alfworld.env as alfworld_module
    from budgetgym.wrappers import ErrorInjection

    monkeypatch.setenv("BUDGETGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(alfworld_module, "FAILURES_PER_GAME_KIND", 1)
    monkeypatch.setattr(alfworld_module, "FAILURE_DRAWS", 1)
    env = ErrorInjection(gym.make(ENV_ID, split="test"))
    states = env.states
    base = env.unwrapped
    assert {s["task_id"] for s in states} == {g.folder for g in GAMES if not g.folder.startswith("train/")}
    assert {s["kind"] for s in states} == set(base.failure_kinds)
    assert len({s["id"] for s in states}) == len(states) and all(s["id"].startswith(f"{s['task_id']}/{s['kind']}.")
                                                                 for s in states)
    assert len({(s["task_id"], str(s["snapshot"]["transcript"])) for s in states}) == len(states)
    for number in range(0, len(states), 4):
        observation, info = env.reset(options={"task_id": states[number]["task_id"]}, seed=number)
        assert info["injected_error"]["kind"] in base.failure_kinds
        assert rollout(env, "oracle", start=(observation, info)).success
    written = sorted((tmp_path / "cache" / "alfworld").glob("failure_states-test-*.jsonl"))
    assert len(written) == 1
    monkeypatch.setattr(alfworld_module, "_BUILT_FAILURE_STATES", {})
    monkeypatch.setattr(alfworld_module.ALFWorldEnv, "_build_failure_states", None)  # a rebuild would fail
    assert [dict(s) for s in base.failure_states()] == [dict(s) for s in states]
    env.close()


def test_probe_recovery_runs_on_the_test_split(alfworld_env, monkeypatch, tmp_path, capsys):
    import budgetgym.envs.alfworld.env as alfworld_module
    from budgetgym.cli import main

    monkeypatch.setenv("BUDGETGYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(alfworld_module, "FAILURES_PER_SPLIT", 1)  # one game of each split
    monkeypatch.setattr(alfworld_module, "FAILURES_PER_GAME_KIND", 1)
    monkeypatch.setattr(alfworld_module, "FAILURE_DRAWS", 1)
    assert main(["probe", "recovery", "--env", ENV_ID, "--agent", "oracle", "--attempts", "1", "--split", "test",
                 "--kinds", "wrong_object", "--out", str(tmp_path / "probe"), "--no-progress", "--quiet"]) == 0
    report = next((tmp_path / "probe").glob("recovery*.json"))
    capsys.readouterr()
    assert report.stat().st_size > 0
