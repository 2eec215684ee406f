"""The GEM adapter, played through GEM's registry, its vector env and its episode-tracking wrapper."""

import math

import pytest

gem = pytest.importorskip("gem", reason="the integrations extra is not installed")

from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper  # noqa: E402

from budgetgym.chat import system_prompt  # noqa: E402
from budgetgym.integrations.episode import OracleChatPolicy  # noqa: E402
from budgetgym.integrations.gem import BudgetgymGemEnv, register_gem  # noqa: E402


def test_oracle_solves_at_a_tight_cap_and_is_truncated_one_turn_short(probe):
    """Two sub-envs of one GEM vector env on the probe task: cap = the oracle's length, and one
    less. Each plays the oracle (a shadow env fed the actions sent) until it ends."""
    register_gem()
    caps = [probe.oracle_turns, probe.oracle_turns - 1]
    envs = gem.make_vec([probe.env_id] * 2, wrappers=[EpisodeTrackingWrapper],
                        vec_kwargs=[{"budget": cap, "reveal": "total", "task_ids": [probe.task_id]} for cap in caps])
    observations, infos = envs.reset(seed=[3, 4])
    policies = [OracleChatPolicy(probe.env_id, probe.task_id, seed) for seed in (3, 4)]
    for observation, info, cap in zip(observations, infos, caps):
        assert info["task_id"] == probe.task_id and info["budget"]["cap"] == cap
        # GEM has no system message: the prompt opens the first observation.
        assert observation.startswith(system_prompt(envs.envs[0].unwrapped.env.unwrapped.instructions,
                                                    info["tools"], native=False))
        assert observation.endswith(f"[Turn budget: you have {cap} turns in total.]")
    actions = [[], []]
    outcome = {}
    while len(outcome) < 2:
        active = {i: policies[i].next_action(actions[i]) for i in range(2) if i not in outcome}
        for i, action in active.items():
            actions[i].append(action)
        _, rewards, terminated, truncated, step_infos = envs.step(active)
        for position, i in enumerate(active):
            if terminated[position] or truncated[position]:
                outcome[i] = (float(rewards[position]), bool(terminated[position]), bool(truncated[position]),
                              len(actions[i]))
    assert outcome[0] == (1.0, True, False, probe.oracle_turns)
    assert outcome[1] == (0.0, False, True, probe.oracle_turns - 1)
    for env in envs.envs:  # GEM's vector envs have no close() of their own
        env.close()
    for policy in policies:
        policy.close()


def test_budget_mix_and_seeded_task_draw(probe):
    fractions = (0.25, 0.5, 1.0)
    env = BudgetgymGemEnv(probe.env_id, budget_mix=fractions, split=probe.split)
    for seed in range(4):
        _, info = env.reset(seed=seed)
        budget = info["budget"]
        assert budget["drawn"] in fractions
        assert budget["cap"] == max(1, math.ceil(budget["drawn"] * info["full_budget"]))
        again = env.reset(seed=seed)[1]
        assert again["budget"] == budget and again["task_id"] == info["task_id"]
    env.close()


def test_the_constructor_seed_serves_the_first_reset():
    first = BudgetgymGemEnv("budgetgym/FunctionCalling-v0", seed=11, split="test")
    other = BudgetgymGemEnv("budgetgym/FunctionCalling-v0", split="test")
    assert first.reset()[0] == other.reset(seed=11)[0]


def test_an_unseeded_reset_draws_a_new_task_after_a_seeded_one():
    env = BudgetgymGemEnv("budgetgym/FunctionCalling-v0", seed=7, budget_mix=(0.25, 0.5, 1.0))
    _, first = env.reset(seed=7)
    drawn = [env.reset()[1] for _ in range(6)]
    # Before, the first unseeded reset replayed the constructor's seed: the same task and cap again.
    assert (drawn[0]["task_id"], drawn[0]["budget"]) != (first["task_id"], first["budget"])
    assert len({info["task_id"] for info in drawn}) > 1
    env.close()


def test_success_survives_gems_same_step_autoreset(probe):
    register_gem()
    envs = gem.make_vec([probe.env_id], vec_kwargs=[{"task_ids": [probe.task_id]}])
    envs.reset(seed=[3])
    policy = OracleChatPolicy(probe.env_id, probe.task_id, 3)
    actions = []
    while True:
        actions.append(policy.next_action(actions))
        _, rewards, terminated, truncated, infos = envs.step([actions[-1]])
        if terminated[0] or truncated[0]:
            break
    assert terminated[0] and rewards[0] == 1.0
    # The vector env already reset: infos[0] is the new episode's; the finished one's is kept in it.
    assert infos[0]["turn"] == 0 and infos[0]["final_info"]["success"] is True
    envs.envs[0].close()
    policy.close()
