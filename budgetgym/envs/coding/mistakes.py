"""The mistakes an engineer makes on the way to a coding task's fix, for the curated failure states
(``CodingEnv.propose_mistake`` -> :func:`propose`, built by :mod:`budgetgym.core.failures`).

Six kinds, each one action on the oracle's path:

* ``syntax_error``: the fix written with an unclosed parenthesis (the file no longer parses);
* ``wrong_file``: a seeded mutation of another library file instead of the fix;
* ``test_edited``: the first failing test made to return early instead of fixing the library;
* ``half_fix``: the buggy file rewritten with the fix but cut short at a seeded line;
* ``breaks_pass_to_pass``: the fix with a second change that breaks a passing test (the task's
  ``breaker``);
* ``deleted_file``: the buggy file deleted.

Each returns None where the kind does not fit the state (the file already edited, no breaker).
"""

from __future__ import annotations

import ast
import random
import shlex
from typing import Any, Mapping

from budgetgym.core import Action
from budgetgym.envs.coding.mutate import mutations, segment
from budgetgym.envs.coding.repos import is_test_path
from budgetgym.envs.coding.tools import call as _call

KINDS = ("syntax_error", "wrong_file", "test_edited", "half_fix", "breaks_pass_to_pass", "deleted_file")


def propose(ws: Any, task: Mapping[str, Any], kind: str, rng: random.Random) -> tuple[Action, str] | None:
    """(the mistaken action, what it did wrong) of ``kind`` on the workspace ``ws`` (Coding-v0's
    ``Workspace``) of ``task``, or None where the kind does not fit."""
    bug = task["bug"]
    path = bug["path"]
    current = ws.files.get(path, b"").decode("utf-8", errors="replace")
    pristine = ws.files.get(path) == ws.initial[path]
    original = ws.original[path].decode("utf-8")
    if kind == "syntax_error" and pristine:
        first, _, rest = bug["fixed"].partition("\n")
        broken = first.rstrip() + " (\n" + rest
        text = current.replace(bug["buggy"], broken, 1)
        if _parses(text):
            return None
        return (_call("replace_in_file", path=path, old=bug["buggy"], new=broken),
                f"introduced a syntax error while editing {path}")
    if kind == "wrong_file":
        others = sorted(p for p in ws.original if p.endswith(".py") and p != path and not is_test_path(p)
                        and not p.endswith("__init__.py") and ws.files.get(p) == ws.original[p])
        if not others:
            return None
        other = rng.choice(others)
        source = ws.original[other].decode("utf-8")
        candidates = mutations(other, source)
        rng.shuffle(candidates)
        for mutation in candidates[:20]:
            piece = segment(mutation.source, source)
            if source.count(piece.fixed) == 1:
                return (_call("replace_in_file", path=other, old=piece.fixed, new=piece.buggy),
                        f"edited {other} instead of {path}, where the bug is")
        return None
    if kind == "test_edited":
        failing = task["fail_to_pass"][0]
        test_path, _, name = failing.partition("::")
        name = name.split("[", 1)[0]
        source = ws.files.get(test_path, b"").decode("utf-8", errors="replace")
        lines = [line for line in source.splitlines(keepends=True) if line.startswith(f"def {name}(")]
        if len(lines) != 1 or source.count(lines[0]) != 1:
            return None
        return (_call("replace_in_file", path=test_path, old=lines[0], new=lines[0] + "    return\n"),
                f"made the failing test {name} return early instead of fixing the library")
    if kind == "half_fix" and pristine:
        start = bug["line"] - 1
        lines = original.splitlines(keepends=True)
        end = start + len(bug["fixed"].splitlines(keepends=True))
        if end >= len(lines) - 1:
            return None
        cut = rng.randint(end, len(lines) - 1)
        return (_call("create_file", path=path, content="".join(lines[:cut]), overwrite=True),
                f"rewrote {path} with the fix but only its first {cut} of {len(lines)} lines")
    if kind == "breaks_pass_to_pass" and pristine:
        breaker = task.get("breaker")
        if not breaker or original.count(breaker["fixed"]) != 1:
            return None
        return (_call("create_file", path=path, content=original.replace(breaker["fixed"], breaker["buggy"], 1),
                      overwrite=True),
                f"fixed the bug in {path} with a second change that breaks {breaker['breaks']}")
    if kind == "deleted_file" and path in ws.files:
        return (_call("run_command", command=f"rm {shlex.quote(path)}"), f"deleted {path}")
    return None


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True
