"""Navigation-v0: the shipped games, the oracle, fast restore against replay and against TextWorld
itself, failure states, bad input, and the evaluation verbs on it.

Loading games is the expensive part: one env for the module (``env``) serves most tests.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from budgetgym.core import SnapshotError, full_budget, load_failure_states, load_tasks, rollout
from budgetgym.core.env import snapshot_digest
from budgetgym.envs.navigation import NavigationEnv, games, generate
from budgetgym.envs.navigation.engine import GameEngine, clean_text
from budgetgym.eval.exploits.navigation import ChainExplore, CycleAdmissible, PackAdmissible
from budgetgym.envs.navigation.generate import GRAMMARS_PATH, TIERS, UnwinnableGame, build_game, finish_record

TASKS = load_tasks("navigation")
FAILURES = load_failure_states("navigation")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env():
    env = NavigationEnv()
    yield env
    env.close()


def _json(value):
    return json.dumps(value, sort_keys=True)


def _walk(env, rng, steps):
    """A random admissible walk of up to ``steps`` turns from the current state; the actions played."""
    played = []
    for _ in range(steps):
        action = rng.choice(env.admissible_actions())
        _, _, terminated, truncated, _ = env.step(action)
        played.append(action)
        if terminated or truncated:
            break
    return played


# ------------------------------------------------------------------ the shipped set


def test_the_game_set_meets_the_counts():
    tiers = Counter(task["tier"] for task in TASKS)
    assert len(TASKS) >= 73 and len(tiers) >= 4 and min(n for tier, n in tiers.items() if tier not in ("long", "xlong")) >= 20
    # Long horizons (issue 22): 12+ rooms, quests of 15-40 commands, full budgets 30-80, on both splits.
    long = [task for task in TASKS if task["tier"] == "long"]
    assert len(long) >= 7 and {task.split for task in long} == {"train", "test"}
    for task in long:
        assert task["generator"]["rooms"] >= 12 and 15 <= task["oracle_turns"] <= 40, task.id
        assert 30 <= task.max_turns <= 80, task.id
    # Longer still: sixteen rooms, oracles of 26-40 commands, never longer than TextWorld's own walkthrough.
    xlong = [task for task in TASKS if task["tier"] == "xlong"]
    assert len(xlong) >= 6 and {task.split for task in xlong} == {"train", "test"}
    assert max(task["oracle_turns"] for task in xlong if task.split == "test") >= 35
    for task in xlong:
        assert task["generator"]["rooms"] >= 16 and 26 <= task["oracle_turns"] <= min(40, len(task["walkthrough"]))
        assert 52 <= task.max_turns <= 80, task.id
    assert {(t["tier"], t.split) for t in TASKS} == {(tier.name, s) for tier in TIERS for s in ("train", "test")}
    for task in TASKS:
        assert task.max_turns == full_budget(task["oracle_turns"]), task.id
        assert (games.GAMES_DIR / f"{task['game']}.z8.gz").exists() and (games.GAMES_DIR / f"{task['game']}.json").exists()
    shipped = sum(p.stat().st_size for p in games.GAMES_DIR.iterdir())
    assert shipped < 30 * 2**20, shipped
    assert sorted(p.name for p in games.GAMES_DIR.iterdir()) == sorted(
        f"{t['game']}{ext}" for t in TASKS for ext in (".json", ".z8.gz"))
    assert "assets/navigation/games/*.z8.gz" in (ROOT / "pyproject.toml").read_text()
    for record in games.GAMES_DIR.glob("*.json"):
        assert json.loads(record.read_text())["KB"]["text_grammars_path"] == GRAMMARS_PATH, record.name


def _legal_win(env, task_id: str, commands: list[str]) -> bool:
    """Whether ``commands`` win game ``task_id`` played in the env, each one valid action of the
    command tool that changes the world (no chain, nothing the game ignores)."""
    env.reset(seed=0, options={"task_id": task_id})
    for number, command in enumerate(commands, 1):
        before = env.state_key()
        _, _, terminated, truncated, info = env.step(command)
        if not info["action_valid"] or env.state_key() == before:
            return False
        if terminated or truncated:
            return bool(info["success"]) and number == len(commands)
    return False


def test_the_oracle_wins_every_shipped_game_within_its_budget(env):
    # 1x is the shortest known solution: the oracle's length, which no legal walkthrough beats
    # (every shipped walkthrough is legal: the oracle followed it on 12 games it beat by 1-5 turns).
    legal = 0
    for task in env.tasks:
        result = rollout(env, "oracle", seed=0, options={"task_id": task.id})
        assert result.success and result.turns == task["oracle_turns"] <= task.max_turns, task.id
        if _legal_win(env, task.id, task["walkthrough"]):
            legal += 1
            assert task["oracle_turns"] <= len(task["walkthrough"]), task.id
    assert legal == len(env.tasks)


def test_a_walkthrough_that_chains_or_stops_short_is_not_a_legal_win(env):
    walkthrough = TASKS.get("nav-easy-000")["walkthrough"]
    assert _legal_win(env, "nav-easy-000", walkthrough)
    assert not _legal_win(env, "nav-easy-000", walkthrough[:-1])
    assert not _legal_win(env, "nav-easy-000", [f"{walkthrough[0]}. {walkthrough[1]}", walkthrough[2]])
    assert not _legal_win(env, "nav-easy-000", ["look", *walkthrough])


def test_the_oracle_follows_the_walkthrough_only_where_it_is_shorter(env):
    # nav-hard-006: TextWorld's policies solve its two quests one after another in 10 commands;
    # its walkthrough shares their steps in 6. Off the walkthrough's states the policy plans.
    task = TASKS.get("nav-hard-006")
    env.reset(seed=0, options={"task_id": task.id})
    assert env.oracle_action() == task["walkthrough"][0] and task["oracle_turns"] == len(task["walkthrough"]) == 6
    detour = next(c for c in env.admissible_actions() if c.startswith("go ") and c not in task["walkthrough"])
    env.step(detour)
    assert rollout(env, "oracle", reset=False).success
    # nav-hard-016: the policies (10) beat the walkthrough (11), so the oracle keeps to them.
    assert TASKS.get("nav-hard-016")["oracle_turns"] == 10 < len(TASKS.get("nav-hard-016")["walkthrough"])


# POSIX time zones 26 hours apart: the compiler, which dates the story by its local clock, sees two
# different days whenever the test runs, and at most one of them is the day the set was built.
BUILD_ZONES = {"XXX+12": -12, "XXX-14": 14}  # POSIX TZ -> hours east of UTC


def _day(hours: int) -> bytes:
    return datetime.now(timezone(timedelta(hours=hours))).strftime("%y%m%d").encode()


@pytest.mark.parametrize("zone", sorted(BUILD_ZONES))
def test_a_game_rebuilds_from_its_recorded_seed_byte_for_byte_on_any_day(tmp_path, monkeypatch, zone):
    monkeypatch.setenv("TZ", zone)  # read by the Inform compilers TextWorld runs
    task = TASKS.get("nav-easy-004")
    tier = next(t for t in TIERS if t.name == task["tier"])
    days = {_day(BUILD_ZONES[zone])}
    record = build_game(tier, 4, task["generator"]["seed"], tmp_path / "work", out=tmp_path)
    days.add(_day(BUILD_ZONES[zone]))
    assert record["walkthrough"] == task["walkthrough"] and record["objective"] == task["objective"]
    # the record byte for byte: no path of the machine that built it (TextWorld's grammar folder)
    assert (tmp_path / "nav-easy-004.json").read_bytes() == (games.GAMES_DIR / "nav-easy-004.json").read_bytes()
    # the story byte for byte: the serial number the compiler wrote (its day) replaced by the fixed one
    compiled = (tmp_path / "work" / "nav-easy-004.z8").read_bytes()
    assert compiled[0x12:0x18] in days  # the compiler's own date, in that zone
    assert gzip.decompress((tmp_path / "nav-easy-004.z8.gz").read_bytes()) == gzip.decompress(
        (games.GAMES_DIR / "nav-easy-004.z8.gz").read_bytes())


def test_a_seed_whose_walkthrough_the_parser_cannot_follow_is_refused_not_shipped(tmp_path, monkeypatch):
    """Easy-tier seed 100171: TextWorld writes ``take type P latchkey from box`` in a room with a
    ``box`` and a ``type P box``, and its own parser only asks which box is meant. The build plays the
    oracle on every seed and skips such a one instead of shipping a task no agent can win."""
    tier = next(t for t in TIERS if t.name == "easy")
    record = build_game(tier, 171, 100171, tmp_path / "work", out=tmp_path)
    assert record is not None and record["walkthrough"][0] == "take type P latchkey from box"
    story_path, load_game = games.story_path, games.load_game
    monkeypatch.setattr(games, "story_path", lambda game: story_path(game, tmp_path))  # the env plays it from tmp_path
    monkeypatch.setattr(games, "load_game", lambda game: load_game(game, tmp_path))
    try:
        with pytest.raises(UnwinnableGame, match="did not win"):
            finish_record(record)
    finally:
        games.forget(record["game"], tmp_path)


# ------------------------------------------------------------------ the set's provenance


def test_the_manifest_records_what_rebuilds_every_shipped_game():
    """``manifest.json`` holds each tier's options, TextWorld version, selection and, per game, the
    seed and the content hashes of the shipped files; it agrees with ``TIERS`` and ``tasks.jsonl``."""
    manifest = generate.read_manifest()
    assert list(manifest) == [tier.name for tier in TIERS]
    for tier in TIERS:
        entry = manifest[tier.name]
        shipped = [task for task in TASKS if task["tier"] == tier.name]
        assert entry["options"] == tier.options() and entry["selection"] == tier.selection(), tier.name
        assert [(game["id"], game["seed"]) for game in entry["games"]] == [
            (task.id, task["generator"]["seed"]) for task in shipped]
        for game, task in zip(entry["games"], shipped):
            assert task["generator"] == {"seed": game["seed"], **entry["options"], "textworld": entry["textworld"]}
            assert generate.game_hashes(task["game"]) == {k: game[k] for k in ("story_sha256", "record_sha256")}


# One game a tier, so every run rebuilds each tier (about 23 s of CPU in all): the last of each,
# but xlong's fourth (seed 5009, 13 s against 19 for the last), which a selection with today's
# oracle no longer reaches, so only the recorded provenance can rebuild it.
REBUILT = {"easy": "nav-easy-021", "medium": "nav-medium-021", "hard": "nav-hard-021", "long": "nav-long-006",
           "xlong": "nav-xlong-003"}


@pytest.mark.parametrize("tier", [tier.name for tier in TIERS])
def test_a_game_of_every_tier_rebuilds_from_its_recorded_provenance(tmp_path, tier):
    game = REBUILT[tier]
    record = generate.rebuild_game(game, tmp_path)  # raises ProvenanceMismatch unless the hashes match
    task = TASKS.get(game)
    assert record["walkthrough"] == task["walkthrough"] and record["objective"] == task["objective"]
    assert gzip.decompress((tmp_path / f"{game}.z8.gz").read_bytes()) == gzip.decompress(
        (games.GAMES_DIR / f"{game}.z8.gz").read_bytes())
    assert (tmp_path / f"{game}.json").read_bytes() == (games.GAMES_DIR / f"{game}.json").read_bytes()


def _shipped_bytes():
    return {path.name: path.read_bytes() for path in sorted(games.GAMES_DIR.iterdir())}


def test_a_rebuild_that_differs_from_its_provenance_stops_and_writes_nothing(tmp_path, monkeypatch):
    manifest = generate.read_manifest()
    manifest["easy"]["games"][0]["story_sha256"] = "0" * 64  # as if TextWorld now built another story
    monkeypatch.setattr(generate, "MANIFEST_PATH", tmp_path / "manifest.json")
    generate.MANIFEST_PATH.write_text(json.dumps(manifest))
    before = _shipped_bytes()
    with pytest.raises(generate.ProvenanceMismatch, match=r"nav-easy-000: seed 1000 now builds a different story "
                                                          r"\(TextWorld 1\.7\.0 built it, .* is installed\)"):
        generate.build_games(only="nav-easy-000")
    assert _shipped_bytes() == before
    # Options in TIERS that are not the recorded ones are refused before anything is built.
    manifest["easy"]["options"]["rooms"] = 4
    with pytest.raises(generate.ProvenanceMismatch, match="built with options .* reselect"):
        generate.rebuild_game("nav-easy-001", tmp_path / "out", manifest)
    assert not (tmp_path / "out").exists()
    # A tier with no recorded provenance is selected only when asked to (a new set of games).
    del manifest["xlong"]
    generate.MANIFEST_PATH.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"\['xlong'\] have no recorded provenance .*\(--reselect\)"):
        generate.build_games(tiers=["xlong"])
    with pytest.raises(ValueError, match="reselect selects whole tiers"):
        generate.build_games(only="nav-easy-000", reselect=True)
    assert _shipped_bytes() == before


# ------------------------------------------------------------------ the engine against TextWorld


@pytest.mark.parametrize("game", ["nav-easy-001", "nav-medium-003", "nav-hard-003"])
def test_the_engine_plays_as_textworld_start_does(game):
    textworld = pytest.importorskip("textworld")
    path = games.story_path(game)
    raw_dir = Path(path).parent / f"raw-{game}"
    raw_dir.mkdir(exist_ok=True)
    story = raw_dir / f"{game}.z8"
    story.write_bytes(Path(path).read_bytes())
    (raw_dir / f"{game}.json").write_bytes((games.GAMES_DIR / f"{game}.json").read_bytes())
    infos = textworld.EnvInfos(admissible_commands=True, policy_commands=True, score=True, won=True, lost=True)
    raw = textworld.start(str(story), request_infos=infos)
    engine = GameEngine(path, games.load_game(game))
    rng = random.Random(game)
    try:
        for _ in range(4):
            state = raw.reset()
            engine.reset()
            for _ in range(25):
                assert state["admissible_commands"] == engine.admissible_commands()
                merged = engine.progression.winning_policy
                assert state["policy_commands"] == (engine._inform7.gen_commands_from_actions(merged) if merged else [])
                command = rng.choice(state["admissible_commands"])
                state, _, done = raw.step(command)
                result = engine.step(command)
                assert clean_text(state.feedback) == result.text
                assert (state["score"], state["won"], state["lost"]) == (result.score, result.won, result.lost)
                if done:
                    break
    finally:
        raw.close()
        engine.close()


# ------------------------------------------------------------------ snapshots


def test_fast_restore_equals_full_replay(env):
    """At random points of random admissible walks, the fast restore and a full replay agree on
    observations, rewards, progress and admissible commands for the next 20 steps."""
    replayer = NavigationEnv(reward_mode="progress")
    restorer = NavigationEnv(reward_mode="progress")
    rng = random.Random(7)
    try:
        for task_id in rng.sample(list(TASKS.ids), 8):
            env.reset(seed=0, options={"task_id": task_id})
            _walk(env, rng, rng.randrange(0, TASKS.get(task_id).max_turns - 1))
            snap = json.loads(json.dumps(env.snapshot()))
            assert snap["state"] is not None
            replay = dict(snap, state=None)
            obs_a, info_a = restorer.reset(options={"snapshot": snap})
            obs_b, info_b = replayer.reset(options={"snapshot": replay})
            assert (obs_a, info_a) == (obs_b, info_b)
            assert restorer.state_key() == replayer.state_key()
            for _ in range(20):
                if not restorer._ready:
                    break
                action = rng.choice(restorer.admissible_actions() + ["xyzzy", "take the moon"])
                assert restorer.oracle_action() == replayer.oracle_action()
                assert restorer.step(action) == replayer.step(action)
    finally:
        replayer.close()
        restorer.close()


def test_a_snapshot_restores_in_another_process():
    code = ("import json, sys; from budgetgym.envs.navigation import NavigationEnv; e = NavigationEnv(); "
            "o, i = e.reset(options={'snapshot': json.load(sys.stdin)}); "
            "print(json.dumps([o, i['admissible_actions'], e.oracle_action(), e.state_key()]))")
    env = NavigationEnv()
    try:
        env.reset(seed=0, options={"task_id": "nav-hard-007"})
        _walk(env, random.Random(3), 6)
        expected = [env.last_observation, env.admissible_actions(), env.oracle_action(), env.state_key()]
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(env.snapshot()), capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": "12345"})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == expected
    finally:
        env.close()


def test_a_corrupt_or_foreign_state_is_refused_and_changes_nothing(env):
    env.reset(seed=0, options={"task_id": "nav-medium-002"})
    _walk(env, random.Random(1), 3)
    good = env.snapshot()
    key, observation = env.state_key(), env.last_observation
    for state in ({"game": "nav-easy-000", "engine": good["state"]["engine"]},
                  {"game": good["state"]["game"], "engine": dict(good["state"]["engine"], ram="!!")},
                  {"game": good["state"]["game"], "engine": dict(good["state"]["engine"], progression={})},
                  {"game": good["state"]["game"], "engine": dict(good["state"]["engine"], format=99)}):
        with pytest.raises(SnapshotError):
            env.reset(options={"snapshot": dict(good, state=state)})
    env.reset(options={"snapshot": good})
    assert (env.state_key(), env.last_observation) == (key, observation)


# ------------------------------------------------------------------ actions


def test_command_forms_are_equivalent(env):
    results = []
    for form in ("go east", '{"name": "command", "arguments": {"command": "go east"}}',
                 'command(command="go east")', '<tool_call>{"name": "command", "arguments": {"command": "go east"}}'
                                                 '</tool_call>'):
        env.reset(seed=0, options={"task_id": "nav-easy-000"})
        assert "go east" in env.admissible_actions()
        results.append((env.step(form)[0], env.state_key()))
    assert len(set(results)) == 1 and results[0][0].startswith("-= ")


@pytest.mark.parametrize("action", [
    "xyzzy", "take the moon", "go up", "   ", '{"name": "command", "arguments": {}}',
    '{"name": "command", "arguments": {"command": 3}}', '{"name": "teleport", "arguments": {}}',
    "go " + "north " * 60, '{"name": "command", "arguments": {"command": "look\\ngo west"}}',
])
def test_bad_input_costs_the_turn_and_changes_nothing(env, action):
    env.reset(seed=0, options={"task_id": "nav-hard-002"})
    _walk(env, random.Random(5), 2)
    before = env._engine.get_state()
    turn = env.turn
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.strip() and reward == 0.0 and not terminated
    assert info["turn"] == turn + 1
    assert env._engine.get_state() == before


def _call(command):
    return json.dumps({"name": "command", "arguments": {"command": command}})


# Each would have reached the C engine as it was: a line opening with a backslash is a dumb-frotz
# command (an unknown one made it read the same line forever, in C, where no time limit reaches), a
# lone surrogate cannot be encoded for it (the step raised), and a NUL inside a JSON string or a call's
# literal looped forever in C alone and died of SIGSEGV with text around it. Every other C0 control
# and non-ASCII text are refused alike: the games' words are printable ASCII.
ENGINE_HOSTILE = (["\\help", "\\ud800 sorry, cannot 1,234.5", "\\", "\ud800 go north", "xyzzy \udfff", _call("\\q"),
                   _call("\ud800 look"), _call("\x00"), _call("look \x00 around"), 'command(command="\\x00")',
                   'command(command="go \\x00 north")', "<tool_call>" + _call("\x00look") + "</tool_call>",
                   _call("\x7f"), _call("go \x85north"), "caf\u00e9"]
                  + [_call(chr(code)) for code in range(32)] + [_call(f"take {chr(code)} key") for code in range(32)])
# Meta commands of the interpreter: save, restore, script, transcript and recording write or read
# files in the process's current folder (a .qzl named after the story, a file named "script"); quit,
# restart, undo and oops step outside the game's turns. Words count by their first nine letters.
META_COMMANDS = ["save", "SAVE", "restore", "script", "script on", "transcript", "transcriptzz", "unscript",
                 "noscript", "recording on", "replay", "verify", "quit", "q", "restart", "undo", "oops key",
                 _call("save"), 'command(command="script")', "<tool_call>" + _call("restore") + "</tool_call>"]


def test_hostile_text_and_meta_commands_never_reach_the_engine_or_the_host(tmp_path):
    # In a child process with a time limit, its output thrown away (a looping engine prints without
    # end), in an empty current folder: a hang fails the test instead of stopping the suite, and any
    # file the engine writes shows. The answers come back in a file outside that folder.
    answers_file, cwd = tmp_path / "answers.json", tmp_path / "cwd"
    cwd.mkdir()
    code = ("import json, random, sys; sys.path.insert(0, {tests!r}); from test_navigation import _walk; "
            "from budgetgym.envs.navigation import NavigationEnv; env = NavigationEnv(); answers = []\n"
            "for action in json.loads(sys.argv[1]):\n"
            "    env.reset(seed=0, options={{'task_id': 'nav-hard-002'}}); _walk(env, random.Random(5), 2)\n"
            "    before, turn = env._engine.get_state(), env.turn\n"
            "    observation, reward, terminated, truncated, info = env.step(action)\n"
            "    assert env._engine.get_state() == before and info['turn'] == turn + 1, action\n"
            "    answers.append([observation, reward, terminated, info['action_valid']])\n"
            "open(sys.argv[2], 'w').write(json.dumps(answers))").format(tests=str(Path(__file__).parent))
    actions = ENGINE_HOSTILE + META_COMMANDS
    done = subprocess.run([sys.executable, "-c", code, json.dumps(actions), str(answers_file)], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(answers_file.read_text())
    assert len(answers) == len(actions)
    for action, (observation, reward, terminated, valid) in zip(actions, answers):
        assert observation.startswith("Invalid action:") and not valid, (action, observation)
        assert reward == 0.0 and not terminated
    assert "'\\ud800'" in answers[3][0] and "'\\x00'" in answers[8][0] and "backslash" in answers[0][0]
    assert "meta command" in answers[len(ENGINE_HOSTILE)][0]
    assert list(cwd.iterdir()) == []  # no save file, no transcript


# Inform's parser runs each of these as several game actions at the start of nav-easy-000 (checked with
# the engine itself in test_the_game_would_run_each_packed_command_as_several_actions); the last three
# would where a room or a box holds more things (here they do one action the game tracks).
SEVERAL = ["take rectangular keycard from Canadian box. go east", "take rectangular keycard from Canadian box then go east",
           "take rectangular keycard from Canadian box and then go east", "go north. go south", "e.w", "e, w", "e then w",
           "take Canadian key and rectangular keycard", "take Canadian key, rectangular keycard", "take both"]
PACKED = SEVERAL + ["take all but Canadian key", "take everything from Canadian box", "examine box. take Canadian key"]


@pytest.mark.parametrize("action", PACKED + [_call(PACKED[0]), f'command(command="{PACKED[5]}")'])
def test_a_command_holds_one_game_action(env, action):
    env.reset(seed=0, options={"task_id": "nav-easy-000"})
    before, key = env._engine.get_state(), env.state_key()
    observation, reward, terminated, truncated, info = env.step(action)
    assert not info["action_valid"] and "one game action a command" in observation, observation
    assert (env._engine.get_state(), env.state_key(), info["turn"]) == (before, key, 1)
    assert env.oracle_action() == TASKS.get("nav-easy-000")["walkthrough"][0]


def test_the_game_would_run_each_packed_command_as_several_actions(env):
    """Why the words above are refused: the game itself runs several actions for them. The engine's
    own guard (more than one action event) undoes whatever still would, past the words' check."""
    from textworld.envs.wrappers.tw_inform7 import _detect_i7_events_debug_tags

    env.reset(seed=0, options={"task_id": "nav-easy-000"})
    engine = env._engine
    start = engine.get_state()
    for command in SEVERAL:
        frotz_before = engine._frotz.get_state()
        events, _ = _detect_i7_events_debug_tags(engine._frotz.step(command)[0])
        engine._frotz.set_state(frotz_before)
        assert len(events) >= 2, (command, events)
        result = engine.step(command)
        assert not result.acted and "one game action a command" in result.text
        assert engine.get_state() == start
    assert engine.step("take Canadian key").acted


def test_no_command_of_a_shipped_game_is_refused():
    from budgetgym.envs.navigation.tools.command import command_error

    for task in TASKS:
        assert all(command_error(c) is None for c in task["walkthrough"]), task.id
        names = [info["name"] for _, info in json.loads((games.GAMES_DIR / f"{task['game']}.json").read_text())["infos"]
                 if info.get("name")]
        for name in names:
            assert command_error(f"take {name}") is None and command_error(f"put {name} on {name}") is None, name


def test_a_turn_holds_one_call(env):
    env.reset(seed=0, options={"task_id": "nav-easy-000"})
    first, second = TASKS.get("nav-easy-000")["walkthrough"][:2]
    key = env.state_key()
    observation, _, _, _, info = env.step(json.dumps([{"name": "command", "arguments": {"command": c}}
                                                      for c in (first, second)]))
    assert not info["action_valid"] and observation.startswith("Invalid action:")
    assert env.state_key() == key and env.oracle_action() == first


def test_the_engine_restarts_where_it_was_when_it_fails(env):
    env.reset(seed=0, options={"task_id": "nav-medium-005"})
    _walk(env, random.Random(2), 4)
    key, admissible = env.state_key(), env.admissible_actions()
    machine = env._frotz

    def crash(command):
        raise OSError("the interpreter died")

    machine.step = crash  # a dead interpreter: the real one cannot be made to die on demand
    observation, *_ = env.step(admissible[0])
    assert "restarted" in observation and env._frotz is not machine
    assert (env.state_key(), env.admissible_actions()) == (key, admissible)
    assert rollout(env, "oracle", reset=False).success


def test_envs_in_four_threads_load_and_play_as_one_thread_does(tmp_path):
    """Four threads, each with its own env, load games for the first time at once (TextWorld's logic
    parser is one per process and not thread-safe: the threads executor crashed) and play the same
    episodes, byte for byte, as one thread. In a fresh process, so that no game is loaded yet."""
    code = ("import json, sys\n"
            "from concurrent.futures import ThreadPoolExecutor\n"
            "from budgetgym.core import rollout\n"
            "from budgetgym.envs.navigation import NavigationEnv\n"
            "from budgetgym.eval.agents.scripted import NoisyOracleAgent\n"
            "ids = json.loads(sys.argv[1])\n"
            "def play(part):\n"
            "    env, agent, out = NavigationEnv(), NoisyOracleAgent(0.3), []\n"
            "    for task_id in part:\n"
            "        observation, info = env.reset(seed=3, options={'task_id': task_id})\n"
            "        agent.reset(env, observation, info, 3)\n"
            "        rollout(env, lambda o, i, e: agent.act(o, i), reset=False, start=(observation, info))\n"
            "        out.append([task_id, env.transcript, env.snapshot()['state']])\n"
            "    env.close()\n"
            "    return out\n"
            "with ThreadPoolExecutor(4) as pool:\n"
            "    threaded = sorted(x for part in pool.map(play, [ids[i::4] for i in range(4)]) for x in part)\n"
            "serial = sorted(play(ids))\n"
            "print(json.dumps([threaded == serial, len(serial)]))\n")
    ids = [task.id for task in TASKS][::8]
    done = subprocess.run([sys.executable, "-c", code, json.dumps(ids)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [True, len(ids)]


# ------------------------------------------------------------------ rewards and termination


def test_progress_rewards_sum_to_the_score_share():
    env = NavigationEnv(reward_mode="progress", task_ids=["nav-medium-007"])
    try:
        result = rollout(env, "oracle", seed=0)
        rewards = [step.reward for step in result.steps]
        assert result.success and sum(rewards) == pytest.approx(1.0)
        assert sorted(set(rewards)) == [0.0, 0.5]  # two quests, one point each
    finally:
        env.close()


def test_the_budget_truncates_a_wandering_agent(env):
    env.reset(seed=0, options={"task_id": "nav-easy-003"})
    for turn in range(1, env.task.max_turns + 1):
        _, _, terminated, truncated, _ = env.step("look")
        assert not terminated and truncated == (turn == env.task.max_turns)


# ------------------------------------------------------------------ failure states


def test_failure_states_meet_the_counts():
    kinds = Counter(state["kind"] for state in FAILURES)
    assert len(FAILURES) >= 100 and len(kinds) >= 5, kinds
    assert set(kinds) <= set(NavigationEnv.failure_kinds)
    assert len({state["id"] for state in FAILURES}) == len(FAILURES)
    # Every game of both splits has one, so a recovery probe can be run on any split or game; but
    # nav-easy-006, a straight walk whose only wrong move (north from the second room) leads back to
    # the first, a state the clean walk passed through, so the builder keeps no mistake there.
    assert set(TASKS.ids) - {state["task_id"] for state in FAILURES} == {"nav-easy-006"}
    for split in ("train", "test"):
        on_split = Counter(s["kind"] for s in FAILURES if TASKS.get(s["task_id"]).split == split)
        assert set(on_split) == set(kinds), (split, on_split)
        for tier in ("long", "xlong"):  # so `probe recovery --split test` has long horizons
            on_long = {s["task_id"] for s in FAILURES if TASKS.get(s["task_id"])["tier"] == tier
                       and TASKS.get(s["task_id"]).split == split}
            assert len(on_long) >= 2, (tier, split, on_long)
    for state in FAILURES:
        assert state["description"] and state["task_id"] in TASKS
        assert state["error_step"] == len(state["snapshot"]["transcript"]) - 1


def test_every_failure_state_restores_and_the_oracle_recovers(env):
    for state in FAILURES:
        env.reset(options={"snapshot": state["snapshot"]})
        result = rollout(env, "oracle", reset=False)
        assert result.success and env.turn <= env.task.max_turns, state["id"]


def test_every_failure_state_is_canonical_restore_replay_and_the_digest_check_agree(env):
    """The engine's state is the same JSON however it was reached: the shipped state, a fast restore of
    it, a replay of its transcript, and both after each further oracle step. So an edit of a snapshot is
    judged on what it changed (a snapshot with no digest or a wrong one restores exactly when its state
    is what its replay gives; another first observation is refused for that)."""
    replayer = NavigationEnv()
    try:
        for number, state in enumerate(FAILURES):
            snap = dict(state["snapshot"])  # shipped without a digest: a restore checks it against a replay
            shipped = _json(snap["state"])
            replayer.reset(options={"snapshot": dict(snap, state=None)})
            assert _json(replayer._get_state()) == shipped, state["id"]
            env.reset(options={"snapshot": dict(snap, digest=snapshot_digest(snap))})  # the fast path
            assert _json(env._get_state()) == shipped, state["id"]
            if number % 6:
                continue
            env.reset(options={"snapshot": dict(snap, digest="0" * 32)})  # a wrong digest: checked by replay
            while env.running:  # the oracle to the end, in both
                action = env.oracle_action()
                assert action == replayer.oracle_action()
                assert env.step(action) == replayer.step(action)
                assert _json(env._get_state()) == _json(replayer._get_state()), state["id"]
            with pytest.raises(SnapshotError, match="first observation differs"):
                env.reset(options={"snapshot": dict(snap, first_observation=snap["first_observation"] + " ")})
    finally:
        replayer.close()


# ------------------------------------------------------------------ exploits and evaluation


def test_the_exploit_agents_do_no_better_than_random(env):
    """Cycling, brute-force packing (every admissible command chained, in as many calls as a turn
    held) and chained exploration: at most 5% of the test games, and random + 5 points. Before a
    command held one game action, packing won 4 of the 66 games and random 1 (measured)."""
    from budgetgym.eval.agents.scripted import RandomAgent

    def success_rate(agent):
        wins = 0
        tasks = [task for task in env.tasks if task.split == "test"]
        for task in tasks:
            observation, info = env.reset(seed=0, options={"task_id": task.id})
            agent.reset(env, observation, info, 0)
            result = rollout(env, lambda o, i, e: agent.act(o, i), reset=False, start=(observation, info))
            wins += result.success
        return wins / len(tasks)

    floor = success_rate(RandomAgent())
    for agent in (CycleAdmissible(), PackAdmissible(), ChainExplore()):
        rate = success_rate(agent)
        assert rate <= min(0.05, floor + 0.05), (agent.name, rate, floor)


def test_eval_and_both_probes_run_on_navigation(tmp_path, capsys):
    from budgetgym.cli import main

    env_id = "budgetgym/Navigation-v0"
    assert main(["eval", "--env", env_id, "--agent", "noisy-oracle:0.3", "--tasks", "3", "--k", "1,2",
                 "--budgets", "0.5,1.0", "--out", str(tmp_path / "eval"), "--no-progress", "--quiet"]) == 0
    assert (tmp_path / "eval" / "summary.json").exists()
    assert main(["probe", "recovery", "--env", env_id, "--agent", "oracle", "--attempts", "1", "--kinds", "wrong_place",
                 "--out", str(tmp_path / "probe"), "--no-progress", "--quiet"]) == 0
    assert main(["probe", "action-quality", "--env", env_id, "--agent-a", "random", "--agent-b", "oracle",
                 "--reference", "oracle", "--tasks", "2", "--rollouts", "1", "--out", str(tmp_path / "probe"),
                 "--no-progress", "--quiet"]) == 0
    written = sorted(p.name for p in (tmp_path / "probe").iterdir())
    assert "action_quality.json" in written and any(name.startswith("recovery") for name in written)
    capsys.readouterr()


def test_one_file_per_role():
    """Issue 26: ``assets.py`` is the family's one data command, ``generate.py`` library code,
    ``mistakes.py`` the kinds ``propose_mistake`` draws from; no ``failures.py``."""
    from budgetgym.envs.navigation import assets, generate, mistakes

    package = Path(generate.__file__).parent
    assert not (package / "failures.py").exists()
    assert callable(assets.main) and not hasattr(generate, "main")
    assert "__main__" not in Path(generate.__file__).read_text()
    assert NavigationEnv.failure_kinds == mistakes.KINDS == tuple(mistakes.MISTAKES)
    assert {state["kind"] for state in FAILURES} <= set(mistakes.KINDS)
    with pytest.raises(ValueError, match="no tier"):
        generate.build_games(tiers=["epic"])


MAKE_PROBE = """
import sys
{block}
import gymnasium as gym
import budgetgym
try:
    env = gym.make("budgetgym/Navigation-v0")
except Exception as err:
    print(type(err).__name__, err)
print("textworld" in sys.modules, "jericho" in sys.modules)
"""


def test_make_imports_textworld_only_when_a_game_is_loaded():
    """``gym.make`` checks TextWorld is installed without importing it (most of what making cost,
    issue 27); without it, ``make`` still fails with the install command."""
    def probe(block=""):
        out = subprocess.run([sys.executable, "-c", MAKE_PROBE.format(block=block)], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        return out.stdout.strip().splitlines()

    assert probe() == ["False False"]
    missing = probe("sys.modules['textworld'] = None  # as if it were not installed")
    assert missing[0].startswith("NavigationNotInstalled") and "pip install 'budgetgym[navigation]'" in missing[0]
    env = NavigationEnv(task_ids=["nav-easy-000"])  # and once a game is loaded, it plays
    try:
        assert env.reset(seed=0)[0] and "textworld" in sys.modules
    finally:
        env.close()


def test_a_step_past_its_time_limit_is_undone(env, monkeypatch):
    from budgetgym.core.limits import Limits
    from budgetgym.envs.navigation import env as navigation

    env.reset(seed=0, options={"task_id": "nav-hard-001"})
    _walk(env, random.Random(4), 3)
    key, admissible = env.state_key(), env.admissible_actions()
    monkeypatch.setattr(navigation, "STEP_LIMITS", Limits(seconds=1e-9))
    observation, *_ = env.step(admissible[0])
    assert "restarted" in observation and "time" in observation
    assert (env.state_key(), env.admissible_actions()) == (key, admissible)
