"""Every code block of the README runs, and the runnable ones of docs/training.md.

Python blocks run in order, each in a fresh namespace, in a temporary folder. Shell blocks: each
``budgetgym ...`` or ``python ...`` command runs (line continuations joined) in one temporary folder
per page, in order, so a command may read what an earlier one wrote. Not run, each for its stated
reason: commands naming a placeholder model (``MODEL``: they need a served model), ``make`` and
``pip`` (the set-up this test suite itself runs under), and blocks fenced as ``not-run`` (the GPU
recipe and what needs a trainer or a model server; their pieces are tested in tests/integrations).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)
PAGES = ["README.md", "docs/training.md"]


def blocks(page: str) -> list[tuple[str, list[str], str]]:
    """(language, the info string's other words, code) of each fenced block of ``page``."""
    found = []
    for info, code in FENCE.findall((ROOT / page).read_text(encoding="utf-8")):
        words = info.split()
        found.append((words[0] if words else "", words[1:], code))
    return found


def shell_commands(code: str) -> list[str]:
    return [line.strip() for line in code.replace("\\\n", " ").splitlines() if line.strip()]


def skip_reason(command: str) -> str | None:
    if "MODEL" in command:
        return "needs a served model"
    if command.startswith(("make ", "pip ")):
        return "set-up that this suite runs under"
    if command.startswith(("budgetgym ", "python ")):
        return None
    return "not a budgetgym or python command"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, workdir, capsys):
    runnable = [code for language, extra, code in blocks(page) if language == "python" and "not-run" not in extra]
    assert runnable, f"{page} has no runnable python block"
    for number, code in enumerate(runnable, 1):
        namespace = {"__name__": f"docs_block_{number}"}
        try:
            exec(compile(code, f"{page} python block {number}", "exec"), namespace)
        except Exception as err:  # name the block: the traceback's file name does too
            raise AssertionError(f"{page}: python block {number} failed: {err!r}\n{code}") from err


@pytest.mark.parametrize("page", PAGES)
def test_shell_commands_run(page, workdir):
    ran, skipped = [], []
    for language, extra, code in blocks(page):
        if language not in ("bash", "sh") or "not-run" in extra:
            continue
        for command in shell_commands(code):
            reason = skip_reason(command)
            if reason:
                skipped.append((command, reason))
                continue
            argv = shlex.split(command, comments=True)
            if argv[0] == "python":
                argv[0] = sys.executable
            result = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=900)
            assert result.returncode == 0, f"{page}: `{command}` exited {result.returncode}:\n{result.stderr[-3000:]}"
            ran.append(command)
    assert ran or page != "README.md", "the README's shell blocks ran nothing"
    assert all(reason for _, reason in skipped)
