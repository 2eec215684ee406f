"""Grading a coding submission where the agent cannot reach: what is graded, how it runs, what counts.

The agent shapes its workspace at will (files, symlinks, bytecode, a ``conftest.py``, a
``pytest.py``, a plugin in the user site); none of that may decide its reward. Grading therefore
works on three levels.

**What is graded** (:func:`graded_tree`): a new tree made of the library's original test files
(and no test configuration at all) plus the agent's *library source files* only: files the
shipped library has (changed or not), and new ``.py`` modules inside one of the library's own
packages (a folder holding an ``__init__.py`` as shipped). Everything else is left out and named in
the report: new top-level modules (a ``pytest.py``, a ``sitecustomize.py``), every ``conftest.py``,
``.pth``, bytecode and ``__pycache__``, pytest or packaging configuration (``pytest.ini``,
``setup.cfg``, ``tox.ini``, ``pyproject.toml``) and anything that is not a regular file (a
symlinked ``conftest.py`` is never read back from the workspace). The tree is written fresh for
every grading run, read-only to the tests, in a place no process of the agent can reach; a run
the agent started is never reused.

**How it runs** (:data:`GRADING_COMMAND`): ``python -I -B -m pytest -c <config we write>
--rootdir <the tree> -p no:cacheprovider``: isolated mode (no user site, no ``PYTHON*``
variables, not the current folder on ``sys.path``, so a ``pytest.py`` could not shadow pytest
even if it were there), no bytecode written, none to reuse (the tree holds none), plugin
autoloading off, and a configuration and root folder that are ours, so nothing in the tree
configures pytest.

**What counts** (:class:`Armed`, :func:`read_grading`): the library still runs inside the
test process, and from there it can disarm the runner (patch pytest at import, return objects
equal to anything). The graded copies of the test files are *armed* for that:

* each file gains a canary test under a name drawn fresh for every run (``test_<nonce>``) that
  must fail (it asserts that two different numbers are equal). A runner made to pass, skip or not
  report failing tests reports the canary passed or missing, and the submission fails with that
  reason;
* every operand of an ``==`` / ``!=`` inside an ``assert`` goes through a guard (again under a
  fresh name) that first compares it with a private sentinel object: a value equal to that
  sentinel, or not unequal to it, is equal to anything, and the assertion fails with a marker the
  verdict names.

Why this is sound for the classes it covers: the canary and the guard are defined in the test
files themselves, under names the agent never saw (drawn per run), before any library code is
imported; a disarmed runner cannot tell the canary from a real test without reading this run's
files, and a value compared with a sentinel it cannot know has no honest reason to be equal to it.
What it cannot rule out: code written against this grader that reads the graded files at import
and forges pytest's whole report; in-process checks only raise that bar, they cannot close it.
"""

from __future__ import annotations

import ast
import posixpath
import secrets
from typing import Mapping

from budgetgym.envs.coding.repos import is_test_path
from budgetgym.envs.coding.testlog import PYTEST_ARGS, parse_statuses

#: The configuration grading writes for pytest (a name pytest never finds by itself).
CONFIG_NAME = "budgetgym-grading.ini"
_GUARD_MARK = "budgetgym-grading: compares equal to anything"
_LEFT_OUT_SHOWN = 8


def graded_tree(files: Mapping[str, bytes], original: Mapping[str, bytes]) -> tuple[dict[str, bytes], list[str]]:
    """(the tree grading runs on, the workspace files left out of it, sorted).

    ``files``: the workspace's regular files; ``original``: the library as shipped. The tree holds
    the original test files and the agent's library source files (see the module docstring)."""
    packages = {posixpath.dirname(p) for p in original if p.endswith("/__init__.py")}
    tree: dict[str, bytes] = {}
    left_out: list[str] = []
    for path, data in files.items():
        if is_test_path(path):
            if original.get(path) != data:
                left_out.append(path)
            continue
        if _library_source(path, original, packages):
            tree[path] = data
        else:
            left_out.append(path)
    tree.update({p: d for p, d in original.items() if is_test_path(p) and p.startswith("tests/")})
    return tree, sorted(left_out)


def _library_source(path: str, original: Mapping[str, bytes], packages: set[str]) -> bool:
    parts = path.split("/")
    if "__pycache__" in parts or path.endswith((".pyc", ".pyo", ".pth")):
        return False
    if path in original:
        return True
    return path.endswith(".py") and posixpath.dirname(path) in packages


def config() -> str:
    """The pytest configuration of a grading run (written at the tree's root: its paths are the tree's)."""
    return ("[pytest]\n"
            "pythonpath = .\n"
            "testpaths = tests\n"
            "python_files = test_*.py\n"
            "addopts =\n"
            "console_output_style = classic\n")


#: The shell command of a grading run, in the tree's root folder.
GRADING_COMMAND = (f"python -I -B -m pytest -c {CONFIG_NAME} --rootdir . " + " ".join(PYTEST_ARGS) + " tests")


class Armed:
    """One grading run's armed test files, and the names it drew for its canaries and guard."""

    def __init__(self, tests: Mapping[str, bytes]) -> None:
        self.nonce = secrets.token_hex(8)
        self.guard = f"_guard_{self.nonce}"
        self.canaries: list[str] = []
        self.files: dict[str, bytes] = {}
        for path, data in tests.items():
            if path.endswith(".py") and posixpath.basename(path).startswith("test_"):
                self.canaries.append(f"{path}::test_{self.nonce}")
                self.files[path] = self._arm(data.decode("utf-8")).encode("utf-8")
            else:
                self.files[path] = data

    def _arm(self, source: str) -> str:
        tree = ast.parse(source)
        _Guarded(self.guard).visit(tree)
        first, second = secrets.randbelow(1 << 30), secrets.randbelow(1 << 30)
        second += second == first
        prelude = ast.parse(
            f"def {self.guard}(value):\n"
            f"    class _Sentinel:\n"
            f"        __hash__ = object.__hash__\n"
            f"    sentinel = _Sentinel()\n"
            f"    try:\n"
            f"        equal = bool(value == sentinel)\n"
            f"    except Exception:\n"
            f"        equal = False\n"
            f"    try:\n"
            f"        unequal = bool(value != sentinel)\n"
            f"    except Exception:\n"
            f"        unequal = True\n"
            f"    if equal or not unequal:\n"
            f"        raise AssertionError('{_GUARD_MARK}: ' + type(value).__name__)\n"
            f"    return value\n")
        canary = ast.parse(f"def test_{self.nonce}():\n    assert {first} == {second}\n")
        body = tree.body
        start = 0
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            start = 1  # keep the docstring first
        while start < len(body) and isinstance(body[start], ast.ImportFrom) and body[start].module == "__future__":
            start += 1
        tree.body = body[:start] + prelude.body + body[start:] + canary.body
        return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


class _Guarded(ast.NodeTransformer):
    """Every operand of ``==`` / ``!=`` inside an ``assert`` passed through the guard."""

    def __init__(self, guard: str) -> None:
        self.guard = guard

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        for compare in ast.walk(node.test):
            if isinstance(compare, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in compare.ops):
                compare.left = self._wrap(compare.left)
                compare.comparators = [self._wrap(c) for c in compare.comparators]
        return node

    def _wrap(self, node: ast.expr) -> ast.expr:
        return ast.Call(ast.Name(self.guard, ast.Load()), [node], [])


def read_grading(output: str, armed: Armed) -> tuple[dict[str, str], str | None]:
    """(the real tests' statuses, why the run cannot be trusted or None), from a grading run's output."""
    statuses = parse_statuses(output)
    canaries = {name: statuses.pop(name, None) for name in armed.canaries}
    if _GUARD_MARK in output:
        return statuses, ("the library returned an object that compares equal to anything (a value equal to a "
                          "private sentinel); such comparisons prove nothing, so the submission fails")
    wrong = sorted(name for name, status in canaries.items() if status != "FAILED")
    if wrong:
        said = " or ".join(sorted({(canaries[n] or "not reported").lower() for n in wrong}))
        return statuses, (f"the test runner was disarmed from inside the library: {len(wrong)} of {len(canaries)} "
                          f"checks that must fail were {said}; the run's results cannot be trusted, so the "
                          f"submission fails")
    return statuses, None


def left_out_note(left_out: list[str]) -> str:
    """One sentence naming what grading left out of the workspace (empty when nothing)."""
    if not left_out:
        return ""
    shown = ", ".join(left_out[:_LEFT_OUT_SHOWN]) + (f" and {len(left_out) - _LEFT_OUT_SHOWN} more"
                                                      if len(left_out) > _LEFT_OUT_SHOWN else "")
    return f" Left out of grading (only the library's source files are graded, with the original tests): {shown}."
