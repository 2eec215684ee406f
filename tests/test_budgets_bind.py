"""Budgets bind: a turn is one interaction under each family's action rule, and ``1x`` (the task's
``oracle_turns``) is a true lower bound: no merge or reordering of the oracle's own actions solves a
task in fewer turns. Run over every registered id."""

from __future__ import annotations

import json

import numpy as np
import pytest

import budgetgym
from budgetgym.core import MAX_CALLS_PER_STEP, Action, TextEnv, render_action, text_env
from registered import ENV_IDS, make_or_skip

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SEQUENTIAL = {"budgetgym/Navigation-v0", "budgetgym/ALFWorld-v0", "budgetgym/Web-v0", "budgetgym/MiniWoB-v0",
              "budgetgym/Coding-v0", "budgetgym/SWEBench-v0"}
PARALLEL = {"budgetgym/FunctionCalling-v0", "budgetgym/BFCL-v0"}
#: Tasks the merge attack plays per id (fewer where an episode is a container or a browser).
SAMPLE = {"budgetgym/SWEBench-v0": 1, "budgetgym/MiniWoB-v0": 3, "budgetgym/Coding-v0": 3}


@pytest.fixture(params=ENV_IDS)
def env_id(request):
    return request.param


def test_every_family_declares_its_action_rule():
    for entry in budgetgym.REGISTRY:
        module, name = entry.entry_point.split(":")
        cls = getattr(__import__(module, fromlist=[name]), name)
        assert "max_calls_per_turn" in vars(cls), f"{entry.id} does not declare max_calls_per_turn"
        documented = __import__(cls.__module__, fromlist=[name]).__doc__ or ""
        assert "max_calls_per_turn" in documented, f"{entry.id}: its docstring's Action Space does not state the rule"
        expected = 1 if entry.id in SEQUENTIAL else MAX_CALLS_PER_STEP
        assert entry.id in SEQUENTIAL | PARALLEL and cls.max_calls_per_turn == expected, entry.id


def _oracle_solution(env, task_id: str, seed: int) -> list[Action]:
    """The oracle's structured actions from the start of the task (it solves within its budget)."""
    env.reset(seed=seed, options={"task_id": task_id})
    base = text_env(env)
    actions = []
    while base.running:
        action = base.structured_oracle()
        if action is None:
            break
        actions.append(action)
        env.step(base.render_oracle(action))
    return actions


def _merged(actions: list[Action], width: int | None, reverse: bool) -> list[str]:
    """The oracle's actions with runs of up to ``width`` consecutive calls (None: every run) merged
    into one turn, in their order or reversed; a message stays a turn of its own."""
    turns: list[str] = []
    run: list = []

    def flush():
        for start in range(0, len(run), width or max(1, len(run))):
            group = run[start:start + (width or len(run))]
            group = group[::-1] if reverse else group
            turns.append(json.dumps([{"name": c.name, "arguments": dict(c.arguments)} for c in group],
                                    ensure_ascii=False))
        run.clear()

    for action in actions:
        if action.is_message:
            flush()
            turns.append(render_action(action))
        else:
            run.extend(action.calls)
    flush()
    return turns


#: Ids where the merge attack still wins, with why (each must be fixed, then removed from here).
BEATS_1X: dict[str, str] = {}


def test_no_merge_or_reorder_of_the_oracles_actions_beats_1x(env_id, request):
    if env_id in BEATS_1X:
        request.applymarker(pytest.mark.xfail(reason=BEATS_1X[env_id], strict=True))
    env = make_or_skip(env_id)
    try:
        base = text_env(env)
        ids = list(base.tasks.ids)
        rng = np.random.default_rng(21)
        sample = [ids[i] for i in rng.choice(len(ids), size=min(SAMPLE.get(env_id, 6), len(ids)), replace=False)]
        for task_id in sample:
            task = base.all_tasks.get(task_id)
            solution = _oracle_solution(env, task_id, seed=3)
            assert all(len(a.calls) <= base.max_calls_per_turn for a in solution), \
                f"{env_id} {task_id}: the oracle breaks its own action rule"
            for width in (2, 3, None):
                for reverse in (False, True):
                    env.reset(seed=3, options={"task_id": task_id})
                    info = {"success": False}
                    turns = 0
                    for turns, action in enumerate(_merged(solution, width, reverse), 1):
                        _, _, terminated, truncated, info = env.step(action)
                        if terminated or truncated:
                            break
                    if info["success"] and task.oracle_turns is not None:
                        assert turns >= task.oracle_turns, (f"{env_id} {task_id}: merging the oracle's calls "
                                                            f"(width {width}, reversed {reverse}) solved it in "
                                                            f"{turns} turns, below 1x = {task.oracle_turns}")
    finally:
        env.close()


def test_a_second_call_in_a_turn_is_an_invalid_action_where_actions_are_sequential(env_id):
    env = make_or_skip(env_id)
    try:
        base = text_env(env)
        if base.max_calls_per_turn > 1:
            pytest.skip(f"{env_id} takes parallel calls (up to {base.max_calls_per_turn} a turn)")
        env.reset(seed=0, options={"task_id": base.tasks.ids[0]})
        call = base.structured_oracle().calls[0]
        before = base.snapshot()
        observation, reward, terminated, truncated, info = env.step(
            json.dumps([{"name": call.name, "arguments": dict(call.arguments)}] * 2))
        assert info["action_valid"] is False and "one tool call a turn" in info["action_error"]
        assert observation.startswith("Invalid action: This turn holds 2 tool calls")
        assert info["turn"] == 1 and info["calls"] == 0 and not terminated
        after = base.snapshot()
        assert (after["state"], after["progress"], after["solved"]) == (before["state"], before["progress"],
                                                                          before["solved"])
        # The same call alone is run.
        assert env.step(render_action(Action((call,))))[4]["action_valid"] is True
    finally:
        env.close()


def test_parallel_families_run_several_calls_in_a_turn():
    env = budgetgym.make("budgetgym/FunctionCalling-v0", split="test")
    env.reset(seed=0, options={"task_id": "fc-curated-filesystem-project-cleanup"})
    observation, _, _, _, info = env.step('[{"name": "list_directory", "arguments": {"path": "/"}}, '
                                          '{"name": "list_directory", "arguments": {"path": "/projects"}}]')
    assert info["action_valid"] is True and info["calls"] == 2
    assert text_env(env).max_calls_per_turn == MAX_CALLS_PER_STEP
    assert isinstance(text_env(env), TextEnv)
