"""``--env-arg KEY=VALUE``: the env keyword arguments of every command that makes an env, one parser."""

from __future__ import annotations

import argparse
import json

import pytest

from budgetgym.cli import build_parser, main
from budgetgym.eval.cli import env_argument
from coding_support import require
from eval_support import TOY_ID

CODING = "budgetgym/Coding-v0"


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("text, pair", [
    ("tier=3", ("tier", 3)), ("flag=true", ("flag", True)), ("task_set=libraries", ("task_set", "libraries")),
    ('options={"a": [1, 2]}', ("options", {"a": [1, 2]})), ("name=", ("name", "")), ("url=a=b", ("url", "a=b")),
    ('quoted="3"', ("quoted", "3")),
])
def test_a_value_is_json_where_it_parses_and_text_otherwise(text, pair):
    assert env_argument(text) == pair


@pytest.mark.parametrize("text", ["task_set", "=libraries", "1x=2", "two words=1", "a.b=1"])
def test_a_pair_without_a_python_name_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        env_argument(text)


def test_every_command_that_makes_an_env_takes_the_one_option():
    parser = build_parser()
    for argv in (["eval"], ["probe", "recovery"], ["probe", "action-quality"], ["probe", "exploits"],
                 ["probe", "budget-awareness"], ["play", TOY_ID], ["list"], ["serve", TOY_ID]):
        args = parser.parse_args(argv + ["--env-arg", "task_set=libraries", "--env-arg", "tier=2"])
        assert args.env_arg == [("task_set", "libraries"), ("tier", 2)], argv


@pytest.mark.parametrize("argv, message", [
    (["eval", "--env", TOY_ID, "--env-arg", "split"], "argument --env-arg: expected KEY=VALUE"),
    (["eval", "--env", TOY_ID, "--env-arg", "split=train", "--env-arg", "split=test"],
     "--env-arg split is given twice"),
    (["eval", "--env", TOY_ID, "--env-arg", "no_such_keyword=1"],
     f"--env-arg: {TOY_ID} does not take no_such_keyword"),
    (["eval", "--env", TOY_ID, "--env-arg", "split=no-such-split"], "no-such-split"),
    (["probe", "exploits", "--env", TOY_ID, "--env-arg", "reward_mode=progress"],
     "--env-arg reward_mode: set it with --reward-mode"),
    (["probe", "exploits", "--env-arg", "split=train"], "--env-arg needs --env"),
    (["probe", "recovery", "--env", TOY_ID, "--env-arg", "no_such_keyword=1"], "does not take no_such_keyword"),
    (["list", "--env-arg", "split=train"], "--env-arg needs --env"),
    (["play", TOY_ID, "--split", "train", "--env-arg", "split=test"], "--env-arg split: set it with --split"),
    (["play", TOY_ID, "--env-arg", "budget=3"], "--env-arg budget: set it with --budget"),
    (["play", TOY_ID, "--env-arg", "no_such_keyword=1"], f"--env-arg: {TOY_ID} does not take no_such_keyword"),
    (["serve", "web", "--env-arg", "split=test"], "serve web takes none"),
])
def test_bad_env_args_are_one_line_and_nothing_runs(tmp_path, capsys, argv, message):
    out = tmp_path / "never"
    with_out = argv + ["--out", str(out)] if argv[0] in ("eval", "probe") else argv
    try:
        code, stdout, stderr = run(capsys, *with_out)
    except SystemExit as exit_:  # argparse's own errors
        code, stderr = exit_.code, capsys.readouterr().err
    assert code == 2, stderr
    assert message in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists()  # refused before the output folder was made


def test_a_sweep_plays_the_env_made_with_the_env_args(tmp_path, capsys):
    code, stdout, stderr = run(capsys, "eval", "--env", TOY_ID, "--env-arg", "split=train", "--agent", "oracle",
                               "--tasks", "all", "--k", "1", "--budgets", "1x", "--quiet", "--out", str(tmp_path),
                               "--no-progress")
    assert code == 0, stderr
    assert "on split train;" in stdout
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert records and {r["split"] for r in records} == {"train"} and all(r["success"] for r in records)


def test_list_shows_a_task_set_only_an_env_arg_reaches(capsys):
    code, stdout, stderr = run(capsys, "list", "--json", "--env", CODING)
    assert code == 0, stderr
    (shipped,) = json.loads(stdout)
    code, stdout, stderr = run(capsys, "list", "--json", "--env", CODING, "--env-arg", "task_set=libraries")
    assert code == 0, stderr
    (libraries,) = json.loads(stdout)
    assert libraries["env_kwargs"] == {"task_set": "libraries"} and "env_kwargs" not in shipped
    assert libraries["tasks"] > shipped["tasks"]
    assert libraries["oracle_turns"]["test"]["max"] > shipped["oracle_turns"]["test"]["max"]


def test_a_sweep_on_the_library_task_set_in_withheld_mode(tmp_path, capsys):
    require("local")
    task = "lib-cachetools-033-withheld"
    code, stdout, stderr = run(capsys, "eval", "--env", CODING, "--env-arg", "task_set=libraries",
                               "--env-arg", "tests=withheld", "--agent", "oracle", "--tasks", task, "--k", "1",
                               "--budgets", "1x", "--quiet", "--out", str(tmp_path), "--no-progress")
    assert code == 0, stderr
    (record,) = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert record["task"] == task and record["success"]
