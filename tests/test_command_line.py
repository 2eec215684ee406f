"""The budgetgym command, run as a person would: a real subprocess, real stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import budgetgym
from budgetgym.cli import main

TESTS = Path(__file__).parent
# A sitecustomize-free way to let the subprocess see the toy env: register it, then run the CLI.
RUN_WITH_TOY = (
    "import sys; sys.path.insert(0, {tests!r}); import gymnasium as gym, budgetgym; "
    "gym.register('budgetgym-test/Counter-v0', entry_point='toy_env:CounterEnv'); "
    "from budgetgym.cli import main; sys.exit(main(sys.argv[1:]))"
).format(tests=str(TESTS))


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN_WITH_TOY, *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_list_json_names_every_registered_id(capsys):
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [e.id for e in budgetgym.REGISTRY]
    for row in rows:
        assert "unavailable" in row or (row["tasks"] > 0 and row["full_budget"]["min"] >= 1)
        parallel = row["family"] in ("function_calling", "bfcl")  # the action rule: one call a turn elsewhere
        assert "unavailable" in row or row["max_calls_per_turn"] == (32 if parallel else 1)
        if "unavailable" not in row:  # the oracle's turns per split: their spread and each value's count
            assert set(row["oracle_turns"]) == set(row["splits"])
            for split, spread in row["oracle_turns"].items():
                assert sum(spread["counts"].values()) == row["splits"][split]
                assert spread["min"] == min(map(int, spread["counts"])) <= spread["median"] <= spread["max"]


def test_play_shows_the_budget_and_ends_when_solved():
    result = run_cli("play", "budgetgym-test/Counter-v0", "--task", "toy-00", "--budget", "3",
                     stdin="say(text='hello')\n:hint\nadd(n=2)\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Task toy-00: 3 turns (full budget 4)" in out
    assert "[Turns remaining: 3 of 3]" in out and "[turn 2/3] >" in out
    assert "oracle: add(2)" in out
    assert "[solved: reward 1.0, 2 turns, progress 1.00]" in out


def test_play_runs_out_of_turns_and_reports_bad_input():
    result = run_cli("play", "budgetgym-test/Counter-v0", "--task", "toy-04", "--budget", "0.25", "--reveal", "none",
                     stdin="{oops\nsay(text=1)\n")
    assert result.returncode == 0, result.stderr
    assert "Invalid action: Malformed JSON" in result.stdout and "1 is not of type 'string'" in result.stdout
    assert "[out of turns: reward 0.0, 2 turns, progress 0.00]" in result.stdout
    assert "Turns remaining" not in result.stdout


def test_play_takes_a_tool_the_env_reads_bare_and_hints_at_one_it_does_not():
    """Web-v0's ``back`` (which ``:hint`` can suggest) takes no arguments: it is played. Navigation's
    ``command`` needs its text: the bare name is answered with the call form, and no turn is spent."""
    task = budgetgym.make("budgetgym/Web-v0").unwrapped.tasks[0].id
    result = run_cli("play", "budgetgym/Web-v0", "--task", task, "--seed", "0", stdin="search[chair]\nback\n")
    assert result.returncode == 0, result.stderr
    assert "back is a tool" not in result.stdout and "[turn 3/" in result.stdout
    result = run_cli("play", "budgetgym/Navigation-v0", "--seed", "0", stdin="command\n")
    assert "command is a tool: call it as command(" in result.stdout and "[turn 1/" in result.stdout
    assert "[turn 2/" not in result.stdout


@pytest.mark.parametrize("args,message", [
    (["play", "budgetgym-test/Counter-v0", "--task", "nope"], "unknown task id 'nope'"),
    (["play", "budgetgym-test/Counter-v0", "--budget", "2.5"], "(0, 1]"),
    (["play", "budgetgym/NoSuch-v0"], "budgetgym: error:"),
])
def test_bad_arguments_get_a_clear_message(args, message):
    result = run_cli(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


HOSTILE_LINES = [
    "[" * 5000 + "]" * 5000,
    "add(n=" + "-" * 30000 + "1)",
    "add(n=" + "not " * 8000 + "1)",
    "add(n=a" + ".b" * 20000 + ")",
    "</tool_call>" * 2700 + "<tool_call>" * 2700,
    "add(" + "1," * 30000 + ")",
    '{"name": "add", "arguments": {"n": ' + "9" * 5000 + "}}",
]


@pytest.mark.parametrize("start", range(0, len(HOSTILE_LINES), 3))
def test_play_answers_hostile_lines_without_a_traceback(start):
    """Nesting bombs, long chains, tag floods, many arguments, huge numbers, and a line that is not
    UTF-8 at all: each one is an invalid action with a message, never a traceback."""
    lines = HOSTILE_LINES[start:start + 3]
    stdin = "\n".join(lines) + "\n"
    result = subprocess.run([sys.executable, "-c", RUN_WITH_TOY, "play", "budgetgym-test/Counter-v0", "--task", "toy-04"],
                            input=stdin.encode() + b"say(text='\xed\xa0\x80 \xff')\n", capture_output=True, timeout=120)
    stderr, stdout = result.stderr.decode(), result.stdout.decode()
    assert result.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert stdout.count("Invalid action:") == len(lines) + 1, stdout[-2000:]


def test_plays_lines_are_read_as_input_reads_them(capsys):
    """Several lines in one write, bytes that are not UTF-8 (kept as lone surrogates), a last line
    without its newline, then EOFError; a stream without a descriptor falls back to input()."""
    import io

    from budgetgym.cli import _Lines

    read_end, write_end = os.pipe()
    os.write(write_end, b"first\nsecond \xff\n")
    os.write(write_end, b"th")
    os.write(write_end, b"ird")
    os.close(write_end)
    with open(read_end, encoding="utf-8") as stream:
        lines = _Lines(stream)
        assert [lines.read("> ") for _ in range(3)] == ["first", "second \udcff", "third"]
        with pytest.raises(EOFError):
            lines.read("> ")
    assert capsys.readouterr().out == "> " * 4
    assert _Lines(io.StringIO("x")).fd is None
