"""``gym.make_vec`` over every shipped id with the budget wrappers inside, autoreset included, and
the group-rollout example."""

import json
import math
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from budgetgym.core.jsonl import read_jsonl
from budgetgym.wrappers import BudgetMix, TurnBudget
from integration_support import FAMILY_IDS

ROOT = Path(__file__).resolve().parents[2]
MODES = [("sync", {}), ("async", {"shared_memory": False})]


@pytest.mark.parametrize("mode, vector_kwargs", MODES, ids=[m for m, _ in MODES])
def test_a_group_under_turn_budget_then_next_step_autoreset(mode, vector_kwargs, probe):
    env_id = probe.env_id
    caps = (probe.oracle_turns, probe.oracle_turns - 1)
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs,
                        wrappers=[lambda env: TurnBudget(env, budget=probe.oracle_turns, reveal="remaining")],
                        split=probe.split)
    _, infos = envs.reset(seed=[0, 1], options={"task_id": probe.task_id})
    assert list(infos["task_id"]) == [probe.task_id] * 2
    assert list(infos["budget"]["cap"]) == [caps[0]] * 2
    # Sub-env 1 wastes its first turn, so the cap leaves it one turn short of the oracle.
    wasted = json.dumps({"name": "no_such_tool", "arguments": {}})
    ended = {}
    for turn in range(probe.oracle_turns):
        oracle = envs.call("oracle_action")
        actions = tuple(wasted if (i == 1 and turn == 0) else (oracle[i] or "") for i in range(2))
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        for i in range(2):
            if (terminated[i] or truncated[i]) and i not in ended:
                ended[i] = (turn + 1, float(rewards[i]), bool(terminated[i]), bool(truncated[i]))
    assert ended == {0: (probe.oracle_turns, 1.0, True, False), 1: (probe.oracle_turns, 0.0, False, True)}
    # NEXT_STEP autoreset: the next step resets both (the actions are ignored) to a fresh episode.
    observations, rewards, terminated, truncated, infos = envs.step(("ignored", "ignored"))
    assert list(infos["turn"]) == [0, 0] and list(infos["budget"]["used"]["turns"]) == [0, 0]
    assert not terminated.any() and not truncated.any() and (rewards == 0).all()
    assert all(o.endswith(f"[Turns remaining: {c} of {c}]") for o, c in
               zip(observations, infos["budget"]["cap"]))
    envs.close()


@pytest.mark.parametrize("env_id", FAMILY_IDS)
def test_budget_mix_draws_per_sub_env_and_per_seed(env_id):
    fractions = (0.25, 0.5, 1.0)
    envs = gym.make_vec(env_id, num_envs=4, wrappers=[lambda env: BudgetMix(env, fractions)])
    _, infos = envs.reset(seed=[10, 11, 12, 13])
    drawn = infos["budget"]["drawn"]
    assert set(drawn) <= set(fractions)
    assert list(infos["budget"]["cap"]) == [max(1, math.ceil(f * m)) for f, m in zip(drawn, infos["full_budget"])]
    _, again = envs.reset(seed=[10, 11, 12, 13])
    assert np.array_equal(again["budget"]["drawn"], drawn)
    envs.close()


def test_the_group_rollout_example(tmp_path):
    out = tmp_path / "groups.jsonl"
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "group_rollouts.py"), "--tasks", "2", "--k", "6",
                             "--out", str(out)], capture_output=True, text=True, timeout=600, check=True)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    episodes = read_jsonl(out)
    assert summary["episodes"] == len(episodes) == 12 and summary["groups"] == 2
    groups = [episodes[:6], episodes[6:]]
    for group in groups:
        assert len({e["task_id"] for e in group}) == 1 and [e["attempt"] for e in group] == list(range(6))
        assert abs(sum(e["advantage"] for e in group)) < 1e-6
    for e in episodes:
        assert e["drawn"] in (0.25, 0.5, 0.75, 1.0)
        assert e["cap"] == max(1, math.ceil(e["drawn"] * e["full_budget"]))
        assert e["turns"] <= e["cap"]
        assert e["success"] == (e["reward"] == 1.0)
        assert e["truncated"] == (not e["success"] and e["turns"] == e["cap"])
    assert len({e["drawn"] for e in episodes}) > 1
