"""The core kit (docs/architecture.md, "The core kit"): the one full-budget rule, the one rollout
loop, the failure-state builder driven by family hooks, outcomes, teardown, the import direction."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import gymnasium as gym
import pytest

import budgetgym
from budgetgym.core import Action, Outcome, TaskSet, ToolCall, full_budget, rollout
from budgetgym.core.failures import build_failure_state, build_failure_states, oracle_plan
from registered import ENV_IDS, make_or_skip
from toy_env import TOY_TASKS, CounterEnv

PACKAGE = Path(budgetgym.__file__).parent


@pytest.mark.parametrize("env_id", ENV_IDS[:-1])  # the shipped ids (the toy's budgets are hand-set)
def test_every_shipped_task_follows_the_full_budget_rule(env_id):
    env = make_or_skip(env_id)
    tasks = env.unwrapped.all_tasks
    assert tasks
    for task in tasks:
        assert task.oracle_turns is not None, task.id
        assert task.max_turns == full_budget(task.oracle_turns), task.id


def test_full_budget_rule_and_its_refusals():
    assert [full_budget(n) for n in (1, 2, 3, 4, 10)] == [6, 6, 6, 8, 20]
    for bad in (0, -1, 2.0, True, "3", None):
        with pytest.raises(ValueError):
            full_budget(bad)


def test_oracle_turns_reach_info_and_are_checked_against_the_budget():
    env = CounterEnv()
    _, info = env.reset(options={"task_index": 4})
    assert info["oracle_turns"] == env.task.oracle_turns == 2
    with pytest.raises(ValueError, match="oracle_turns"):
        TaskSet([{"id": "x", "split": "t", "max_turns": 3, "instruction": "", "oracle_turns": 4}])


def test_rollout_plays_the_oracle_and_continues_from_a_given_state():
    env = CounterEnv()
    played = rollout(env, "oracle", seed=1, options={"task_index": 4})  # target 6: add 3, add 3
    assert played.success and played.terminated and not played.truncated
    assert played.actions == ["add(3)", "add(3)"] and played.total_reward == 1.0
    observation, info = env.reset(options={"task_index": 4})
    env.step("add(1)")
    rest = rollout(env, "oracle", reset=False)
    assert rest.actions == ["add(3)", "add(2)"] and rest.success
    stalled = rollout(env, lambda o, i, e: 'say(text="hm")', options={"task_index": 4})
    assert stalled.truncated and not stalled.success and stalled.turns == env.task.max_turns
    stopped = rollout(env, lambda o, i, e: None, options={"task_index": 4})
    assert stopped.turns == 0 and not stopped.ended
    with pytest.raises(ValueError, match="policy"):
        rollout(env, "random")


def test_oracle_action_is_none_once_the_episode_ended():
    env = CounterEnv()
    assert env.oracle_action() is None  # before reset
    env.reset(options={"task_index": 0})
    assert env.oracle_action() == "add(2)" and env.structured_oracle() == Action((ToolCall("add", {"n": 2}),))
    env.step("add(3)")  # overshoot: failed for good
    assert env.oracle_action() is None and env.structured_oracle() is None


class GradedCounter(CounterEnv):
    """Partial credit and a teardown that counts."""

    closed = 0

    def _execute(self, action):
        outcome = super()._execute(action)
        if outcome.failed:
            return Outcome(outcome.observation, failed=True, score=0.25)
        return outcome

    def _teardown(self) -> None:
        GradedCounter.closed += 1


def test_outcome_score_is_reported_not_paid_and_close_tears_down():
    env = GradedCounter()
    env.reset(options={"task_index": 0})  # target 2
    _, reward, terminated, _, info = env.step("add(3)")
    assert terminated and not info["success"] and info["score"] == 0.25 and reward == 0.0
    env.reset(options={"task_index": 0})
    _, reward, terminated, _, info = env.step("add(2)")
    assert terminated and info["success"] and reward == 1.0 and "score" not in info
    before = GradedCounter.closed
    env.close()
    assert GradedCounter.closed == before + 1 and env.oracle_action() is None


class MistakenCounter(CounterEnv):
    """The toy with failure hooks: a wasted turn (no state change), a short add (off the clean path)
    and a split add (two calls that land where the oracle's one does: on the clean path). Progress
    is all or nothing here, so a short add is no progress."""

    failure_kinds = ("wasted_turn", "short_add", "split_add")
    state_changing_kinds = ("short_add", "split_add")

    def _execute(self, action):
        outcome = super()._execute(action)
        return Outcome(outcome.observation, solved=outcome.solved, failed=outcome.failed)

    def propose_mistake(self, kind, plan, rng):
        if kind == "wasted_turn":
            return Action((ToolCall("say", {"text": "thinking"}),)), "The agent talked instead of adding."
        n = plan[0].calls[0].arguments["n"]
        if n < 2:
            return None
        if kind == "split_add":
            return Action((ToolCall("add", {"n": 1}), ToolCall("add", {"n": n - 1}))), "The agent split an add."
        return Action((ToolCall("add", {"n": n - 1}),)), f"The agent added {n - 1} where {n} was needed."

    def state_key(self) -> str:
        return str(self.value)

    def _state_status(self):
        solved, failed, _ = super()._state_status()
        return solved, failed, 1.0 if solved else 0.0  # all or nothing, as _execute reports it


def test_the_failure_builder_runs_on_family_hooks_and_its_states_restore_and_recover():
    env = MistakenCounter(tasks=TOY_TASKS)
    states = build_failure_states(env, env.tasks, per_kind=5, seed=3, namespace="toy-failures",
                                  kinds=("wasted_turn", "short_add"))
    kinds = [s["kind"] for s in states]
    assert kinds.count("wasted_turn") == 5 and kinds.count("short_add") == 5
    for state in states:
        json.dumps(state)
        assert state["snapshot"]["transcript"][state["error_step"]][0] != env.oracle_action()
        observation, _ = env.reset(options={"snapshot": state["snapshot"]})
        assert observation == state["snapshot"]["transcript"][-1][1]
        assert rollout(env, "oracle", reset=False).success, state["id"]
    assert states == build_failure_states(MistakenCounter(tasks=TOY_TASKS), TOY_TASKS, per_kind=5, seed=3,
                                          namespace="toy-failures", kinds=("wasted_turn", "short_add"))


def test_a_mistake_on_the_clean_path_or_unknown_kind_is_refused():
    env = MistakenCounter(tasks=TOY_TASKS)
    task = TOY_TASKS.get("toy-00")  # target 2: the oracle adds 2 at once
    steps, final = oracle_plan(env, task)
    assert [a.calls[0].arguments["n"] for _, a, _ in steps] == [2] and final == "2"
    # add(1) leaves the clean path {0, 2}: kept. add(1) + add(1) ends on it: refused.
    assert build_failure_state(env, task, "short_add", random.Random(0)) is not None
    assert build_failure_state(env, task, "split_add", random.Random(0)) is None
    with pytest.raises(ValueError, match="kind"):
        build_failure_state(env, task, "no_such_kind", random.Random(0))


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("budgetgym")}


#: An adapter to a public benchmark runs on the backend of the family it belongs to, and only that.
ADAPTS = {"swebench": "coding", "alfworld": "navigation", "miniwob": "web"}


def test_the_import_direction_holds():
    # core imports no family, wrapper or evaluation; families import no evaluation and no other
    # family (an adapter may import the family whose backend it runs on).
    for path in (PACKAGE / "core").rglob("*.py"):
        bad = {m for m in _imports(path) if not m.startswith("budgetgym.core")}
        assert not bad, (path, bad)
    for family in (p for p in (PACKAGE / "envs").iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        for path in family.rglob("*.py"):
            for module in _imports(path):
                assert not module.startswith("budgetgym.eval"), (path, module)
                if module.startswith("budgetgym.envs."):
                    allowed = [f"budgetgym.envs.{family.name}"] + (
                        [f"budgetgym.envs.{ADAPTS[family.name]}"] if family.name in ADAPTS else [])
                    assert module.startswith(tuple(allowed)), (path, module)


def _calls(node: ast.AST) -> set[str]:
    calls = (n.func for n in ast.walk(node) if isinstance(n, ast.Call))
    return {f.attr if isinstance(f, ast.Attribute) else f.id for f in calls if isinstance(f, (ast.Attribute, ast.Name))}


def test_one_rollout_loop_and_one_full_budget_rule_in_the_package():
    # A loop that both asks for actions (the oracle's or an agent's) and steps an env is a rollout
    # loop: only budgetgym.core.rollout may have one (the interactive ``play`` reads a person).
    loops, rules = [], []
    for path in PACKAGE.rglob("*.py"):
        relative = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.While, ast.For)):
                calls = _calls(node)
                if "step" in calls and calls & {"oracle_action", "structured_oracle", "act", "_oracle"}:
                    loops.append(f"{relative}:{node.lineno}")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "max"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[1], ast.BinOp) and isinstance(node.args[1].op, ast.Mult)):
                rules.append(f"{relative}:{node.lineno}")
    # ``budgetgym play`` steps what a person types: an interactive loop, not a rollout.
    assert [loop.split(":")[0] for loop in loops if not loop.startswith("cli.py:")] == ["core/rollout.py"], loops
    assert not rules, f"a second full-budget rule: {rules}"


def test_every_shipped_tool_schema_is_valid_draft_2020_12():
    """Schemas are checked and compiled on first use (not at import): check them all here."""
    from budgetgym.envs.function_calling.domains import DOMAINS

    tools = [tool for domain in DOMAINS.values() for tool in domain.tools.values()]
    try:
        from budgetgym.envs.bfcl.schemas import class_tools
        from budgetgym.envs.bfcl.upstream import load_upstream

        tools += [tool for name in load_upstream().func_doc_files for tool in class_tools(name)]
    except ImportError:
        pass  # bfcl-eval is an extra; its own tests say so
    for tool in tools:
        tool.compile()  # raises jsonschema.SchemaError for an invalid schema
    assert len(tools) >= 42


def test_info_tools_are_shared_read_only_schemas():
    from budgetgym.envs.function_calling import FunctionCallingEnv

    env = FunctionCallingEnv()
    _, first = env.reset(options={"task_index": 0})
    _, second = env.reset(options={"task_index": 0})
    assert first["tools"] == second["tools"] and first["tools"] is not second["tools"]
    assert all(a is b for a, b in zip(first["tools"], second["tools"]))
    with pytest.raises(TypeError):
        first["tools"][0]["function"]["description"] = "changed"
    first["tools"].append({"type": "function"})  # the list itself is the caller's
    assert len(env.reset(options={"task_index": 0})[1]["tools"]) == len(second["tools"])
