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
