"""The contract every registered environment keeps (docs/architecture.md), run over every id.

A new env is checked by these the moment it is added to ``budgetgym.REGISTRY``.
"""

from __future__ import annotations

import gc
import json
import pathlib
import re
import tracemalloc
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetgym
from budgetgym.core import SnapshotError, TextEnv, text_env
from registered import ENV_IDS, make_or_skip
from contract import (HOSTILE_CLASSES, KEYWORD_UNITS, check_bad_action_then_oracle, check_bad_actions,
                      check_deterministic, check_oracle_solves, check_progress_reward, check_snapshot_round_trip,
                      check_sparse_reward_is_success, hostile_action, play)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(params=ENV_IDS)
def env_id(request):
    return request.param


# Hostile actions per id: FUZZ_EXAMPLES examples of three each, with an oracle step after each (about
# 20 s an id on a CI machine).
FUZZ_EXAMPLES = 500
FUZZ_COUNT: dict[str, int] = {}
# Fewer for ids whose every step and state read is a round trip to a container (about 1 s an example),
# a browser or ALFWorld's PDDL engine (about 0.2-0.7 s an example: 500 took 344 s on MiniWoB-v0).
FUZZ_EXAMPLES_OF = {"budgetgym/SWEBench-v0": 20, "budgetgym/MiniWoB-v0": 150, "budgetgym/ALFWorld-v0": 200}


@pytest.fixture(scope="module")
def fuzz_envs():
    """Envs per id (and per role, where a test needs several) for the fuzz tests' examples: hypothesis
    runs many in one test call, and an env made per example would start a browser, a container or a
    PDDL engine each time (and leave it running). Each example resets what it uses, so a reused env
    is also a check that reset and restore leave nothing of the example before."""
    made = {}

    def get(env_id, role="probe"):
        if (env_id, role) not in made:
            made[env_id, role] = make_or_skip(env_id)
            made[env_id, role].reset(seed=0)
        return made[env_id, role]

    yield get
    for env in made.values():
        env.close()


def _task_ids(env, n: int, seed: int = 0) -> list[str]:
    ids = list(env.unwrapped.tasks.ids)
    rng = np.random.default_rng(seed)
    return [ids[i] for i in rng.choice(len(ids), size=min(n, len(ids)), replace=False)]


def test_is_text_env_and_passes_gymnasium_check_env(env_id):
    env = make_or_skip(env_id)
    assert isinstance(env.unwrapped, TextEnv)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.observation_space.contains("any Unicode: é ✓ 漢字 {\"json\": [1]}")
    assert env.action_space.contains("go north")


def test_reset_info_keys_and_json_serialisable(env_id):
    env = make_or_skip(env_id)
    obs, info = env.reset(seed=1)
    assert isinstance(obs, str) and obs
    for key in ("task_id", "turn", "calls", "full_budget", "success", "progress", "action_valid", "action_error", "tools"):
        assert key in info, key
    assert info["turn"] == 0 and info["full_budget"] >= 1
    json.dumps(info)
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action() or "hello")
    json.dumps(info)
    assert info["turn"] == 1 and isinstance(reward, float)


def test_task_drawn_from_seeded_generator(env_id):
    env = make_or_skip(env_id)
    first = [env.reset(seed=s)[1]["task_id"] for s in range(8)]
    again = [env.reset(seed=s)[1]["task_id"] for s in range(8)]
    assert first == again
    if len(env.unwrapped.tasks) > 8:
        assert len(set(first)) > 1


def test_oracle_solves_sampled_tasks_with_sparse_reward(env_id):
    env = make_or_skip(env_id)
    check_oracle_solves(env, _task_ids(env, 5))


def test_sparse_reward_is_success_and_nothing_else(env_id):
    env = make_or_skip(env_id)
    check_sparse_reward_is_success(env, _task_ids(env, 2, seed=1))


def test_progress_reward_sums_to_final_progress(env_id):
    env = make_or_skip(env_id, reward_mode="progress")
    check_progress_reward(env, _task_ids(env, 1, seed=3)[0])


def test_deterministic_byte_for_byte(env_id):
    check_deterministic(lambda: make_or_skip(env_id), _task_ids(make_or_skip(env_id), 1, seed=9)[0])


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "replay"])
def test_snapshot_restore_round_trip_at_random_points(env_id, fast_path):
    env = make_or_skip(env_id)
    check_snapshot_round_trip(env, lambda: make_or_skip(env_id), _task_ids(env, 4, seed=4), fast_path)


def test_foreign_or_corrupt_snapshot_is_refused_and_changes_nothing(env_id):
    env = make_or_skip(env_id)
    env.reset(seed=0)
    env.step(env.unwrapped.oracle_action() or "hello")
    good = env.unwrapped.snapshot()
    before = json.dumps(good, sort_keys=True)
    for corrupt in (
        {**good, "format": "other"},
        {**good, "env": "some.OtherEnv"},
        {**good, "version": 999},
        {**good, "task_id": "no-such-task"},
        {**good, "task_fingerprint": "0" * 16},
        {**good, "turn": 99},
        {**good, "transcript": [["a"]]},
        "not a dict",
    ):
        with pytest.raises(SnapshotError):
            env.reset(options={"snapshot": corrupt})
        assert json.dumps(env.unwrapped.snapshot(), sort_keys=True) == before


def _corruptions(good: dict, base) -> dict[str, dict | str]:
    """One broken snapshot per cause (the cause is the key)."""
    transcript = good["transcript"]
    fast = good["state"] is not None
    cases = {
        "not a mapping": "not a dict",
        "format": {**good, "format": "other"},
        "missing field": {k: v for k, v in good.items() if k != "seed"},
        "unknown field": {**good, "extra": 1},
        "env": {**good, "env": "some.OtherEnv"},
        "version": {**good, "version": 999},
        "version as bool": {**good, "version": True},
        "env_id": {**good, "env_id": 5},
        "task": {**good, "task_id": "no-such-task"},
        "task not a string": {**good, "task_id": ["x"]},
        "fingerprint": {**good, "task_fingerprint": "0" * 16},
        "seed type": {**good, "seed": "0"},
        "seed range": {**good, "seed": -1},
        "transcript shape": {**good, "transcript": [["a"]]},
        "transcript types": {**good, "transcript": [[1, 2]] * len(transcript)},
        "turn": {**good, "turn": len(transcript) + 1},
        "turn as bool": {**good, "turn": True} if len(transcript) == 1 else {**good, "turn": "1"},
        "over budget": {**good, "turn": base.task.max_turns + 1, "transcript": transcript + [["a", "b"]] * (base.task.max_turns + 1 - len(transcript))},
        "too long": {**good, "transcript": [[a, "o" * (base.max_observation_length + 1)] for a, _ in transcript]},
        "first observation": {**good, "first_observation": 3},
        "solved type": {**good, "solved": "yes"},
        "solved and failed": {**good, "solved": True, "failed": True},
        "progress range": {**good, "progress": 2.0},
        "progress type": {**good, "progress": "half"},
        "digest type": {**good, "digest": 12},
        "ended before a turn": {**good, "turn": 0, "transcript": [], "solved": True},
        "replay diverged": {**good, "state": None, "transcript": [[a, o + " (edited)"] for a, o in transcript]},
        "replay status": {**good, "state": None, "solved": True},
    }
    if fast:
        # Edited with the digest recomputed (as a deliberate editor would): the fast path's own checks.
        cases["state schema"] = _redigested({**good, "state": {"garbage": True}})
        cases["state status"] = _redigested({**good, "solved": True})
        # Edited without: the state must be what the transcript's replay gives.
        cases["state edited"] = {**good, "state": _edited_state(good["state"])}
    else:
        cases["state on a replay-only env"] = {**good, "state": {"x": 1}}
    return cases


def _redigested(snap: dict) -> dict:
    from budgetgym.core.env import snapshot_digest

    return {**snap, "digest": snapshot_digest(snap)}


def _edited_state(state):
    """The state with its first string or number changed (the digest no longer matches)."""
    state = json.loads(json.dumps(state))
    stack = [state]
    while stack:
        item = stack.pop()
        for key in (item if isinstance(item, dict) else range(len(item))):
            value = item[key]
            if isinstance(value, str) and value:
                item[key] = value + "x"
                return state
            if isinstance(value, int) and not isinstance(value, bool):
                item[key] = value + 1
                return state
            if isinstance(value, (dict, list)):
                stack.append(value)
    return state


def test_each_refused_restore_leaves_the_running_episode_intact_and_steppable(env_id):
    env, twin = make_or_skip(env_id), make_or_skip(env_id)
    task_id = _task_ids(env, 1, seed=8)[0]
    for e in (env, twin):
        e.reset(seed=0, options={"task_id": task_id})
        play(e, [None, "{broken"])
    good = json.loads(json.dumps(env.unwrapped.snapshot()))
    before = json.dumps(good, sort_keys=True)
    messages = {}
    for cause, corrupt in _corruptions(good, env.unwrapped).items():
        with pytest.raises(SnapshotError) as refused:
            env.reset(seed=123, options={"snapshot": corrupt})
        messages[cause] = str(refused.value)
        assert json.dumps(env.unwrapped.snapshot(), sort_keys=True) == before, cause
    # One message per cause: no two causes share a message (numbers aside).
    shapes = {cause: re.sub(r"\d+", "N", message) for cause, message in messages.items()}
    duplicates = {c: m for c, m in shapes.items() if list(shapes.values()).count(m) > 1}
    assert not duplicates, duplicates
    # Still steppable, and exactly where it was: the same future as a twin that was never refused.
    assert [s[:5] for s in play(env, [None] * 3)] == [s[:5] for s in play(twin, [None] * 3)]


SNAPSHOT_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                            st.text(max_size=6), st.lists(st.integers(0, 3), max_size=2),
                            st.dictionaries(st.text(max_size=3), st.integers(0, 3), max_size=2))


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(where=st.integers(0, 10**6), value=SNAPSHOT_VALUES, delete=st.booleans(), cut=st.integers(0, 4))
def test_a_mutated_snapshot_is_refused_or_restores_what_its_replay_restores(env_id, fuzz_envs, where, value, delete, cut):
    """Property: change one value anywhere in a valid snapshot (or delete it). The restore is either
    refused, leaving the running episode as it was, or gives the state a replay of the mutated
    snapshot gives: the next steps of the two are equal."""
    probe = fuzz_envs(env_id)
    task_id = probe.unwrapped.tasks.ids[where % len(probe.unwrapped.tasks)]
    source = fuzz_envs(env_id, "source")
    source.reset(seed=1, options={"task_id": task_id})
    play(source, ([None, "{broken"] * 3)[:cut])
    snap = json.loads(json.dumps(source.unwrapped.snapshot()))
    paths = [p for p in _paths(snap) if p]
    path = paths[where % len(paths)]
    parent = snap
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    running = fuzz_envs(env_id, "running")
    running.reset(seed=2)
    play(running, [None])
    before = json.dumps(running.unwrapped.snapshot(), sort_keys=True)
    try:
        running.reset(options={"snapshot": snap})
    except SnapshotError:
        assert json.dumps(running.unwrapped.snapshot(), sort_keys=True) == before
        return
    replayed = fuzz_envs(env_id, "replayed")
    replay_snap = {k: v for k, v in snap.items() if k != "digest"}
    replay_snap["state"] = None
    replayed.reset(options={"snapshot": replay_snap})  # a SnapshotError here fails the property
    assert running.unwrapped.running == replayed.unwrapped.running  # a snapshot of an ended episode stays ended
    if running.unwrapped.running:
        a, b = play(running, [None] * 4), play(replayed, [None] * 4)
        assert [s[:5] for s in a] == [s[:5] for s in b]


def test_bad_actions_never_raise_and_change_nothing_but_the_turn(env_id):
    env = make_or_skip(env_id)
    check_bad_actions(env, _task_ids(env, 3, seed=5))


def test_bad_action_then_oracle_continues_as_if_it_never_happened(env_id):
    env, clean = make_or_skip(env_id), make_or_skip(env_id)
    check_bad_action_then_oracle(env, clean, _task_ids(env, 1, seed=6)[0])


def test_step_before_reset_and_after_end_raise_clearly(env_id):
    env = make_or_skip(env_id)
    with pytest.raises(Exception, match="reset"):
        env.step("hello")
    env.reset(seed=0)
    play(env, [None] * 10_000)
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.step("hello")


def test_vectorised_sync_and_async_with_gymnasiums_defaults(env_id):
    """make_vec with default arguments (async: shared memory on): the batches carry the envs' real
    observations, step after step, the same in both modes."""
    make_or_skip(env_id).close()
    runs = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec(env_id, num_envs=4, vectorization_mode=mode)
        try:
            obs, _ = envs.reset(seed=[1, 2, 3, 4])
            run = [tuple(obs)]
            for actions in (("hello", '{"name": "nope"}', "[" * 100, "x"), ("ok", "ok", "ok", "ok")):
                obs, rewards, terminated, truncated, _ = envs.step(actions)
                assert rewards.shape == (4,)
                run.append(tuple(obs))
        finally:
            envs.close()
        runs[mode] = run
    assert all(isinstance(o, str) and o for batch in runs["sync"] for o in batch)
    assert runs["async"] == runs["sync"]


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_copy_mid_episode_is_independent_and_has_the_same_future(env_id, how):
    import copy
    import pickle

    make_or_skip(env_id).close()  # an adapter without its extra or data is skipped, with its reason
    env = budgetgym.make(env_id, budget=0.75, reveal="remaining")
    env.reset(seed=4)
    play(env, [None, "not_a_tool()"])  # an invalid action ends no episode (a failed answer may)
    twin = pickle.loads(pickle.dumps(env)) if how == "pickle" else copy.deepcopy(env)
    assert twin.unwrapped is not env.unwrapped
    assert json.dumps(twin.unwrapped.snapshot(), sort_keys=True) == json.dumps(env.unwrapped.snapshot(), sort_keys=True)
    ahead = play(env, [None] * 3)  # the original moves on: the copy must not follow
    behind = play(twin, [None] * 3)
    assert [s[:5] for s in ahead] == [s[:5] for s in behind]
    assert [json.dumps(s[5], sort_keys=True) for s in ahead] == [json.dumps(s[5], sort_keys=True) for s in behind]


#: Example arguments of every wrapper the package ships (the list itself comes from the package:
#: a new wrapper without an entry here fails the contract instead of being skipped by it).
WRAPPER_ARGUMENTS = {
    "TurnBudget": dict(budget=0.5, reveal="remaining"),
    "BudgetMix": dict(budgets=(0.5, 1.0)),
    "HorizonSchedule": dict(stages=((0, 0.5), (10_000, 1.0)), by="steps"),  # by episodes, info counts resets
    "ChatView": {},
    "ErrorInjection": {},  # where the env ships failure states
}


def shipped_wrappers() -> list[type]:
    """Every ``gym.Wrapper`` class that ``budgetgym.wrappers`` and ``budgetgym.chat`` export."""
    import budgetgym.chat
    import budgetgym.wrappers

    found = [value for module in (budgetgym.wrappers, budgetgym.chat) for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, gym.Wrapper) and value.__module__.startswith("budgetgym")]
    return list(dict.fromkeys(found))


def test_the_contract_runs_every_shipped_wrapper():
    assert {cls.__name__ for cls in shipped_wrappers()} == set(WRAPPER_ARGUMENTS)


def _wrappers(env_id):
    for cls in shipped_wrappers():
        if cls.__name__ == "ErrorInjection" and not text_env(make_or_skip(env_id)).failure_states():
            continue
        yield cls(make_or_skip(env_id), **WRAPPER_ARGUMENTS[cls.__name__])


def test_every_wrapper_passes_check_env_and_remakes_from_its_spec(env_id):
    for wrapped in _wrappers(env_id):
        check_env(wrapped, skip_render_check=True)
        again = gym.make(wrapped.spec)
        assert [w.name for w in again.spec.additional_wrappers] == [w.name for w in wrapped.spec.additional_wrappers]
        assert again.spec.additional_wrappers[-1].kwargs == wrapped.spec.additional_wrappers[-1].kwargs
        obs, info = again.reset(seed=7)
        assert isinstance(obs, str) and info["task_id"] in text_env(again).all_tasks


def _episode_state(env) -> str:
    """Everything an invalid action must leave alone: the family's state, its flags, the tools."""
    base = env.unwrapped
    return json.dumps([base._get_state(), base._solved, base._failed, base._progress, sorted(base.tools),
                       base.state_key()], sort_keys=True, default=str)


HOSTILE_DRAW = st.tuples(st.sampled_from(sorted(HOSTILE_CLASSES)), st.one_of(st.integers(1, 64), st.integers(1, 70_000)),
                         st.sampled_from(KEYWORD_UNITS + ["", "é漢", "\\ud800"]), st.integers(0, 8))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 3), tool_index=st.integers(0, 10_000), draws=st.lists(HOSTILE_DRAW, min_size=3, max_size=3))
def test_fuzzed_hostile_actions_never_raise_and_invalid_ones_change_nothing(env_id, fuzz_envs, seed, tool_index, draws):
    """A grammar of hostile inputs (nesting bombs, long chains, tag floods, many arguments, huge
    numbers, surrogates, control characters) at every size up to the action length limit, three
    actions per example between the oracle's: step() never raises, an invalid action changes nothing
    but the turn. One env serves all examples (what is drawn never depends on its state)."""
    if FUZZ_COUNT.get(env_id, 0) >= 3 * FUZZ_EXAMPLES_OF.get(env_id, FUZZ_EXAMPLES):
        return
    env = fuzz_envs(env_id)
    base = env.unwrapped
    if not base._ready or base.turn + 7 >= base.task.max_turns:
        env.reset(seed=seed)
    tools = sorted(base.tools) or ["f"]
    tool = tools[tool_index % len(tools)]
    for kind, size, unit, extra in draws:
        action = hostile_action(kind, tool, size, unit, base.max_action_length + extra)
        before = _episode_state(env)
        turn = base.turn
        observation, reward, terminated, truncated, info = env.step(action)
        FUZZ_COUNT[env_id] = FUZZ_COUNT.get(env_id, 0) + 1
        assert isinstance(observation, str) and observation and base.turn == turn + 1
        if not info["action_valid"]:
            assert info["action_error"] and reward == 0.0 and not terminated
            assert _episode_state(env) == before, (kind, size)
        if terminated or truncated:
            env.reset(seed=seed)
            continue
        _, _, terminated, truncated, _ = env.step(base.oracle_action() or "ok")
        if terminated or truncated:
            env.reset(seed=seed)


# Ids whose episodes take a tenth of a second or more: fewer episodes, same bound, as (warm-up, settling,
# measured) episodes. MiniWoB-v0 loads a page in a real browser; ALFWorld-v0's PDDL engine rebuilds
# its state from the game's text at every reset (50 ms; a third of a second for a game not loaded in
# one of its engines); SWEBench-v0 takes a container and grades a submission in another (2-3 s).
SLOW_EPISODES = {"budgetgym/MiniWoB-v0": (20, 20, 120), "budgetgym/ALFWorld-v0": (20, 20, 120),
                 "budgetgym/SWEBench-v0": (3, 5, 12)}


def _traced_bytes() -> int:
    """What tracemalloc holds, less the interpreter's table of interned strings: pathlib interns
    every part of a path (``sys.intern``), so the folder names of a sandbox's workspaces come and go
    in it, and the table is allocated anew as it resizes. The new table is traced and the old one,
    allocated before tracing began, is not counted as freed: growth of the interpreter's, not the
    env's (about 1 MB at once on Coding-v0, whenever the resize falls in the measured episodes)."""
    lines = pathlib.Path(pathlib.__file__).read_text(encoding="utf-8").splitlines()
    filters = [tracemalloc.Filter(False, pathlib.__file__, lineno=number)
               for number, line in enumerate(lines, start=1) if "sys.intern(" in line]
    return sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces(filters).statistics("filename"))


def test_long_run_memory_stays_flat(env_id):
    """Thousands of episodes on one wrapped instance: nothing accumulates across resets.

    Twenty tasks, so that the warm-up fills the per-task caches (bounded by the number of tasks).
    """
    probe = make_or_skip(env_id)
    task_ids = list(probe.unwrapped.tasks.ids[:20])
    probe.close()
    env = budgetgym.make(env_id, budget_mix=(0.25, 0.5, 1.0), task_ids=task_ids)
    env.reset(seed=0)

    def episodes(n):
        for _ in range(n):
            env.reset()
            for _ in range(3):
                _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action() or "ok")
                if terminated or truncated:
                    break

    warm, settling, measured = SLOW_EPISODES.get(env_id, (300, 20, 2000))
    episodes(warm)  # warm caches
    gc.collect()
    tracemalloc.start()
    # tracemalloc counts only what is allocated after it starts: the live state an env holds (an
    # engine's current game state, say) was allocated before, and its replacement would read as
    # growth. A few traced episodes first replace it; growth is counted from there.
    episodes(settling)
    gc.collect()
    base = _traced_bytes()
    episodes(measured)
    gc.collect()
    grown = _traced_bytes() - base
    tracemalloc.stop()
    assert grown < 256 * 1024, f"{grown} bytes retained over {measured} episodes"


def test_no_exploit_agent_beats_the_random_agent(env_id):
    """Reward integrity (budgetgym.eval.exploits): every exploit that concerns the family, generic or
    its own, solves at most 5 points more of a task sample than the random agent does."""
    from budgetgym.eval.probes import format_exploit_table, run_exploit_probe

    env = make_or_skip(env_id)
    sample = env.unwrapped.exploit_sample
    env.close()
    result = run_exploit_probe(env_id, sample=sample, seed=0)
    table = format_exploit_table(result)
    assert result["baselines"]["oracle"]["pass_at_1"] > result["baselines"]["random"]["pass_at_1"], table
    assert any(row["applies"] for row in result["exploits"]), table
    if result["upstream"]:
        pytest.skip(f"{env_id}'s figures are upstream's: {result['upstream']}\n{table}")
    assert not result["flagged"], table
