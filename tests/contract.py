"""Helpers for the contract tests: seeded action sequences that mix good, bad and odd actions."""

from __future__ import annotations

import json

import numpy as np

BAD_ACTIONS = [
    "",
    "   ",
    "\x00\x01 garbage \ufffd",
    "{not json",
    '{"name": 42}',
    '{"name": "no_such_tool_anywhere", "arguments": {}}',
    "no_such_tool_anywhere(x=1)",
    "<tool_call>{\"name\": \"no_such_tool_anywhere\"}",
    "[1, 2, 3]",
    "x" * 300_000,
    '{"name": "no_such_tool_anywhere", "arguments": {"n": ' + "9" * 5000 + "}}",  # Python won't read it
    '[{"name": "no_such_tool_anywhere", "arguments": {"n": 1e999}}]',
    "__import__('os').system('echo pwned')",
]


def schema_violation(tools: list[dict]) -> str | None:
    """A call to a real tool with an argument of the wrong type, or None when no tool takes one."""
    for tool in tools:
        props = tool["function"]["parameters"].get("properties", {})
        for name, spec in props.items():
            wrong = {"string": 12345, "integer": "not-a-number", "number": "nan?", "boolean": "maybe",
                     "array": {"a": 1}, "object": [1]}.get(spec.get("type") if isinstance(spec.get("type"), str) else None)
            if wrong is not None:
                return json.dumps({"name": tool["function"]["name"], "arguments": {name: wrong}})
    return None


def action_sequence(rng: np.random.Generator, length: int, tools: list[dict]) -> list[str]:
    """Actions to play from reset: mostly the oracle's, some bad ones, some plain text."""
    actions = []
    bad = BAD_ACTIONS + [a for a in [schema_violation(tools)] if a]
    for _ in range(length):
        roll = rng.random()
        if roll < 0.2:
            actions.append(bad[int(rng.integers(len(bad)))])
        elif roll < 0.25:
            actions.append("I am not sure yet.")
        else:
            actions.append(None)  # the oracle's action, chosen when played
    return actions


def play(env, actions: list[str | None]) -> list[tuple]:
    """Play actions (None: the oracle's, or a plain message when it has none); return the steps."""
    out = []
    for action in actions:
        if action is None:
            action = env.unwrapped.oracle_action() or "I cannot do more."
        step = env.step(action)
        out.append((action, *step))
        if step[2] or step[3]:
            break
    return out


# ------------------------------------------------------------------ hostile inputs, as a grammar

# Each class builds one action from a few drawn numbers: nesting bombs, long chains, tag floods,
# many arguments, huge numbers, lone surrogates, control characters. Hypothesis draws the class and
# its sizes (cheap), and the string is built here (a drawn 65,536-character string would be slow).
HOSTILE_CLASSES = {
    "json_nesting": lambda tool, n, s: "[" * n + "]" * n,
    "json_object_nesting": lambda tool, n, s: f'{{"name": "{tool}", "arguments": ' + '{"a": ' * n + "1" + "}" * (n + 1),
    "json_many_values": lambda tool, n, s: f'{{"name": "{tool}", "arguments": {{"a": [' + "1," * n + "1]}}",
    "json_huge_number": lambda tool, n, s: f'{{"name": "{tool}", "arguments": {{"a": ' + "9" * n + "}}",
    "json_float_overflow": lambda tool, n, s: f'{{"name": "{tool}", "arguments": {{"a": 1e{n}}}}}',
    "json_surrogates": lambda tool, n, s: f'{{"name": "{tool}", "arguments": {{"a": "' + "\\ud800" * n + '"}}',
    "call_nesting": lambda tool, n, s: f"{tool}(a=" + "[" * n + "]" * n + ")",
    "unary_chain": lambda tool, n, s: f"{tool}(a=" + "-" * n + "1)",
    "keyword_chain": lambda tool, n, s: f"{tool}(a=" + s * n + "1)",
    "attribute_chain": lambda tool, n, s: f"{tool}(a=x" + ".y" * n + ")",
    "call_chain": lambda tool, n, s: f"{tool}(a=x" + "()" * n + ")",
    "subscript_chain": lambda tool, n, s: f"{tool}(a=x" + "[0]" * n + ")",
    "operator_chain": lambda tool, n, s: f"{tool}(a=" + "1+" * n + "1)",
    "many_arguments": lambda tool, n, s: f"{tool}(" + "1," * n + ")",
    "many_keywords": lambda tool, n, s: f"{tool}(" + ",".join(f"a{i}=1" for i in range(n)) + ")",
    "call_huge_number": lambda tool, n, s: f"{tool}(a=" + "9" * n + ")",
    "fstring": lambda tool, n, s: f"{tool}(a=f'{{" + "-" * n + "1}')",
    "tag_flood": lambda tool, n, s: "</tool_call>" * n + "<tool_call>" * n,
    "tag_blocks": lambda tool, n, s: f'<tool_call>{{"name": "{tool}"}}</tool_call>' * n,
    "tag_nested": lambda tool, n, s: "<tool_call>" * n + "</tool_call>" * n,
    "control_characters": lambda tool, n, s: (s + "\x00\x07\x1b") * n,
    "lone_surrogates": lambda tool, n, s: f'{tool}(a="' + "\ud800" * n + '")',
    "quotes_and_escapes": lambda tool, n, s: ('"\\\'' + s) * n,
    "prose": lambda tool, n, s: (s + " sorry, cannot 1,234.5 ") * n,
}
KEYWORD_UNITS = ["not ", "lambda:", "1 if 1 else ", "await ", "x for x in "]


def hostile_action(kind: str, tool: str, n: int, unit: str, limit: int) -> str:
    """One action of class ``kind`` with size ``n``, cut to ``limit`` characters."""
    return HOSTILE_CLASSES[kind](tool, n, unit)[:limit]


# ------------------------------------------------------------------ the checks of one task
# Each check takes the env (or a maker of envs) and the task ids it plays: the contract runs them on a
# seeded sample of every registered id's tasks (tests/test_contract.py) and on a sample of each task
# set an id reaches only by a keyword or holds as a minority tier (tests/test_contract_task_sets.py).


def check_oracle_solves(env, task_ids: list[str]) -> None:
    """The oracle solves each task within its full budget, the sparse reward 1 on its last step only."""
    for task_id in task_ids:
        env.reset(seed=0, options={"task_id": task_id})
        steps = play(env, [None] * 10_000)
        _, _, reward, terminated, truncated, info = steps[-1]
        assert terminated and not truncated and info["success"], (task_id, steps[-1])
        assert reward == 1.0 and all(s[2] == 0.0 for s in steps[:-1])
        assert info["turn"] <= info["full_budget"]


def check_sparse_reward_is_success(env, task_ids: list[str], episodes: int = 4) -> None:
    """Under ``reward_mode="sparse"`` every step pays 1.0 if it ends the episode solved and 0.0
    otherwise (a graded ending is ``info["score"]``, never paid): every admissible action from every
    state of the oracle's path on the first task (where the env lists them: a purchase before the
    options are set, a wrong answer), and noisy oracles' episodes."""
    from budgetgym.eval.agents.scripted import NoisyOracleAgent

    def check(reward, terminated, info, where):
        assert reward == float(terminated and info["success"]), (where, reward, info.get("score"))
        assert "score" not in info or (terminated and 0.0 <= info["score"] <= 1.0), where

    base = env.unwrapped
    _, info = env.reset(seed=0, options={"task_id": task_ids[0]})
    while info.get("admissible_actions") and base.oracle_action() is not None:
        state = base.snapshot()
        for action in info["admissible_actions"]:
            _, reward, terminated, _, after = env.step(action)
            check(reward, terminated, after, (task_ids[0], state["turn"], action))
            env.reset(seed=0, options={"snapshot": state})
        _, _, _, _, info = env.step(base.oracle_action())
    for task_id in task_ids:
        for seed in range(episodes):
            agent = NoisyOracleAgent(p=0.5)
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            agent.reset(env, observation, info, seed)
            terminated = truncated = False
            while not (terminated or truncated):
                observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
                check(reward, terminated, info, (task_id, seed, info["turn"]))


def check_progress_reward(env, task_id: str) -> None:
    """Under ``reward_mode="progress"`` the oracle's rewards sum to its final progress, 1."""
    import pytest

    env.reset(seed=0, options={"task_id": task_id})
    steps = play(env, [None] * 10_000)
    assert sum(s[2] for s in steps) == pytest.approx(steps[-1][-1]["progress"]) == pytest.approx(1.0)


def check_deterministic(make, task_id: str, length: int = 30) -> None:
    """Two fresh envs given the same seed and ``length`` seeded actions give the same transcript, byte for byte."""
    def run():
        env = make()
        tools = env.reset(seed=5, options={"task_id": task_id})[1]["tools"]
        rng = np.random.default_rng(11)
        return [(a, o, r, te, tr, json.dumps(i, sort_keys=True))
                for a, o, r, te, tr, i in play(env, action_sequence(rng, length, tools))]

    assert run() == run()


def check_snapshot_round_trip(env, make, task_ids: list[str], fast_path: bool, seed: int = 2, length: int = 40) -> None:
    """A snapshot at a random point, through JSON (and without its fast state: by replay), restores in
    a fresh env the same observation, turn and future."""
    rng = np.random.default_rng(seed)
    for task_id in task_ids:
        obs, info = env.reset(seed=3, options={"task_id": task_id})
        actions = action_sequence(rng, length, info["tools"])
        cut = int(rng.integers(0, 6))
        prefix = play(env, actions[:cut])
        if prefix and (prefix[-1][3] or prefix[-1][4]):
            continue
        snap = json.loads(json.dumps(env.unwrapped.snapshot()))  # must survive JSON
        if not fast_path:
            snap["state"] = None
        other = make()
        restored_obs, restored_info = other.reset(options={"snapshot": snap})
        assert restored_obs == (prefix[-1][1] if prefix else obs)
        assert restored_info["turn"] == cut == other.unwrapped.turn
        assert other.unwrapped.snapshot()["transcript"] == snap["transcript"]
        rest = actions[cut:]
        a = play(env, rest)
        b = play(other, rest)
        assert [s[:5] for s in a] == [s[:5] for s in b]
        assert [s[5]["progress"] for s in a] == [s[5]["progress"] for s in b]


def check_bad_actions(env, task_ids: list[str]) -> None:
    """Every malformed or invalid action is refused with a message, costs a turn and changes nothing else."""
    for task_id in task_ids:
        obs, info = env.reset(seed=0, options={"task_id": task_id})
        _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action() or "hello")
        if terminated or truncated:  # the oracle's first turn ended it: test from the start
            env.reset(seed=0, options={"task_id": task_id})
        bad = BAD_ACTIONS + [a for a in [schema_violation(info["tools"])] if a]
        for action in bad + [None, 12, b"bytes", {"name": "x"}]:
            before = env.unwrapped.snapshot()
            if env.unwrapped.turn + 1 >= info["full_budget"]:
                break
            obs, reward, terminated, truncated, step_info = env.step(action)
            after = env.unwrapped.snapshot()
            assert step_info["action_valid"] is False, action
            assert step_info["action_error"] and isinstance(obs, str) and obs
            assert reward == 0.0 and not terminated
            assert after["state"] == before["state"]
            assert after["progress"] == before["progress"] and after["solved"] == before["solved"]
            assert after["turn"] == before["turn"] + 1


def check_bad_action_then_oracle(env, clean, task_id: str) -> None:
    """After one refused action the oracle sees what it sees without it, and solves one turn later."""
    env.reset(seed=0, options={"task_id": task_id})
    clean.reset(seed=0, options={"task_id": task_id})
    env.step("{broken json")
    a, b = play(env, [None] * 10_000), play(clean, [None] * 10_000)
    assert [s[1] for s in a] == [s[1] for s in b]
    assert a[-1][-1]["success"] and a[-1][-1]["turn"] == b[-1][-1]["turn"] + 1, (task_id, a[-1][1][-1500:])
