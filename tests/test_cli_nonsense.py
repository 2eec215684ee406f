"""Nonsense invocations of the ``budgetgym`` command: each is answered with one line on standard error
and a non-zero exit, never a traceback, and nothing runs. In-process (``main([...])``), so the table
stays fast; a usage error argparse finds exits through ``SystemExit``."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from budgetgym.cli import main
from registered import TOY_ID

FC = "budgetgym/FunctionCalling-v0"
EVAL = ["eval", "--env", TOY_ID, "--agent", "oracle", "--no-progress", "--quiet"]


def run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.err


def assert_one_line_refusal(code, err, argv):
    assert code not in (0, None), f"{argv} exited 0"
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("budgetgym"), f"{argv}: {err!r}"


# Refused where the value is parsed: out of range, not finite, empty lists.
PARSED = [
    [*EVAL, "--k", ","], [*EVAL, "--k", "0"], [*EVAL, "--k", "99999999999"], [*EVAL, "--k", "1,,2"],
    [*EVAL, "--k", "-1"], [*EVAL, "--budgets", ","], [*EVAL, "--budgets", "nan"], [*EVAL, "--budgets", "0"],
    [*EVAL, "--seed", "-1"], [*EVAL, "--seed", str(2**64)], [*EVAL, "--max-tokens", "0"],
    [*EVAL, "--temperature", "nan"], [*EVAL, "--temperature", "-1"], [*EVAL, "--timeout", "0"],
    [*EVAL, "--timeout", "inf"], [*EVAL, "--max-retries", "-1"], [*EVAL, "--workers", "0"], [*EVAL, "--n", "0"],
    [*EVAL, "--reveal", ","], [*EVAL, "--reveal", "loud"],
    ["probe", "exploits", "--env", TOY_ID, "--threshold", "nan"],
    ["probe", "exploits", "--env", TOY_ID, "--threshold", "2"],
    ["probe", "exploits", "--env", TOY_ID, "--attempts", "0"],
    ["probe", "exploits", "--env", TOY_ID, "--sample", "0"],
    ["probe", "recovery", "--env", FC, "--attempts", "0"], ["probe", "recovery", "--env", FC, "--kinds", ","],
    ["probe", "action-quality", "--env", TOY_ID, "--rollouts", "0"],
    ["study", "--iterations", "0"], ["study", "--seed", "-1"], ["study", "--sft-steps", "0"],
    ["study", "--policy", "linear", "--sft-steps", "5"], ["study", "--quick", "--sft-steps", "5"],
    ["serve", "web", "--port", "70000"], ["serve", "web", "--port", "http"],
    ["serve", "web", "--idle-seconds", "nan"], ["serve", "web", "--idle-seconds", "-5"],
    ["serve", "web", "--max-sessions", "0"], ["serve", FC, "--max-message-bytes", "0"],
    ["serve", FC, "--port", "-1"],
    ["export", FC, "--out", "x.jsonl", "--seed", "-1"], ["export", FC, "--out", "x.jsonl", "--limit", "0"],
    ["play", TOY_ID, "--seed", "-1"], ["report", "nowhere", "--k", ","],
    ["play", TOY_ID, "--task", ""], ["play", TOY_ID, "--task", "  "], ["play", TOY_ID, "--split", ""],
    ["study", "--model", ""], ["study", "--device", "bogus"], ["study", "--device", "cuda:x"],
    # Not a model: checked before the study's corpus is played (transformers would take it for a hub id).
    ["study", "--model", "/nonexistent/model"], ["study", "--model", "a" * 5000], ["study", "--model", "/etc/passwd/x"],
    ["study", "--model", "model.gguf"], ["study", "--model", "smollm2-135m-instruct", "--policy", "linear"],
    [*EVAL, "--max-tokens", str(10**30)],
    ["no-such-command"], [],
]


@pytest.mark.parametrize("argv", PARSED, ids=lambda argv: " ".join(argv[-2:]) or "nothing")
def test_a_nonsense_value_is_refused_where_it_is_parsed(capsys, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run(capsys, argv)
    assert_one_line_refusal(code, err, argv)
    assert code == 2
    assert list(tmp_path.iterdir()) == []  # nothing was written


def _regular_file(tmp_path: Path) -> str:
    path = tmp_path / "a-file"
    path.write_text("x")
    return str(path)


def _read_only_folder(tmp_path: Path) -> str:
    if os.geteuid() == 0:  # root writes anywhere a mode allows nothing; /sys refuses even root
        return "/sys/budgetgym-out"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return str(folder / "run")


# Refused when the command starts: paths that cannot be written, ids given twice, data that is missing.
RUNTIME = {
    "eval, the same --env twice": lambda t: [*EVAL, "--env", TOY_ID, "--out", str(t / "run")],
    "eval --out a file": lambda t: [*EVAL, "--out", _regular_file(t)],
    "eval --out under a file": lambda t: [*EVAL, "--out", _regular_file(t) + "/run"],
    "eval --out a read-only folder": lambda t: [*EVAL, "--out", _read_only_folder(t)],
    "eval --out /dev/null": lambda t: [*EVAL, "--out", "/dev/null"],
    "eval --agent noisy-oracle:nan": lambda t: [*EVAL, "--agent", "noisy-oracle:nan", "--out", str(t / "run")],
    "eval --agent openai:": lambda t: [*EVAL, "--agent", "openai:", "--out", str(t / "run")],
    "eval --tasks 0": lambda t: [*EVAL, "--tasks", "0", "--out", str(t / "run")],
    "eval --tasks ,": lambda t: [*EVAL, "--tasks", ",", "--out", str(t / "run")],
    "report of a missing folder": lambda t: ["report", str(t / "missing")],
    "report --out a file": lambda t: ["report", str(t), "--out", _regular_file(t)],
    "compare --out a read-only folder": lambda t: ["compare", str(t), str(t), "--out", _read_only_folder(t)],
    "export --out a folder": lambda t: ["export", FC, "--out", str(t)],
    "export --out under a file": lambda t: ["export", FC, "--out", _regular_file(t) + "/rows.jsonl"],
    "export --out a read-only folder": lambda t: ["export", FC, "--out", _read_only_folder(t) + ".jsonl"],
    "export --out /dev/full": lambda t: ["export", FC, "--out", "/dev/full", "--limit", "1"],
    "export of an unknown id": lambda t: ["export", "budgetgym/Nope-v0", "--out", str(t / "rows.jsonl")],
    "study --out a file": lambda t: ["study", "--quick", "--out", _regular_file(t)],
    "study --out a read-only folder": lambda t: ["study", "--quick", "--out", _read_only_folder(t)],
    "study of an unknown id": lambda t: ["study", "--quick", "--env", "budgetgym/Nope-v0", "--out", str(t)],
    "play SWEBench-v0 without data": lambda t: ["play", "budgetgym/SWEBench-v0"],
    "play ALFWorld-v0 without data": lambda t: ["play", "budgetgym/ALFWorld-v0"],
    "play of an unknown id": lambda t: ["play", "budgetgym/Nope-v0"],
    "serve on an unresolvable host": lambda t: ["serve", "web", "--host", "no-such-host.invalid"],
}


@pytest.mark.parametrize("case", list(RUNTIME))
def test_a_nonsense_invocation_is_refused_in_one_line(capsys, case, tmp_path, monkeypatch):
    for name in ("BUDGETGYM_SWEBENCH_INSTANCES", "ALFWORLD_DATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    argv = RUNTIME[case](tmp_path)
    code, err = run(capsys, argv)
    assert_one_line_refusal(code, err, argv)


def test_serve_on_a_port_in_use_is_refused_in_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run(capsys, ["serve", "web", "--port", str(port)])
    assert_one_line_refusal(code, err, "serve")
    assert f"cannot listen on 127.0.0.1:{port}" in err


def test_export_streams_to_a_device_and_never_replaces_it(capsys, tmp_path):
    code, err = run(capsys, ["export", FC, "--out", "/dev/full", "--limit", "1"])
    assert code != 0 and "No space left" in err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    code, _ = run(capsys, ["export", FC, "--out", "/dev/null", "--limit", "1"])
    assert code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    link = tmp_path / "rows.jsonl"
    target = tmp_path / "target.jsonl"
    target.write_text("")
    link.symlink_to(target)
    code, _ = run(capsys, ["export", FC, "--out", str(link), "--limit", "2"])
    assert code == 0 and link.is_symlink() and len(target.read_text().splitlines()) == 2


def test_an_install_without_matplotlib_writes_everything_but_the_plots(capsys, tmp_path, monkeypatch):
    # Every module of the two packages, not only the tops: another test in this process may have
    # imported a submodule (rich.table), which a cached import would hand back.
    names = {"matplotlib", "matplotlib.figure", "rich", "rich.progress", "rich.table"}
    names |= {name for name in sys.modules if name.split(".", 1)[0] in ("matplotlib", "rich")}
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # import now raises ImportError, as without the extra
    code, err = run(capsys, [*EVAL[:-2], "--quiet", "--k", "1", "--budgets", "1.0", "--out", str(tmp_path)])
    assert code == 0, err
    assert "the plots are left out" in err and "no progress bars" in err
    assert {p.name for p in tmp_path.iterdir()} >= {"episodes.jsonl", "summary.json", "pass_at_k.csv"}
    assert not list(tmp_path.glob("*.png"))
    code, err = run(capsys, [*EVAL[:-1], "--k", "1", "--budgets", "1.0", "--out", str(tmp_path)])
    assert code == 1 and "'rich'" in err and "--quiet" in err  # tables need rich: refused in one line
    assert_one_line_refusal(code, err, "eval without --quiet")


def test_every_import_guard_raises_the_one_missing_extra_error():
    """One class and one message form for a missing extra: no guard raises a bare ImportError or
    Gymnasium's DependencyNotInstalled of its own."""
    package = Path(__file__).parents[1] / "budgetgym"
    offenders = [f"{path.relative_to(package)}" for path in package.rglob("*.py")
                 if path.name != "extras.py" and ("raise ImportError(" in path.read_text()
                                                  or "(DependencyNotInstalled" in path.read_text())]
    assert offenders == []


@pytest.mark.parametrize("argv,module", [
    (["play", "budgetgym/Navigation-v0"], "textworld"),
    (["export", FC, "--out", "rows.parquet"], "pyarrow"),
])
def test_a_missing_extra_exits_1_in_one_line_everywhere(capsys, tmp_path, monkeypatch, argv, module):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError, as without the extra
    code, err = run(capsys, argv)
    assert_one_line_refusal(code, err, argv)
    assert code == 1 and "needs " in err and "pip install" in err
