"""The SkyRL-Gym adapter, played through skyrl-gym's registry and the loop of SkyRL's generator."""

import json
import math

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the integrations extra is not installed")

from budgetgym.integrations.episode import OracleChatPolicy  # noqa: E402
from budgetgym.integrations.export import task_rows  # noqa: E402
from budgetgym.integrations.skyrl import ENV_CLASS, BudgetgymSkyRLEnv, register_skyrl  # noqa: E402


def agent_loop(row, env_config, generate):
    """What SkyRL's generator does per trajectory: the env from the registry with the row as extras,
    ``init`` on the row's prompt, then one ``step`` per model output until ``done``."""
    register_skyrl()
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config=env_config, extras=extras)
    chat_history, _ = env.init(row["prompt"])
    steps = []
    done = False
    while not done:
        output = generate(chat_history)
        step = env.step(output)
        chat_history = chat_history + [{"role": "assistant", "content": output}] + step["observations"]
        steps.append(step)
        done = step["done"]
    metrics = env.get_metrics()
    env.close()
    return chat_history, steps, metrics


def row_for(probe):
    (row,) = task_rows(probe.env_id, split=probe.split, task_ids=[probe.task_id])
    return row


def oracle(row):
    return OracleChatPolicy(row["env_id"], row["task_id"], row["seed"], **json.loads(row["env_kwargs"]))


def test_oracle_solves_within_a_cap_of_its_own_length(probe):
    row = row_for(probe)
    assert row["env_class"] == ENV_CLASS
    chat, steps, metrics = agent_loop(row, {"budget": probe.oracle_turns, "reveal": "remaining"}, oracle(row))
    assert len(steps) == probe.oracle_turns
    assert [s["reward"] for s in steps] == [0.0] * (probe.oracle_turns - 1) + [1.0]
    last = steps[-1]["metadata"]
    assert last["success"] and last["terminated"] and not last["truncated"]
    assert {k: last["budget"][k] for k in ("unit", "cap", "remaining", "reveal")} == {
        "unit": "turns", "cap": probe.oracle_turns, "remaining": 0, "reveal": "remaining"}
    assert last["budget"]["used"]["turns"] == probe.oracle_turns
    assert metrics["success"] == 1.0 and metrics["turns"] == probe.oracle_turns
    # The opening is the row's prompt, with this episode's cap announced.
    assert chat[0] == row["prompt"][0]
    assert chat[1]["content"] == row["prompt"][1]["content"] + f"\n\n[Turns remaining: {probe.oracle_turns} of {probe.oracle_turns}]"


def test_a_cap_one_turn_short_truncates_the_oracle(probe):
    row = row_for(probe)
    cap = probe.oracle_turns - 1
    _, steps, metrics = agent_loop(row, {"budget": cap}, oracle(row))
    assert len(steps) == cap
    assert sum(s["reward"] for s in steps) == 0.0
    last = steps[-1]["metadata"]
    assert last["truncated"] and not last["terminated"] and not last["success"]
    assert last["budget"]["cap"] == cap and last["budget"]["remaining"] == 0
    assert metrics["success"] == 0.0


def test_budget_mix_draws_a_cap_per_trajectory_from_its_seed(probe):
    row = row_for(probe)
    fractions = (0.25, 0.5, 1.0)
    for seed in range(4):
        env = BudgetgymSkyRLEnv({"budget_mix": list(fractions)}, {**row, "seed": seed})
        _, metadata = env.init(row["prompt"])
        assert metadata["tools"] == json.loads(row["tools"])
        budget = metadata["budget"]
        assert budget["drawn"] in fractions
        assert budget["cap"] == env.max_turns == max(1, math.ceil(budget["drawn"] * probe.max_turns))
        again = BudgetgymSkyRLEnv({"budget_mix": list(fractions)}, {**row, "seed": seed})
        assert again.init(row["prompt"])[1]["budget"] == budget  # reproducible from the seed
        env.close()
        again.close()


def test_a_row_without_its_task_is_refused():
    with pytest.raises(ValueError, match="task_id"):
        BudgetgymSkyRLEnv(None, {"env_id": "budgetgym/FunctionCalling-v0"})


def test_exported_rows_draw_their_own_caps_reproducibly():
    """Each exported row carries its own episode seed (the export's seed plus its index), so a
    BudgetMix run over a dataset draws varied caps, and the same ones again."""
    from budgetgym.integrations.export import task_rows

    rows = list(task_rows("budgetgym/FunctionCalling-v0", split="train", seed=5, limit=12))
    assert [row["seed"] for row in rows] == list(range(5, 17))
    mix = {"budget_mix": [0.25, 0.5, 0.75, 1.0]}

    def drawn():
        found = []
        for row in rows:
            env = BudgetgymSkyRLEnv(mix, row)
            found.append(env.init(row["prompt"])[1]["budget"]["drawn"])
            env.close()
        return found

    first = drawn()
    assert len(set(first)) > 1 and drawn() == first
