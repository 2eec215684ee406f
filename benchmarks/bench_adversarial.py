"""Step times of hostile inputs: every class of input that once raised out of ``step()`` or ran slowly.

Each class is built to the env's ``max_action_length`` (65,536 characters) and stepped at two points
of an episode: at reset (``start``) and where the oracle's next action is its answer to the user
(``answer``; there a message is scored, which reads all of it). Each (class, point) is timed
``--repeats`` times on a fresh episode; the median is reported. An exception out of ``step()`` is
recorded as such (the contract says there must be none).

Prints one JSON object: per env, the slowest classes with their median and maximum step times beside
the target (every step under 10 ms), the count of exceptions, and whether the target holds. On a
shared machine every figure scales with the load, so the run also times a reference operation
(``re.findall(r"\w+")`` over 64 KiB of words: one linear C-level pass) and gives each step time
as a ratio of it: ``slowest_over_reference`` compares runs made under different loads.

    python benchmarks/bench_adversarial.py [--repeats 5] [--env budgetgym/FunctionCalling-v0 ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import time
from typing import Callable

import gymnasium as gym

import budgetgym  # noqa: F401  (registers the ids)

TARGET_MS = 10.0
ENV_IDS = ("budgetgym/FunctionCalling-v0", "budgetgym/BFCL-v0")


def fill(prefix: str, unit: str, suffix: str, length: int, closing: str = "") -> str:
    """``prefix + unit * n + closing * n + suffix`` with n as large as ``length`` allows."""
    n = max(1, (length - len(prefix) - len(suffix)) // (len(unit) + len(closing)))
    return prefix + unit * n + closing * n + suffix


def classes(tool: str, length: int) -> dict[str, str]:
    """Every adversarial class at ``length`` characters; ``tool`` is a real tool of the env."""
    half = length // 2
    body = length - 48 - len(tool)  # room for the call around a long value
    return {
        "json_nesting_lists": fill("", "[", "", length, "]"),
        "json_nesting_objects": fill(f'{{"name": "{tool}", "arguments": ', '{"a": ', "1}", length, "}"),
        "json_arguments_string_nesting": fill(f'{{"name": "{tool}", "arguments": "', "[", '"}', length, "]"),
        "json_many_arguments": fill(f'{{"name": "{tool}", "arguments": {{', '"a": 1, ', '"z": 1}}', length),
        "json_many_calls": fill("[", f'{{"name": "{tool}", "arguments": {{}}}}, ', "1]", length),
        "json_huge_integer": f'{{"name": "{tool}", "arguments": {{"n": ' + "9" * body + "}}",
        "json_huge_float": f'{{"name": "{tool}", "arguments": {{"n": 1' + "0" * body + ".5}}",
        "json_surrogates": f'{{"name": "{tool}", "arguments": {{"s": "' + "\\ud800" * (body // 6) + '"}}',
        "json_escapes": f'{{"name": "{tool}", "arguments": {{"s": "' + '\\"' * (body // 2) + '"}}',
        "call_nesting": fill(f"{tool}(x=", "[", ")", length, "]"),
        "call_paren_nesting": fill(f"{tool}(x=", "(", ")", length, ")"),
        "unary_chain": fill(f"{tool}(x=", "-", "1)", length),
        "not_chain": fill(f"{tool}(x=", "not ", "1)", length),
        "lambda_chain": fill(f"{tool}(x=", "lambda:", "1)", length),
        "conditional_chain": fill(f"{tool}(x=", "1 if 1 else ", "1)", length),
        "attribute_chain": fill(f"{tool}(x=a", ".b", ")", length),
        "call_chain": fill(f"{tool}(x=a", "()", ")", length),
        "subscript_chain": fill(f"{tool}(x=a", "[0]", ")", length),
        "plus_chain": fill(f"{tool}(x=", "1+", "1)", length),
        "power_chain": fill(f"{tool}(x=", "2**", "1)", length),
        "many_positional_arguments": fill(f"{tool}(", "1,", ")", length),
        "many_keyword_arguments": f"{tool}(" + ", ".join(f"a{i}=1" for i in range(length // 9)) + ")",
        "many_list_items": fill(f"{tool}(x=[", "-1.5e-3,", "])", length),
        "call_huge_integer": f"{tool}(x=" + "9" * body + ")",
        "call_string_concatenation": fill(f"{tool}(x='a'", " 'b'", ")", length),
        "call_fstring_nesting": fill(f"{tool}(x=f'{{", "-", "1}')", length),
        "call_hidden_in_comment": f"{tool}(x=1) # '\n" + fill(f"{tool}(x=", "-", "1)", length - 2 * len(tool) - 20),
        "call_triple_quote_desync": fill(f"{tool}(x=\"\"\"a\"b\"\"\", y=", "-", "1)", length),
        "call_many_calls": fill("[", f"{tool}(), ", "]", length),
        "tag_flood_close_then_open": "</tool_call>" * (length // 23) + "<tool_call>" * (length // 23),
        "tag_flood_open": "<tool_call>" * (length // 11),
        "tag_flood_balanced": fill("", f'<tool_call>{{"name": "{tool}"}}</tool_call>', "", length),
        "tag_nested": fill("", "<tool_call>", "", length, "</tool_call>"),
        "tag_unclosed_long": "<tool_call>" + "x" * (length - 11),
        "code_fence_flood": "```" * (length // 3),
        "control_characters": "\x00\x01\x02" * (length // 3),
        "lone_surrogates": "\ud800\udfff\udc00" * (length // 3),
        "quotes_flood": "\"'" * half,
        "long_prose_message": ("I moved the file and checked the balance; it is fine. " * (length // 55))[:length],
        "numbers_message": ("1,234.5 -7 " * (length // 11))[:length],
        "words_message": ("cannot sorry unable " * (length // 20))[:length],
        "long_string_argument": f'{{"name": "{tool}", "arguments": {{"s": "' + "x" * body + '"}}',
        "unicode_message": ("漢字✓é " * (length // 5))[:length],
        "long_word_message": "a" * length,
        "values_message": ("x@y.co /a/b 2025-01-01 10:30 +1 555 201 4410 1.5 " * (length // 50))[:length],
    }


def first_tool(env: gym.Env) -> str:
    return next(iter(env.unwrapped.tools))


def to_answer_point(env: gym.Env, task_id: str) -> bool:
    """Reset to ``task_id`` and play the oracle until its next action is a plain-text answer."""
    env.reset(seed=0, options={"task_id": task_id})
    for _ in range(200):
        action = env.unwrapped.oracle_action()
        if action is None:
            return False
        if not action.lstrip().startswith(("{", "[", "<")) and "(" not in action.split("\n", 1)[0][:60]:
            return True
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return False
    return False


def time_step(env: gym.Env, position: Callable[[], bool], action: str) -> tuple[float | None, str | None]:
    if not position():
        return None, None
    start = time.perf_counter()
    try:
        env.step(action)
    except BaseException as err:  # noqa: BLE001 - recorded: the contract says there must be none
        return (time.perf_counter() - start) * 1e3, f"{type(err).__name__}: {str(err)[:80]}"
    return (time.perf_counter() - start) * 1e3, None


REFERENCE_TEXT = "abc " * 16_384


def reference_ms(repeats: int = 7) -> float:
    """The median time of one linear C-level scan of 64 KiB (the machine's speed right now)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        re.findall(r"\w+", REFERENCE_TEXT)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def bench_env(env_id: str, repeats: int) -> dict:
    try:
        env = gym.make(env_id)
    except ImportError as err:
        return {"skipped": str(err)}
    env.reset(seed=0)
    task_id = env.unwrapped.tasks.ids[0]
    env.reset(seed=0, options={"task_id": task_id})
    length = env.unwrapped.max_action_length
    inputs = classes(first_tool(env), length)
    positions = {
        "start": lambda: env.reset(seed=0, options={"task_id": task_id}) is not None,
        "answer": lambda: to_answer_point(env, task_id),
    }
    rows, errors = [], []
    for name, action in inputs.items():
        assert len(action) <= length, (name, len(action))
        for where, position in positions.items():
            times = []
            for _ in range(repeats):
                ms, error = time_step(env, position, action)
                if ms is None:
                    break
                times.append(ms)
                if error is not None:
                    errors.append({"class": name, "at": where, "error": error})
            if times:
                rows.append({"class": name, "at": where, "median_ms": round(statistics.median(times), 3),
                             "max_ms": round(max(times), 3)})
    rows.sort(key=lambda row: row["median_ms"], reverse=True)
    slowest = rows[0]["median_ms"] if rows else None
    env.close()
    reference = reference_ms()
    return {
        "reference_ms": round(reference, 3),
        "slowest_over_reference": round(slowest / reference, 2) if slowest is not None else None,
        "classes": len(inputs),
        "steps_timed": sum(1 for _ in rows) * repeats,
        "slowest": rows[:8],
        "slowest_median_ms": slowest,
        "target_ms": TARGET_MS,
        "slowest_over_target": round(slowest / TARGET_MS, 3) if slowest is not None else None,
        "exceptions": len(errors),
        "exception_examples": errors[:5],
        "meets_target": bool(slowest is not None and slowest < TARGET_MS and not errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--env", action="append", help="an env id (default: FunctionCalling-v0 and BFCL-v0)")
    args = parser.parse_args()
    report = {
        "python": platform.python_version(),
        "repeats": args.repeats,
        "envs": {env_id: bench_env(env_id, args.repeats) for env_id in (args.env or ENV_IDS)},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
