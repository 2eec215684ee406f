"""``budgetgym export``: rows load with pyarrow and datasets, and every row rebuilds the first
observation and tools that ``reset`` gives."""

import importlib
import json
import os

import gymnasium as gym
import pytest

import budgetgym
from budgetgym.chat import system_prompt
from budgetgym.cli import main
from budgetgym.core.env import TextEnv
from budgetgym.core.jsonl import read_jsonl
from registered import make_or_skip

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # datasets loads local files; it must not look online
pq = pytest.importorskip("pyarrow.parquet", reason="the integrations extra is not installed")
datasets = pytest.importorskip("datasets", reason="the integrations extra is not installed")



def overrides_initial_observation(env_id: str) -> bool:
    """Whether the id's env class computes first observations itself (read without making the env)."""
    module, _, name = gym.spec(env_id).entry_point.partition(":")
    return getattr(importlib.import_module(module), name).initial_observation is not TextEnv.initial_observation


#: (id, split, limit): every row of a shipped family's test split where the family computes first
#: observations from its records; two rows where the export resets per task; a slice of an adapter's.
CASES = [(entry.id, "test", None if overrides_initial_observation(entry.id) else 2)
         for entry in budgetgym.REGISTRY if not entry.adapter] + [("budgetgym/BFCL-v0", "base", 25)]


def check_rebuilds(rows):
    """Each row's env, rebuilt from the row, starts the row's task with the row's first prompt."""
    envs = {}
    for row in rows:
        key = (row["env_id"], row["env_kwargs"])
        if key not in envs:
            envs[key] = gym.make(row["env_id"], **json.loads(row["env_kwargs"]))
        env = envs[key]
        observation, info = env.reset(seed=row["seed"], options={"task_id": row["task_id"]})
        assert row["prompt"][1] == {"role": "user", "content": observation}, row["task_id"]
        assert json.loads(row["tools"]) == info["tools"], row["task_id"]
        native = row["tool_mode"] == "native"
        assert row["prompt"][0] == {"role": "system", "content": system_prompt(
            env.unwrapped.instructions, info["tools"], native=native)}
        assert row["full_budget"] == info["full_budget"] and row["oracle_turns"] == info["oracle_turns"]
        assert row["data_source"] == row["env_id"] and row["env_class"] == "budgetgym"
        assert row["reward_model"] == {"style": "env", "ground_truth": row["task_id"]}
    for env in envs.values():
        env.close()


@pytest.mark.parametrize("env_id, split, limit", CASES)
def test_parquet_rows_load_and_rebuild_the_first_observation(env_id, split, limit, tmp_path, capsys):
    make_or_skip(env_id).close()
    out = tmp_path / "rows.parquet"
    argv = ["export", env_id, "--split", split, "--out", str(out)] + (["--limit", str(limit)] if limit else [])
    assert main(argv) == 0
    rows = pq.read_table(out).to_pylist()
    assert capsys.readouterr().out.startswith(f"wrote {len(rows)} rows of {env_id}")
    env = make_or_skip(env_id, split=split)
    expected = env.unwrapped.tasks.ids[:limit]
    env.close()
    assert [row["task_id"] for row in rows] == list(expected)
    assert all(row["split"] == split and row["tool_mode"] == "text" for row in rows)
    check_rebuilds(rows)
    loaded = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert loaded.num_rows == len(rows)
    assert loaded[0]["prompt"] == rows[0]["prompt"] and loaded[-1]["task_id"] == rows[-1]["task_id"]


def test_jsonl_rows_of_every_task_in_native_mode(tmp_path):
    out = tmp_path / "fc.jsonl"
    assert main(["export", "budgetgym/FunctionCalling-v0", "--tool-mode", "native", "--out", str(out)]) == 0
    rows = read_jsonl(out)
    env = gym.make("budgetgym/FunctionCalling-v0")
    assert len(rows) == len(env.unwrapped.tasks) and {row["split"] for row in rows} == {"train", "test"}
    env.close()
    assert all("Tools:" not in row["prompt"][0]["content"] for row in rows)  # native: tools travel apart
    check_rebuilds(rows)
    loaded = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert loaded.num_rows == len(rows) and json.loads(loaded[0]["tools"]) == json.loads(rows[0]["tools"])


@pytest.mark.parametrize("env_id", [entry.id for entry in budgetgym.REGISTRY])
def test_an_initial_observation_override_leaves_the_episode_alone(env_id):
    env = make_or_skip(env_id)
    base = env.unwrapped
    if type(base).initial_observation is TextEnv.initial_observation:
        env.close()
        pytest.skip(f"{env_id} uses the default (a reset)")
    first, other = base.tasks[0], base.tasks[-1]
    env.reset(seed=0, options={"task_id": first.id})
    env.step(base.oracle_action())
    before = (base.snapshot(), base.oracle_action(), dict(base.tools))
    observation, tools = base.initial_observation(other, 0)
    assert (base.snapshot(), base.oracle_action(), dict(base.tools)) == before
    fresh = make_or_skip(env_id)
    assert (observation, tools) == (lambda o, i: (o, i["tools"]))(*fresh.reset(seed=0, options={"task_id": other.id}))
    fresh.close()
    env.close()


def test_bad_arguments_write_nothing(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert main(["export", "budgetgym/FunctionCalling-v0", "--split", "nope", "--out", str(out)]) == 2
    assert "unknown split 'nope'" in capsys.readouterr().err
    assert main(["export", "budgetgym/NoSuch-v0", "--out", str(out)]) == 2
    with pytest.raises(SystemExit) as refused:  # argparse refuses the value where it parses it
        main(["export", "budgetgym/FunctionCalling-v0", "--limit", "0", "--out", str(out)])
    assert refused.value.code == 2
    assert not out.exists()
