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
