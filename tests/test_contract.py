"""The contract every registered environment keeps (docs/architecture.md), run over every id.

A new env is checked by these the moment it is added to ``budgetgym.REGISTRY``.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import budgetgym
from budgetgym.core import SnapshotError, TextEnv
from registered import ENV_IDS, make_or_skip
from contract import BAD_ACTIONS, action_sequence, play, schema_violation

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(params=ENV_IDS)
def env_id(request):
    return request.param


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
    for key in ("task_id", "turn", "max_turns", "success", "progress", "action_valid", "action_error", "tools"):
        assert key in info, key
    assert info["turn"] == 0 and info["max_turns"] >= 1
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
    for task_id in _task_ids(env, 5):
        env.reset(seed=0, options={"task_id": task_id})
        steps = play(env, [None] * 10_000)
        _, _, reward, terminated, truncated, info = steps[-1]
        assert terminated and not truncated and info["success"], (task_id, steps[-1])
        assert reward == 1.0 and all(s[2] == 0.0 for s in steps[:-1])
        assert info["turn"] <= info["max_turns"]


def test_progress_reward_sums_to_final_progress(env_id):
    env = make_or_skip(env_id, reward_mode="progress")
    task_id = _task_ids(env, 1, seed=3)[0]
    env.reset(seed=0, options={"task_id": task_id})
    steps = play(env, [None] * 10_000)
    assert sum(s[2] for s in steps) == pytest.approx(steps[-1][-1]["progress"]) == pytest.approx(1.0)


def test_deterministic_byte_for_byte(env_id):
    def run():
        env = make_or_skip(env_id)
        env.reset(seed=5, options={"task_id": task_id})
        rng = np.random.default_rng(11)
        tools = env.unwrapped._info(at_reset=True)["tools"]
        return [(a, o, r, te, tr, json.dumps(i, sort_keys=True))
                for a, o, r, te, tr, i in play(env, action_sequence(rng, 30, tools))]

    task_id = _task_ids(make_or_skip(env_id), 1, seed=9)[0]
    assert run() == run()


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "replay"])
def test_snapshot_restore_round_trip_at_random_points(env_id, fast_path):
    env = make_or_skip(env_id)
    rng = np.random.default_rng(2)
    for task_id in _task_ids(env, 4, seed=4):
        obs, info = env.reset(seed=3, options={"task_id": task_id})
        actions = action_sequence(rng, 40, info["tools"])
        cut = int(rng.integers(0, 6))
        prefix = play(env, actions[:cut])
        if prefix and (prefix[-1][3] or prefix[-1][4]):
            continue
        snap = json.loads(json.dumps(env.unwrapped.snapshot()))  # must survive JSON
        if not fast_path:
            snap["state"] = None
        other = make_or_skip(env_id)
        restored_obs, restored_info = other.reset(options={"snapshot": snap})
        assert restored_obs == (prefix[-1][1] if prefix else obs)
        assert restored_info["turn"] == cut == other.unwrapped.turn
        assert other.unwrapped.snapshot()["transcript"] == snap["transcript"]
        rest = actions[cut:]
        a = play(env, rest)
        b = play(other, rest)
        assert [s[:5] for s in a] == [s[:5] for s in b]
        assert [s[5]["progress"] for s in a] == [s[5]["progress"] for s in b]


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


def test_bad_actions_never_raise_and_change_nothing_but_the_turn(env_id):
    env = make_or_skip(env_id)
    for task_id in _task_ids(env, 3, seed=5):
        obs, info = env.reset(seed=0, options={"task_id": task_id})
        _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action() or "hello")
        if terminated or truncated:  # the oracle's first turn ended it: test from the start
            env.reset(seed=0, options={"task_id": task_id})
        bad = BAD_ACTIONS + [a for a in [schema_violation(info["tools"])] if a]
        for action in bad + [None, 12, b"bytes", {"name": "x"}]:
            before = env.unwrapped.snapshot()
            if env.unwrapped.turn + 1 >= info["max_turns"]:
                break
            obs, reward, terminated, truncated, step_info = env.step(action)
            after = env.unwrapped.snapshot()
            assert step_info["action_valid"] is False, action
            assert step_info["action_error"] and isinstance(obs, str) and obs
            assert reward == 0.0 and not terminated
            assert after["state"] == before["state"]
            assert after["progress"] == before["progress"] and after["solved"] == before["solved"]
            assert after["turn"] == before["turn"] + 1


def test_bad_action_then_oracle_continues_as_if_it_never_happened(env_id):
    env, clean = make_or_skip(env_id), make_or_skip(env_id)
    task_id = _task_ids(env, 1, seed=6)[0]
    env.reset(seed=0, options={"task_id": task_id})
    clean.reset(seed=0, options={"task_id": task_id})
    env.step("{broken json")
    a, b = play(env, [None] * 10_000), play(clean, [None] * 10_000)
    assert [s[1] for s in a] == [s[1] for s in b]
    assert a[-1][-1]["success"] and a[-1][-1]["turn"] == b[-1][-1]["turn"] + 1


def test_step_before_reset_and_after_end_raise_clearly(env_id):
    env = make_or_skip(env_id)
    with pytest.raises(Exception, match="reset"):
        env.step("hello")
    env.reset(seed=0)
    play(env, [None] * 10_000)
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.step("hello")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vectorised(env_id, mode):
    make_or_skip(env_id).close()
    kwargs = {"vector_kwargs": {"shared_memory": False}} if mode == "async" else {}
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, **kwargs)
    try:
        obs, infos = envs.reset(seed=[1, 2])
        assert len(obs) == 2 and all(isinstance(o, str) for o in obs)
        for _ in range(3):
            obs, rewards, terminated, truncated, infos = envs.step(("hello", '{"name": "nope"}'))
            assert len(obs) == 2 and rewards.shape == (2,)
    finally:
        envs.close()


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

    episodes(300)  # warm caches
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    episodes(2000)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 256 * 1024, f"{grown} bytes retained over 2000 episodes"


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
