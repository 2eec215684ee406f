"""Budgets in turns, tool calls and tokens; the horizon schedule; observations that fit their space
after every wrapper; and one budget vocabulary accepted by every entry point."""

from __future__ import annotations

import base64
import json
import math
import random
import re
import shlex
import string
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import budgetgym
from budgetgym.core import TaskSet
from budgetgym.core.budgets import (REVEAL_ROOM, REVEAL_TEMPLATES, as_budget, check_budget, count_tokens, parse_budget,
                                    read_reveal, regex_tokens, resolve_cap)
from budgetgym.integrations.episode import BudgetSpec, ChatEpisode
from budgetgym.testing import assert_solves
from budgetgym.wrappers import BudgetMix, ErrorInjection, HorizonSchedule, TurnBudget
from coding_support import require
from registered import TOY_ID
from toy_env import TOY_TASKS, CounterEnv

WAIT = "say(text='thinking')"  # 9 tokens by the default tokenizer ("thin", "king"); never ends the toy task
STALL = json.dumps({"name": "no_such_tool", "arguments": {}})
ROOT = Path(budgetgym.__file__).parent.parent


class ParallelCounter(CounterEnv):
    """The toy with parallel calls (the rule of function-calling families)."""

    max_calls_per_turn = 4


def test_a_call_budget_counts_calls_and_refuses_a_turn_that_holds_more_than_remain():
    env = TurnBudget(ParallelCounter(), 3, unit="calls", reveal="remaining")
    observation, info = env.reset(seed=0, options={"task_id": "toy-18"})  # target 5, full budget 7
    assert observation.endswith("[Tool calls remaining: 3 of 3]")
    assert info["budget"] == {"unit": "calls", "cap": 3, "remaining": 3, "reveal": "remaining",
                              "used": {"turns": 0, "calls": 0, "tokens": 0}}
    observation, _, _, truncated, info = env.step("[say(text='a'), say(text='b')]")
    assert observation.endswith("[Tool calls remaining: 1 of 3]") and not truncated
    assert info["budget"]["used"] == {"turns": 1, "calls": 2, "tokens": 19}
    _, _, _, truncated, info = env.step("{bad")  # an invalid action runs no call
    assert not truncated and info["budget"]["used"]["calls"] == 2 and info["budget"]["used"]["turns"] == 2
    observation, reward, terminated, truncated, info = env.step("[add(n=1), add(n=1)]")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert observation.startswith("Out of tool calls: this turn holds 2 calls and 1 of the 3-call budget remained")
    assert env.unwrapped.turn == 2 and env.unwrapped.calls == 2  # not run
    assert info["action_valid"] is False and info["budget"]["remaining"] == 1


def test_a_call_budget_in_solution_lengths_is_the_oracles_calls():
    env = TurnBudget(ParallelCounter(), "1.5x", unit="calls")
    _, info = env.reset(seed=0, options={"task_id": "toy-04"})  # target 6: add(3) twice
    assert info["budget"]["cap"] == 3
    turns = 0
    while True:
        _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        turns += 1
        if terminated or truncated:
            break
    assert info["success"] and info["budget"]["used"]["calls"] == 2 and info["budget"]["remaining"] == 1
    with pytest.raises(ValueError, match="turns only"):
        TurnBudget(ParallelCounter(), 0.5, unit="calls")


def test_a_token_budget_counts_the_agents_outputs_with_the_users_tokenizer():
    env = TurnBudget(CounterEnv(), 20, unit="tokens", reveal="total")
    observation, _ = env.reset(seed=0, options={"task_id": "toy-18"})
    assert observation.endswith("[Token budget: you have 20 output tokens in total.]")
    for _ in range(2):
        assert env.step(WAIT)[3] is False
    observation, _, _, truncated, info = env.step(WAIT)  # 9 more than the 2 that remain
    assert truncated and observation.startswith("Out of tokens: this output is 9 tokens and 2 of the 20-token")
    assert info["budget"]["used"] == {"turns": 2, "calls": 2, "tokens": 27} and env.unwrapped.turn == 2
    words = TurnBudget(CounterEnv(), 3, unit="tokens", tokenizer=str.split)  # an encode-like callable
    words.reset(seed=0, options={"task_id": "toy-18"})
    assert words.step("add(n=1)")[4]["budget"]["used"]["tokens"] == 1
    assert count_tokens("add(n=1)", lambda text: 7) == 7  # a tokenizer may return the count


def test_info_budget_reports_every_unit_whatever_is_capped():
    for unit, cap in (("turns", 4), ("calls", 9), ("tokens", 90)):
        env = TurnBudget(ParallelCounter(), cap, unit=unit)
        env.reset(seed=0, options={"task_id": "toy-18"})
        info = env.step("[say(text='a'), say(text='b')]")[4]
        assert info["budget"]["used"] == {"turns": 1, "calls": 2, "tokens": 19}
        assert info["budget"]["unit"] == unit and info["budget"]["cap"] == cap


def test_the_reveal_texts_are_read_back_by_the_one_reader():
    for unit, modes in REVEAL_TEMPLATES.items():
        total = modes["total"].format(cap=12, remaining=5, used=7)
        remaining = modes["remaining"].format(cap=12, remaining=5, used=7)
        assert read_reveal("obs" + total) == type(read_reveal("x" + total))(unit, 12, None)
        assert read_reveal("obs" + total + "\nmore" + remaining).remaining == 5
    assert read_reveal("Counter: 3.") is None


def test_horizon_schedule_widens_the_cap_by_episode_count_reproducibly():
    def caps(seed):
        env = HorizonSchedule(CounterEnv(), stages=((0, "1x"), (3, ("1x", "2x")), (6, 1.0)), reveal="none")
        out = []
        for episode in range(8):
            _, info = env.reset(seed=seed + episode, options={"task_id": "toy-04"})  # 2 turns; full budget 8
            out.append((info["budget"]["stage"], info["budget"]["drawn"], info["budget"]["cap"]))
        return out

    first = caps(0)
    assert first == caps(0)
    assert [s for s, _, _ in first] == [0, 0, 0, 1, 1, 1, 2, 2]
    assert first[:3] == [(0, "1x", 2)] * 3 and first[6:] == [(2, 1.0, 8)] * 2
    assert {d for s, d, _ in first if s == 1} <= {"1x", "2x"}


def test_horizon_schedule_by_training_step_set_through_a_vector_env():
    envs = gym.make_vec(TOY_ID, num_envs=2, vectorization_mode="sync",
                        wrappers=[lambda env: HorizonSchedule(env, stages=((0, 1), (100, 3)), by="steps")])
    _, infos = envs.reset(seed=[0, 1], options={"task_id": "toy-18"})
    assert list(infos["budget"]["cap"]) == [1, 1]
    envs.call("set_progress", 150)
    _, infos = envs.reset(seed=[0, 1], options={"task_id": "toy-18"})
    assert list(infos["budget"]["cap"]) == [3, 3] and list(infos["budget"]["position"]) == [150, 150]
    envs.set_attr("progress", 0)
    _, infos = envs.reset(seed=[0, 1], options={"task_id": "toy-18"})
    assert list(infos["budget"]["cap"]) == [1, 1]
    envs.close()


@pytest.mark.parametrize("stages, match", [((), "non-empty"), (((1, 2),), "begin at 0"), (((0, 2), (0, 3)), "strictly"),
                                           (((0, 0),), ">= 1"), (((0, 2, 3),), "pair"), (((-1, 2),), ">= 0")])
def test_horizon_schedule_refuses_bad_stages(stages, match):
    with pytest.raises(ValueError, match=match):
        HorizonSchedule(CounterEnv(), stages=stages)
    with pytest.raises(ValueError, match="episodes"):
        HorizonSchedule(CounterEnv(), stages=((0, 2),)).set_progress(3)


class Verbose(CounterEnv):
    """Observations at the space's length: the env must leave room for a revealed budget."""

    max_observation_length = 600

    def _load_task(self, task, seed):
        super()._load_task(task, seed)
        return "start " + "x" * 2000

    def _execute(self, action):
        outcome = super()._execute(action)
        return type(outcome)(outcome.observation + " " + "y" * 2000, outcome.solved, outcome.failed, outcome.progress)


def _verbose_states():
    env = Verbose()
    env.reset(seed=0, options={"task_id": "toy-18"})
    for _ in range(3):
        env.step(WAIT)
    return [{"id": "fs", "task_id": "toy-18", "kind": "wasted_turn", "description": "", "error_step": 0,
             "snapshot": env.snapshot()}]


def test_observations_fit_the_space_after_every_wrapper():
    stacks = [TurnBudget(Verbose(), 6, reveal="remaining"), TurnBudget(Verbose(), 6, reveal="total"),
              BudgetMix(ErrorInjection(Verbose(), states=_verbose_states()), budgets=(1.0,), reveal="remaining"),
              TurnBudget(ErrorInjection(Verbose(), states=_verbose_states()), 99, reveal="remaining", unit="tokens")]
    for env in stacks:
        observation, _ = env.reset(seed=0, options={"task_id": "toy-18"})
        assert env.observation_space.contains(observation), len(observation)
        assert read_reveal(observation) is not None  # the revealed text survives at the end
        for _ in range(3):
            observation, _, terminated, truncated, _ = env.step(WAIT)
            assert env.observation_space.contains(observation), len(observation)
            if terminated or truncated:
                break
    states = _verbose_states()
    injected = ErrorInjection(Verbose(), states=states).reset(seed=0)[0]
    last = states[0]["snapshot"]["transcript"][-1][1]
    assert injected.startswith("[earlier turns cut]") and injected.endswith(last[-100:])  # the prefix keeps its end


def test_an_async_vector_env_steps_revealed_budgets_over_long_observations():
    gym.register("budgetgym-test/Verbose-v0", entry_point=Verbose)
    try:
        envs = gym.make_vec("budgetgym-test/Verbose-v0", num_envs=2, vectorization_mode="async",
                            wrappers=[lambda env: TurnBudget(ErrorInjection(env, states=_verbose_states(), p=0.5), 6,
                                                             reveal="remaining")])
        observations, _ = envs.reset(seed=[0, 1])
        for _ in range(4):
            observations, _, _, _, infos = envs.step((WAIT, WAIT))
        assert all(len(o) <= Verbose.max_observation_length and "Turns remaining" in o for o in observations)
        envs.close()
    finally:
        del gym.registry["budgetgym-test/Verbose-v0"]


def test_reveal_room_bounds_every_template():
    for modes in REVEAL_TEMPLATES.values():
        for template in modes.values():
            assert len(template.format(cap=10**15 - 1, remaining=10**15 - 1, used=10**15 - 1)) <= REVEAL_ROOM
    with pytest.raises(ValueError, match="one may reveal"):
        TurnBudget(TurnBudget(CounterEnv(), 3, reveal="remaining"), 2, reveal="total")


# ------------------------------------------------------------------ one vocabulary, every entry point

FORMS = [(3, 3), (0.5, 4), ("1x", 2), ("1.5x", 3), ("3", 3), ("0.5", 4), (" 1.5X ", 3)]  # toy-04: 2 turns, full 8


@pytest.mark.parametrize("form, cap", FORMS, ids=[repr(f) for f, _ in FORMS])
def test_every_entry_point_takes_every_form(form, cap, tmp_path):
    def cap_of(env):
        return env.reset(seed=0, options={"task_id": "toy-04"})[1]["budget"]["cap"]

    assert resolve_cap(as_budget(form), 8, 2) == cap
    assert cap_of(TurnBudget(CounterEnv(), form)) == cap  # wrappers
    assert cap_of(BudgetMix(CounterEnv(), budgets=(form,))) == cap
    assert cap_of(HorizonSchedule(CounterEnv(), stages=((0, form),))) == cap
    assert cap_of(budgetgym.make(TOY_ID, budget=form)) == cap  # budgetgym.make
    assert cap_of(budgetgym.make(TOY_ID, budget_mix=[form])) == cap
    episode = ChatEpisode(TOY_ID, BudgetSpec(budget=form))  # the trainer adapters' engine
    assert episode.start("toy-04", seed=0)[1]["budget"]["cap"] == cap
    episode.close()
    mix = ChatEpisode(TOY_ID, BudgetSpec.from_config({"budget_mix": [form], "reveal": "remaining"}))
    assert mix.start("toy-04", seed=0)[1]["budget"]["cap"] == cap
    mix.close()
    if isinstance(form, str):  # the command line reads text
        from budgetgym.cli import budget_argument
        assert resolve_cap(budget_argument(form), 8, 2) == cap
    report = assert_solves("oracle", TOY_ID, tasks=["toy-04"], turns=form)  # the pytest plugin's helper
    assert report.budget == as_budget(form)
    from budgetgym.eval.agents import make_agent
    from budgetgym.eval.sweep import run_sweep
    budget = as_budget(form)
    result = run_sweep(TOY_ID, make_agent("oracle"), tasks=["toy-04"], k=1, budgets=[budget], reveal="total")
    assert [r["cap"] for r in result.records] == [cap]


def test_the_oracle_is_solved_within_a_call_budget_through_assert_solves():
    assert_solves("oracle", TOY_ID, tasks=["toy-04"], calls="1x")
    assert_solves("oracle", TOY_ID, tasks=["toy-04"], tokens="1x")
    with pytest.raises(ValueError, match="one unit"):
        assert_solves("oracle", TOY_ID, tasks=1, turns=2, calls=2)


def test_a_failure_under_a_multiple_shows_its_transcript():
    """Issue 20 item 8: turns="1x" made the failure message raise ValueError (format code 'g')."""
    with pytest.raises(AssertionError, match=r"not solved within 1x the shortest solution") as failure:
        assert_solves(lambda observation, info, env: STALL, TOY_ID, tasks=["toy-04"], turns="1x")
    assert "[turn 1] action:" in str(failure.value) and "truncated: out of turns" in str(failure.value)
    with pytest.raises(AssertionError, match=r"(?s)within 2 tool calls .*out of calls .*cap of 2 calls"):
        assert_solves(lambda observation, info, env: WAIT, TOY_ID, tasks=["toy-04"], calls=2)


OLD_NAMES = [
    (r"""(info|infos|budget|\["budget"\]|\.budget)\[["']max_turns["']\]""", "info['max_turns'] is info['full_budget']; "
     "the cap is info['budget']['cap']"),
    (r"""\[["']fraction["']\]|budget_fraction""", "BudgetMix's draw is info['budget']['drawn']"),
    (r"\bcap_for\b|\bcheck_budget\b.*from budgetgym.wrappers|from budgetgym.wrappers import .*parse_budget",
     "the budget vocabulary is budgetgym.core.budgets"),
    (r"\bBudgetMix\([^)]*fractions=", "BudgetMix takes budgets="),
    (r"\bTurnBudget\([^)]*max_turns=", "TurnBudget takes budget="),
    (r"\{max_turns\}", "reveal templates use {cap}"),
]


def test_no_old_budget_name_is_read_anywhere():
    found = []
    paths = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    for folder in ("budgetgym", "tests", "examples", "benchmarks", "docs"):
        paths += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md") and "assets" not in p.parts)
    for path in paths:
        if path.name == Path(__file__).name:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for pattern, why in OLD_NAMES:
                # The tests that a template with the old field is refused name it on purpose.
                if re.search(pattern, line) and not (why.startswith("reveal") and path.parts[-2] == "tests"):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {why}")
    assert found == []


def test_budget_forms_are_checked_in_one_place():
    assert parse_budget("8") == 8 and parse_budget("0.5") == 0.5 and parse_budget("1.50x") == "1.5x"
    for bad in ("0", "-1", "1.5", "nan", "inf", "x", "1.5xx", ""):
        with pytest.raises(ValueError):
            parse_budget(bad)
    with pytest.raises(ValueError, match="turns only"):
        check_budget(0.5, "tokens")
    with pytest.raises(ValueError, match="unit"):
        check_budget(3, "seconds")
    assert np.isclose(resolve_cap(0.1, 30, None), 3) and resolve_cap("3x", 12, 5) == 12
    assert resolve_cap("3x", None, 5, "calls") == 15  # calls and tokens have no full budget to stay under
    assert len(TOY_TASKS) == len(TaskSet(list(TOY_TASKS)))


# ------------------------------------------------------------------ the default tokenizer

#: The bound ``regex_tokens`` states: fewer than 2**25.1 distinct tokens, so none carries more bits.
TOKEN_BITS = 25.1
ASCII_WORD = frozenset(string.ascii_letters + string.digits + "_")
#: Every character Python's ``\s`` matches in a str (the whitespace a token may hold runs of).
WHITESPACE = "".join(re.findall(r"\s", "".join(map(chr, range(0x110000)))))


def is_default_token(piece: str) -> bool:
    """One token by regex_tokens' docstring, written out without its regex."""
    if 1 <= len(piece) <= 4 and piece.isspace():
        return True
    body = piece[1:] if piece.startswith(" ") else piece
    if 1 <= len(body) <= 4 and set(body) <= ASCII_WORD:
        return True
    return len(body) == 1 and not body.isspace() and body not in ASCII_WORD


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())) |
       st.text(st.sampled_from(" \t\nab_9Z(é漢\x00\x1f\u3000\ud800")))
def test_the_default_tokens_join_back_into_the_text_and_each_is_one_documented_shape(text):
    tokens = regex_tokens(text)
    assert "".join(tokens) == text and count_tokens(text) == len(tokens)
    assert all(is_default_token(token) for token in tokens), tokens


def test_the_default_tokenizer_has_fewer_than_two_to_the_documented_bits_tokens():
    """The docstring's bound: word runs (with or without a space), other characters (likewise) and
    whitespace runs number fewer than 2**TOKEN_BITS, so n tokens carry at most n * TOKEN_BITS bits."""
    assert len(WHITESPACE) == 29 and all(c.isspace() for c in WHITESPACE)
    words = 2 * sum(len(ASCII_WORD) ** n for n in range(1, 5))
    others = 2 * (0x110000 - len(ASCII_WORD) - len(WHITESPACE))
    runs = sum(len(WHITESPACE) ** n for n in range(1, 5))
    assert math.log2(words + others + runs) < TOKEN_BITS
    assert regex_tokens(" abcdefghi") == [" abcd", "efgh", "i"]
    assert regex_tokens("\n\n\n\n\n漢 漢\x00\ud800") == ["\n\n\n\n", "\n", "漢", " 漢", "\x00", "\ud800"]


def _digits(payload: bytes, base: int) -> list[int]:
    """The payload as a number, in base ``base`` (least significant digit first)."""
    value, digits = int.from_bytes(b"\x01" + payload, "big"), []  # the leading 1 keeps leading zero bytes
    while value:
        value, digit = divmod(value, base)
        digits.append(digit)
    return digits


def _densest(payload: bytes) -> str:
    """The encoding that comes nearest the bound: each token a 4-character word, a space before it or not."""
    letters = sorted(ASCII_WORD)
    tokens = []
    for digit in _digits(payload, 2 * len(letters) ** 4):
        spaced, word = divmod(digit, len(letters) ** 4)
        tokens.append(" " * spaced + "".join(letters[word // len(letters) ** i % len(letters)] for i in range(4)))
    return "".join(tokens)


ENCODINGS = {
    "base32 word": lambda payload: base64.b32encode(payload).decode(),
    "base64 word": lambda payload: base64.b64encode(payload).decode(),
    "bits as spaces and tabs": lambda payload: "".join(" \t"[int(bit)] for byte in payload for bit in f"{byte:08b}"),
    "every whitespace character": lambda payload: "".join(WHITESPACE[d] for d in _digits(payload, len(WHITESPACE))),
    "CJK letters, 14 bits each": lambda payload: "".join(chr(0x4E00 + d) for d in _digits(payload, 2**14)),
    "base65536-style, 16 bits a letter": lambda payload: "".join(chr(0x20000 + d) for d in _digits(payload, 2**16)),
    "any code point, 20 bits each": lambda payload: "".join(chr(d) for d in _digits(payload, 2**20)),
    "lone surrogates": lambda payload: "".join(chr(0xD800 + d) for d in _digits(payload, 2**11)),
    "NUL and control characters": lambda payload: "".join(chr(d) for d in _digits(payload, 32)),
    "4-character words, a space or none": _densest,
}


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_no_encoding_carries_a_payload_in_fewer_tokens_than_the_bound_allows(encoding):
    """Under the earlier tokenizer (a word of any length one token, whitespace none) a base32 or
    base64 word carried any payload in one token, and spaces and tabs carried it in none."""
    payload = random.Random(encoding).randbytes(3000)
    tokens = count_tokens(ENCODINGS[encoding](payload))
    assert tokens >= 8 * len(payload) / TOKEN_BITS, (encoding, tokens)
    if encoding == "4-character words, a space or none":
        assert tokens <= 8 * len(payload) / 24.8 + 1  # the bound is nearly reached: it is the right figure


def test_a_base32_encoded_fix_pays_for_its_payload_under_a_token_budget():
    """The red-team attack of 2026-12-06: a Coding-v0 fix sent as `echo <base32> | base32 -d | sh` was
    46 tokens, so it solved the task inside a "0.5x" cap of 79 (the oracle's solution: 158). Its
    tokens now grow with its payload (123): it is over "0.5x" of the oracle's (97) and is not run,
    and under "1x" it still runs and solves (an encoding is priced, not banned)."""
    require("local")
    outcomes = {}
    for budget in ("0.5x", "1x"):
        env = TurnBudget(gym.make("budgetgym/Coding-v0"), budget, unit="tokens")
        _, info = env.reset(seed=0, options={"task_id": "coding-datecalc-000"})
        bug = env.unwrapped.task.data["bug"]
        script = (f"import pathlib; p = pathlib.Path({bug['path']!r}); "
                  f"p.write_text(p.read_text().replace({bug['buggy']!r}, {bug['fixed']!r}, 1))")
        payload = f"python3 -c {shlex.quote(script)}".encode()
        payload += b" " * (-len(payload) % 5)  # base32 without '=' padding
        command = f"echo {base64.b32encode(payload).decode()} | base32 -d | sh"
        action = json.dumps({"name": "run_command", "arguments": {"command": command}})
        assert count_tokens(action) >= 8 * len(payload) / TOKEN_BITS
        observation, _, terminated, truncated, info = env.step(action)
        for name in ("run_tests", "submit"):  # a submission needs a test run of the repository as it is
            if not truncated:
                observation, _, terminated, truncated, info = env.step(json.dumps({"name": name, "arguments": {}}))
        outcomes[budget] = (info["success"], truncated, observation.startswith("Out of tokens"))
        env.close()
    assert outcomes == {"0.5x": (False, True, True), "1x": (True, False, False)}

