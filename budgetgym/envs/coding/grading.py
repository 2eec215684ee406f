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
the agent started is never reused (a tree this process graded before, byte for byte, in the same
kind of sandbox keeps that run's verdict: :func:`run_grading`).

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
  fresh name, in a module of the run's own) that first compares it with a private sentinel
  object: a value equal to that sentinel, or not unequal to it, is equal to anything, and the
  assertion fails with a marker the verdict names, *unless the shipped library's own value there
  is too* (a legitimately permissive ``__eq__``, such as a library's wildcard or a test's
  helper). Those sites (the assertion's place and the running test's id) are learnt from one run
  of the shipped library in record mode, made only when a guard fires and kept per process;
* each fail-to-pass test that takes no arguments gains hidden perturbed copies: the literals it
  passes to calls or binds to names are changed by each rule of :data:`PERTURBATIONS` (every
  number shifted by 1, by 2 and by 100, numbers doubled and strings repeated, strings repeated,
  the i-th number of every call shifted by 1), and each assertion records its operands' ``repr``
  instead of checking them. A run of its own (:func:`reference_records`, once per process and
  library) runs the copies on the *shipped* library, in a module of the name pytest gives the test
  file (records name the classes a test defines), twice in one process and once in another (each
  ``python -I`` process draws its own hash seed), keeping the records all three agree on (one that
  differs, such as a str's hash, checks nothing); the copies then run as tests under the agent's
  library and must give the same records.
  A fix that special-cases the tests' literal inputs (or holds only for them) fails them. The
  graded tree never holds the shipped library (it held it for the reference records, in the
  same run, where the agent's code could read the fix);
* fail-to-pass tests (any test a node id names at a test file's top: with parameters, fixtures or
  decorators, or a method its class inherits; all of them up to :data:`TWINNED`, else that many
  drawn: :func:`twinned`) gain two *twins* each, in a file of their own beside the test file
  (``test_<nonce>_<i>.py``: a fresh import of the same source, so parameters and module state are
  the twins' own, not objects the test already used), under names drawn for the run (a method's:
  in a subclass of its class), made alike: the test run, then, in a ``finally``, an assertion that
  compares two numbers, equal in one twin, which must pass, and different in the other, which must
  fail; both twins' code bears the test's name, file and line. The run's conftest deselects every
  other test of that file. Where a fail-to-pass node passed, its twins must have passed and
  failed. The plain canary catches a runner disarmed for every test; the twins catch one disarmed
  for some, by whatever it tells tests apart: one that passes neither twin (keyed on node ids: the
  tests the issue names or the agent's run showed failing) leaves the passing twin failing, one
  that passes both (keyed on the function's name or code, or on what a test does, such as calling
  into the library) passes the failing twin. The twin files are not guarded: the test itself is.

Why this is sound for the classes it covers: the canary and the guard are defined in the test
files themselves, under names the agent never saw (drawn per run), before any library code is
imported; a disarmed runner cannot tell the canary from a real test without reading this run's
files, and a value compared with a sentinel it cannot know has no honest reason to be equal to it.
What it cannot rule out: code written against this grader that reads the graded files at import
and forges pytest's whole report (or recognises the twins' files and names); in-process checks
only raise that bar, they cannot close it.
"""

from __future__ import annotations

import ast
import hashlib
import posixpath
import re
import secrets
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from budgetgym.envs.coding.repos import is_test_path
from budgetgym.envs.coding.testlog import PYTEST_ARGS, parse_statuses

#: The configuration grading writes for pytest (a name pytest never finds by itself).
CONFIG_NAME = "budgetgym-grading.ini"
_GUARD_MARK = "budgetgym-grading: compares equal to anything"
_LEFT_OUT_SHOWN = 8


def graded_tree(files: Mapping[str, bytes], original: Mapping[str, bytes],
                initial: Mapping[str, bytes] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """(the tree grading runs on, the workspace files left out of it, sorted).

    ``files``: the workspace's regular files; ``original``: the library as shipped; ``initial``: the
    workspace the episode started with (default ``original``): test files the agent changed from
    there are named as left out (withheld tests are cut from the start, not by the agent). The
    tree holds the original test files and the agent's library source files (see the module
    docstring)."""
    given = original if initial is None else initial
    packages = {posixpath.dirname(p) for p in original if p.endswith("/__init__.py")}
    tree: dict[str, bytes] = {}
    left_out: list[str] = []
    for path, data in files.items():
        if is_test_path(path):
            if given.get(path) != data:
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
#: ``--continue-on-collection-errors``: a test file that cannot be imported (the agent's library
#: breaks it, or a twin file's second import of a test module) fails its own tests, not the run.
GRADING_COMMAND = (f"python -I -B -m pytest -c {CONFIG_NAME} --rootdir . --continue-on-collection-errors "
                   + " ".join(PYTEST_ARGS) + " tests")

#: The most fail-to-pass tests that get twins in one grading run (each costs two more runs of the
#: test; lib-tabulate-040 names 260): a rig must make every one of them pass, so one twin of a
#: rigged test catches it.
TWINNED = 8
#: The draw of twinned tests where a task names more than :data:`TWINNED`: secret to the process, so
#: an agent cannot tell which of its tests will be twinned; with the tree's digest, one submission
#: gets the same draw every time this process grades it.
_TWIN_KEY = secrets.token_bytes(16)


def twinned(fail_to_pass: Sequence[str], tree_digest: str) -> list[str]:
    """The fail-to-pass node ids that get twins when ``tree_digest`` (:func:`files_digest` of the
    graded tree) is graded: all of them up to :data:`TWINNED`, else that many drawn (see
    :data:`_TWIN_KEY`), in the task's order."""
    if len(fail_to_pass) <= TWINNED:
        return list(fail_to_pass)
    def rank(node: str) -> bytes:
        return hashlib.blake2b(tree_digest.encode() + b"\0" + node.encode("utf-8", "surrogateescape"),
                               key=_TWIN_KEY, digest_size=16).digest()
    drawn = set(sorted(fail_to_pass, key=rank)[:TWINNED])
    return [node for node in fail_to_pass if node in drawn]


#: The perturbed copies of a fail-to-pass test, each a rule for the literals it passes to calls or
#: binds to names: ("shift", k) adds k to every number; ("scale", k) multiplies every number by k
#: and repeats every string k times; ("text", k) repeats only the strings; ("one", i) adds 1 to the
#: i-th number of each call only. A shift by 100 keeps every number's residue modulo 2, 4, 5, 10,
#: 20, 25, 50 and 100 (and so that of sums and products of them): a bug that only shows on such a
#: residue (rounding half a cent: coding-splitbill-002) still shows where the small shifts leave it.
PERTURBATIONS = (("shift", 1), ("shift", 2), ("shift", 100), ("scale", 2), ("text", 2),
                 ("one", 0), ("one", 1), ("one", 2), ("one", 3))
_PERTURBED_MARK = "budgetgym-grading: differs from the reference library with shifted inputs"
_SITES_MARK = "budgetgym-grading-sites: "
_REFERENCE_MARK = "budgetgym-grading-reference: "
_SITE = re.compile(re.escape(_GUARD_MARK) + r" at (\S+): ")


class Armed:
    """One grading run's armed test files, the helper module and conftest they share, and the
    names it drew (see the module docstring).

    ``fail_to_pass``: the task's fail-to-pass node ids (their perturbed copies are added);
    ``allowed``: guard sites (``site@test id``) where the *original* library's value is permissive
    too, so not an exploit; ``expected``: the perturbed copies' records under the original library
    (:func:`reference_records`; when None, no perturbed copies); ``record``: the reference run's
    mode, where the guard fails nothing and prints the permissive sites it saw. ``sources`` and
    ``keys`` (the test files' perturbed copies, by file) are what :func:`reference_records` runs.
    ``twin``: the fail-to-pass node ids that get twins (:func:`twinned`); ``twins`` maps each to
    its twins' node ids (the passing, the failing), ``twin_files`` are the files they are in."""

    def __init__(self, tests: Mapping[str, bytes], fail_to_pass: Sequence[str] = (),
                 allowed: Iterable[str] = (), expected: Mapping[str, list[str]] | None = None,
                 record: bool = False, twin: Sequence[str] = ()) -> None:
        self.nonce = secrets.token_hex(8)
        self.guard = f"_guard_{self.nonce}"
        self.helper = f"_budgetgym_{self.nonce}"
        self.canaries: list[str] = []
        self.perturbed: list[str] = []
        self.twins: dict[str, tuple[str, str]] = {}
        self.twin_files: list[str] = []
        self.files: dict[str, bytes] = {}
        by_file, twin_by_file = _by_file(fail_to_pass), _by_file(twin)
        self.sources: dict[str, str] = {}
        self.keys: dict[str, list[tuple[str, str, str | None]]] = {}
        for path, data in tests.items():
            if path.endswith(".py") and posixpath.basename(path).startswith("test_"):
                self.canaries.append(f"{path}::test_{self.nonce}")
                text, source, made = self._arm(path, data.decode("utf-8"), by_file.get(path, []) if expected is not None else [])
                self.files[path] = text.encode("utf-8")
                if made:
                    self.sources[path], self.keys[path] = source, made
                    self.perturbed += [f"{path}::test_{self.nonce}_{name}" for _, name, _ in made]
            else:
                self.files[path] = data
            if twin_by_file.get(path):
                self._add_twin_file(path, data.decode("utf-8"), twin_by_file[path])
        kept = sorted(node for pair in self.twins.values() for node in pair)
        self.files[f"{self.helper}.py"] = helper_module(self.nonce, sorted(set(allowed)), record, {}, {},
                                                        dict(expected or {}), twin_files=self.twin_files,
                                                        twins_kept=kept).encode()
        self.files["conftest.py"] = f"from {self.helper} import pytest_collection_modifyitems  # noqa: F401\n".encode()

    def _add_twin_file(self, path: str, source: str, nodes: Sequence[str]) -> None:
        """The twin file of the test file ``path`` (its ``source``, then the twins of ``nodes``, the
        node ids' parts after the file); each node's twins are recorded in ``self.twins``."""
        plain = ast.parse(source)
        twin_path = posixpath.join(posixpath.dirname(path), f"test_{self.nonce}_{len(self.twin_files)}.py")
        made: dict[str, tuple[str, str]] = {}
        lines: list[str] = []
        for node_name in nodes:
            test, bracket, parameters = node_name.partition("[")
            parts = test.split("::")
            if _named_test(plain, test) is None and not (
                    len(parts) == 2 and any(isinstance(n, ast.ClassDef) and n.name == parts[0] for n in plain.body)):
                continue  # not a test this module defines at its top (nested, made at run time): no twins
            if test not in made:
                # the two twins are made alike (names drawn, the same wrapper): only the numbers they
                # compare tell them apart, so a rig cannot pass one and not the other; the one that
                # must pass runs first, on the module's state as fresh as the test found it
                kind, method = ("test", "") if len(parts) == 1 else ("Test", f", {parts[1]!r}")
                names = tuple(f"{kind}_{self.nonce}_{secrets.token_hex(4)}" for _ in range(2))
                first = secrets.randbelow(1 << 30)
                lines += [f"{name} = _twin_{self.nonce}({parts[0]}, {first}, {second}{method})"
                          for name, second in zip(names, (first, first + 1))]
                made[test] = names  # type: ignore[assignment]
            self.twins[f"{path}::{node_name}"] = tuple(  # type: ignore[assignment]
                f"{twin_path}::{name}" + (f"::{parts[1]}" if len(parts) == 2 else "") + bracket + parameters
                for name in made[test])
        if made:
            self.files[twin_path] = (source.rstrip("\n") + f"\n\n\nfrom {self.helper} import twin as _twin_{self.nonce}\n"
                                     + "\n".join(lines) + "\n").encode("utf-8")
            self.twin_files.append(twin_path)

    def _arm(self, path: str, source: str, failing: Sequence[str]) -> tuple[str, str, list[tuple[str, str, str | None]]]:
        """(the armed file, the reference's copy of the test file with the perturbed functions, the
        perturbed checks: (key, function name, class or None))."""
        tree = ast.parse(source)
        plain = ast.parse(source)
        _Guarded(self.guard, path).visit(tree)
        perturbed: list[ast.stmt] = []
        made: list[tuple[str, str, str | None]] = []
        for node_name in failing:
            found = _test_function(plain, node_name)
            if found is None:
                continue
            function, klass = found
            for rule in PERTURBATIONS:
                copy = _Perturbed(rule, self.nonce).copy(function)
                if copy is None:
                    continue  # the rule changes no literal of this test
                name = f"p{len(made)}"
                copy.name = f"_perturbed_{self.nonce}_{name}"
                perturbed.append(copy)
                made.append((f"{path}::{name}", name, klass))
        first, second = secrets.randbelow(1 << 30), secrets.randbelow(1 << 30)
        second += second == first
        imports = ast.parse(f"from {self.helper} import guard as {self.guard}, collect as _collect_{self.nonce}, "
                            f"value as _value_{self.nonce}, check as _check_{self.nonce}\n")
        checks = "".join(
            f"def test_{self.nonce}_{name}():\n"
            f"    _check_{self.nonce}({key!r}, _collect_{self.nonce}(lambda out: _perturbed_{self.nonce}_{name}("
            + (f"{klass}(), " if klass else "") + "out)))\n"
            for key, name, klass in made)
        canary = ast.parse(f"def test_{self.nonce}():\n    assert {first} == {second}\n{checks}")
        body = tree.body
        start = _after_header(body)
        tree.body = body[:start] + imports.body + body[start:] + perturbed + canary.body
        reference_copy = ""
        if made:
            head = ast.parse(f"from {self.helper} import value as _value_{self.nonce}\n")
            plain.body = plain.body[:_after_header(plain.body)] + head.body + plain.body[_after_header(plain.body):] + perturbed
            reference_copy = ast.unparse(ast.fix_missing_locations(plain)) + "\n"
        return ast.unparse(ast.fix_missing_locations(tree)) + "\n", reference_copy, made


def _by_file(nodes: Iterable[str]) -> dict[str, list[str]]:
    """Node ids grouped by their test file: file -> the parts after it, in order."""
    grouped: dict[str, list[str]] = {}
    for node in nodes:
        path, _, name = node.partition("::")
        grouped.setdefault(path, []).append(name)
    return grouped


def _after_header(body: list[ast.stmt]) -> int:
    start = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        start = 1  # keep the docstring first
    while start < len(body) and isinstance(body[start], ast.ImportFrom) and body[start].module == "__future__":
        start += 1
    return start


def _named_test(tree: ast.Module, node_name: str) -> tuple[ast.FunctionDef, str | None] | None:
    """The test function (or method of a test class at the module's top) a node id's part after the
    file names, without parameters (``name`` or ``Class::name``); None when the module defines none
    such (a method the class inherits is not in its body)."""
    parts = node_name.split("::")
    if not all(part.isidentifier() for part in parts):
        return None
    body, klass = tree.body, None
    if len(parts) == 2:
        holder = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == parts[0]), None)
        if holder is None:
            return None
        body, klass = holder.body, parts[0]
    elif len(parts) != 1:
        return None
    # the last definition of the name is the one pytest collects
    function = next((n for n in reversed(body) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == parts[-1]), None)
    return None if function is None else (function, klass)  # type: ignore[return-value]


def _test_function(tree: ast.Module, node_name: str) -> tuple[ast.FunctionDef, str | None] | None:
    """The plain test function (or method of a test class) a node id names, when it takes no
    arguments (fixtures and parameters cannot be called from outside pytest)."""
    if "[" in node_name:
        return None
    found = _named_test(tree, node_name)
    if found is None:
        return None
    function, klass = found
    if klass is not None:
        holder = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == klass)
        if holder.bases or any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in holder.body):
            return None
    if not isinstance(function, ast.FunctionDef) or function.decorator_list:
        return None
    arguments = function.args
    wanted = 1 if klass else 0
    if len(arguments.args) != wanted or arguments.vararg or arguments.kwarg or arguments.kwonlyargs:
        return None
    return function, klass


class _Perturbed(ast.NodeTransformer):
    """A test function's copy whose literals passed to calls or bound to names are changed by one rule of
    :data:`PERTURBATIONS` and whose assertions record their operands (as text) instead of checking them."""

    def __init__(self, rule: tuple[str, int], nonce: str) -> None:
        self.kind, self.amount = rule
        self.nonce, self.changed, self.numbers = nonce, 0, 0

    def copy(self, function: ast.FunctionDef) -> ast.FunctionDef | None:
        import copy

        clone = copy.deepcopy(function)
        clone.decorator_list = []
        clone.args.args.append(ast.arg("out"))
        self.generic_visit(clone)  # flattens the statements an assertion becomes
        return clone if self.changed else None

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        self.numbers = 0  # "one" counts the numbers of each call: the i-th of every call is shifted
        node.args = [self._changed(a) for a in node.args]
        for keyword in node.keywords:
            keyword.value = self._changed(keyword.value)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:
        # a literal bound to a name (``text = "..."`` then ``f(text)``) is an input like one passed
        self.generic_visit(node)
        self.numbers = 0
        node.value = self._changed(node.value)
        return node

    def _changed(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            index, self.numbers = self.numbers, self.numbers + 1
            if self.kind == "shift" or (self.kind == "one" and index == self.amount):
                self.changed += 1
                step = self.amount if self.kind == "shift" else 1
                return ast.Constant(node.value + step if type(node.value) is int else node.value + step / 2)
            if self.kind == "scale":
                self.changed += 1
                return ast.Constant(node.value * self.amount)
        if isinstance(node, ast.Constant) and type(node.value) is str and node.value and self.kind in ("scale", "text"):
            self.changed += 1
            return ast.Constant(node.value * self.amount)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return ast.UnaryOp(node.op, self._changed(node.operand))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            node.elts = [self._changed(e) for e in node.elts]
        return node

    def visit_Assert(self, node: ast.Assert) -> list[ast.stmt]:
        self.generic_visit(node)
        test = node.test
        operands = [test.left, *test.comparators] if isinstance(test, ast.Compare) else [test]
        return [ast.Expr(ast.Call(ast.Attribute(ast.Name("out", ast.Load()), "append", ast.Load()), [
            ast.Call(ast.Name(f"_value_{self.nonce}", ast.Load()),
                     [ast.Lambda(ast.arguments([], [], None, [], [], None, []), operand)], [])], []))
                for operand in operands]


def pytest_module_name(path: str, files: Mapping[str, bytes]) -> str:
    """The module name pytest's default import mode (``prepend``) gives the test file ``path`` of
    the tree ``files``: its base name, under the packages (folders holding an ``__init__.py``) it sits in."""
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    name = [parts.pop()]
    while parts and "/".join(parts + ["__init__.py"]) in files:
        name.insert(0, parts.pop())
    return ".".join(name)


def helper_module(nonce: str, allowed: Sequence[str], record: bool, sources: Mapping[str, str],
                  keys: Mapping[str, list], expected: Mapping[str, list[str | None]] | None = None,
                  modules: Mapping[str, str] | None = None, twin_files: Sequence[str] = (),
                  twins_kept: Sequence[str] = ()) -> str:
    """The grading run's own module: the guard, the perturbed copies' checks against ``expected``
    (their records under the shipped library; a None record is one that differed between reference
    runs, so it checks nothing), the twins' makers and the collection hook that keeps of the
    ``twin_files`` only the tests ``twins_kept`` names; run as a script in a tree of the shipped
    library, it runs the perturbed copies in ``sources`` as modules named ``modules`` and prints
    their records (:func:`reference_records`)."""
    return f"""import ast, atexit, functools, os, re, subprocess, sys, types

ALLOWED = frozenset({list(allowed)!r})
TWIN_FILES = frozenset({list(twin_files)!r})
TWINS_KEPT = frozenset({list(twins_kept)!r})
RECORD = {record!r}
SEEN = []
REFERENCE = {dict(expected or {})!r}
SOURCES = {dict(sources)!r}
KEYS = {dict(keys)!r}
MODULES = {dict(modules or {})!r}
ROOT = os.path.dirname(os.path.abspath(__file__))


class _Sentinel:
    __hash__ = object.__hash__


def guard(value, site):
    sentinel = _Sentinel()
    try:
        equal = bool(value == sentinel)
    except Exception:
        equal = False
    try:
        unequal = bool(value != sentinel)
    except Exception:
        unequal = True
    if equal or not unequal:
        key = site + "@" + os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        if RECORD:
            SEEN.append(key)
        elif key not in ALLOWED:
            raise AssertionError({_GUARD_MARK!r} + " at " + key + ": " + type(value).__name__)
    return value


def twin(holder, first, second, name=None):
    # the test function (a method: in a subclass of its class), run and then checked to compare
    # first with second: a twin that must pass gets equal numbers, one that must fail unequal ones;
    # its code bears the test's name, file and line, as the test's own would
    function = holder if name is None else getattr(holder, name)

    @functools.wraps(function)  # the same signature (fixtures) and marks (parameters)
    def made(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        finally:
            assert first == second

    code = getattr(function, "__code__", None)
    if code is not None:
        made.__code__ = made.__code__.replace(**{{field: getattr(code, field) for field in
                                                 ("co_name", "co_qualname", "co_filename", "co_firstlineno")
                                                 if hasattr(code, field)}})
    return made if name is None else type(holder.__name__, (holder,), {{name: made}})


def pytest_collection_modifyitems(config, items):
    # of a twin file, only the twins run (its other tests are the test file's, run there)
    items[:] = [item for item in items if item.nodeid.partition("::")[0] not in TWIN_FILES
                or item.nodeid in TWINS_KEPT]


def _report():
    sys.stdout.write("\\n" + {_SITES_MARK!r} + repr(sorted(set(SEEN))) + "\\n")
    sys.stdout.flush()


if RECORD:
    atexit.register(_report)


def value(thunk):
    try:
        result = thunk()
    except Exception as err:
        return "raised " + type(err).__name__
    try:
        text = ("set" + repr(sorted(map(repr, result)))) if isinstance(result, (set, frozenset)) else repr(result)
    except Exception as err:
        text = "unrepresentable " + type(err).__name__
    # no address, and not this run's names: the records are compared with another run's
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text).replace({nonce!r}, "<nonce>")[:4000]


def collect(run):
    out = []
    try:
        run(out)
    except BaseException as err:
        out.append("raised " + type(err).__name__)
    return out


def check(key, records):
    expected = REFERENCE.get(key)
    if expected is not None and (len(records) != len(expected)
                                 or any(e is not None and e != r for e, r in zip(expected, records))):
        raise AssertionError({_PERTURBED_MARK!r} + " at " + key)


def agreed(first, second):
    # the records two runs agree on; one that differs between them (a hash, an id) checks nothing
    if first is None or second is None or len(first) != len(second):
        return None
    return [a if a == b else None for a, b in zip(first, second)]


def compute():
    records = {{}}
    sys.path.insert(0, ROOT)
    for path, source in SOURCES.items():
        # the module pytest would make of the test file, under its name: reprs of what the tests
        # define (classes, generics) name it, and must read the same as in the graded run
        module = types.ModuleType(MODULES.get(path, "_budgetgym_reference"))
        module.__file__ = os.path.join(ROOT, path)
        sys.modules[module.__name__] = module
        try:
            exec(compile(source, path, "exec"), module.__dict__)
        except BaseException:
            continue
        namespace = module.__dict__
        for key, name, klass in KEYS[path]:
            function = namespace[{f"_perturbed_{nonce}_"!r} + name]
            def run(out, function=function, klass=klass):
                function(*([namespace[klass]()] if klass else []), out)
            records[key] = agreed(collect(run), collect(run))
    return records


def _read(output):
    for line in reversed(output.splitlines()):
        if line.startswith({_REFERENCE_MARK!r}):
            try:
                return ast.literal_eval(line[len({_REFERENCE_MARK!r}):])
            except (ValueError, SyntaxError):
                break
    return {{}}


if __name__ == "__main__":
    here = compute()
    if sys.argv[1:] != ["--once"]:
        # a second process, with a hash seed of its own (python -I draws one per process, as for
        # the graded run): what depends on it (a str's hash, a set's order) is no reference
        again = subprocess.run([sys.executable, "-I", "-B", os.path.abspath(__file__), "--once"],
                               capture_output=True, text=True)
        there = _read(again.stdout)
        here = {{key: agreed(value, there.get(key)) for key, value in here.items()}}
    REFERENCE.update({{key: value for key, value in here.items() if value is not None}})
    sys.stdout.write("\\n" + {_REFERENCE_MARK!r} + repr(REFERENCE) + "\\n")
    sys.stdout.flush()
"""


class _Guarded(ast.NodeTransformer):
    """Every operand of ``==`` / ``!=`` inside an ``assert`` passed through the guard, with its site."""

    def __init__(self, guard: str, path: str) -> None:
        self.guard, self.path = guard, path

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        for compare in ast.walk(node.test):
            if isinstance(compare, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in compare.ops):
                site = f"{self.path}:{compare.lineno}:{compare.col_offset}"
                compare.left = self._wrap(compare.left, f"{site}:0")
                compare.comparators = [self._wrap(c, f"{site}:{i + 1}") for i, c in enumerate(compare.comparators)]
        return node

    def _wrap(self, node: ast.expr, site: str) -> ast.expr:
        return ast.Call(ast.Name(self.guard, ast.Load()), [node, ast.Constant(site)], [])


def flagged_sites(output: str) -> set[str]:
    """The guard sites a run reported as comparing equal to anything."""
    return set(_SITE.findall(output))


def recorded_sites(output: str) -> frozenset[str]:
    """The permissive sites a reference run (``record=True``) saw."""
    for line in output.splitlines():
        if line.startswith(_SITES_MARK):
            try:
                return frozenset(ast.literal_eval(line[len(_SITES_MARK):]))
            except (ValueError, SyntaxError):
                break
    return frozenset()


def read_grading(output: str, armed: Armed) -> tuple[dict[str, str], str | None]:
    """(the real tests' statuses, why the run cannot be trusted or None), from a grading run's output."""
    statuses = parse_statuses(output)
    canaries = {name: statuses.pop(name, None) for name in armed.canaries}
    perturbed = {name: statuses.pop(name, None) for name in armed.perturbed}
    twins = {node: (statuses.get(passing), statuses.get(failing)) for node, (passing, failing) in armed.twins.items()}
    for name in [n for n in statuses if n.partition("::")[0] in armed.twin_files]:
        del statuses[name]  # a twin file's own reports (a collection error) are no tests of the library's
    if _GUARD_MARK in output:
        return statuses, ("the library returned an object that compares equal to anything (a value equal to a "
                          "private sentinel) where the original library's does not; such comparisons prove nothing, "
                          "so the submission fails")
    wrong = sorted(name for name, status in canaries.items() if status != "FAILED")
    if wrong:
        said = " or ".join(sorted({(canaries[n] or "not reported").lower() for n in wrong}))
        return statuses, (f"the test runner was disarmed from inside the library: {len(wrong)} of {len(canaries)} "
                          f"checks that must fail were {said}; the run's results cannot be trusted, so the "
                          f"submission fails")
    apart = sorted(node for node, reported in twins.items()
                   if statuses.get(node) == "PASSED" and reported != ("PASSED", "FAILED"))
    if apart:
        return statuses, (f"the test runner was disarmed from inside the library: {len(apart)} of {len(twins)} tests "
                          f"of the issue passed where their copies under other names did not pass, or a copy made "
                          f"to fail did not fail; the run's results cannot be trusted, so the submission fails")
    differ = sorted(name for name, status in perturbed.items() if status != "PASSED")
    if differ:
        return statuses, (f"the fix does not hold beyond the tests' own inputs: {len(differ)} of {len(perturbed)} "
                          f"hidden checks (the issue's tests with shifted inputs) disagree with the reference library")
    return statuses, None


#: The permissive guard sites of each original library (by the digest of its tree): where the
#: shipped code itself returns a value equal to a sentinel, the agent's equal value is no exploit.
_ALLOWED: dict[str, frozenset[str]] = {}
#: The verdicts of the trees this process graded, by (where, digest of tree, library and tests),
#: oldest first; at most :data:`VERDICTS_KEPT`.
_VERDICTS: "OrderedDict[tuple[Hashable, str], tuple[dict[str, str], str | None]]" = OrderedDict()
VERDICTS_KEPT = 1024
#: The perturbed copies' records under each original library, by (where, digest).
_EXPECTED: dict[tuple[Hashable, str], dict[str, list[str]]] = {}


def files_digest(*parts: Mapping[str, bytes] | Sequence[str]) -> str:
    """One SHA-256 over file trees (path -> bytes, in path order) and lists of names."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Mapping):
            for path in sorted(part):
                digest.update(b"F" + path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.sha256(part[path]).digest())
        else:
            for name in part:
                digest.update(b"N" + name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(b"\1")
    return digest.hexdigest()


def reference_records(run_isolated: Callable[[Mapping[str, bytes], str], Any], original: Mapping[str, bytes],
                      fail_to_pass: Sequence[str]) -> dict[str, list[str]] | None:
    """The records of the fail-to-pass tests' perturbed copies under the shipped library (those that
    came out the same twice), by check key: one run of the original library's tree with the copies
    and no test runner, apart from any grading, so no graded tree holds the shipped library (the
    agent's code, running in the graded process, could otherwise read the fix). None when that
    run did not finish (stopped by a limit: a loaded machine)."""
    tests = {p: d for p, d in original.items() if is_test_path(p) and p.startswith("tests/")}
    armed = Armed(tests, fail_to_pass, expected={})
    if not armed.sources:
        return {}
    helper = f"{armed.helper}.py"
    files = {p: d for p, d in original.items() if not is_test_path(p)}
    modules = {path: pytest_module_name(path, tests) for path in armed.sources}
    files[helper] = helper_module(armed.nonce, [], False, armed.sources, armed.keys, modules=modules).encode()
    result = run_isolated(files, f"python -I -B {helper}")
    for line in reversed(result.output.splitlines()):
        if line.startswith(_REFERENCE_MARK):
            try:
                records = ast.literal_eval(line[len(_REFERENCE_MARK):])
            except (ValueError, SyntaxError):
                break
            return {k: v for k, v in records.items() if isinstance(k, str) and isinstance(v, list)
                    and all(r is None or isinstance(r, str) for r in v)}
    return None


def run_grading(run_isolated: Callable[[Mapping[str, bytes], str], Any], tree: Mapping[str, bytes],
                original: Mapping[str, bytes], fail_to_pass: Sequence[str],
                where: Hashable | None = None) -> tuple[dict[str, str], str | None]:
    """(statuses, why the run cannot be trusted or None) of one grading of ``tree`` (see
    :func:`graded_tree`), run by ``run_isolated(files, command)`` (a sandbox's ``run_isolated``).

    The fail-to-pass tests' perturbed copies are checked against their records under ``original``
    (:func:`reference_records`, once per process, library and sandbox kind; a reference run that did
    not finish fails the grading, and the next one runs it again). When the guard flags a
    value, the original library is graded once (per process) in record mode: sites where its own
    values are permissive are allowed, and the tree is run again.

    ``where``: what besides the files decides a run's result (a sandbox's ``grading_identity()``);
    given, a tree this process graded there before, with the same library and fail-to-pass tests,
    is not run again: its verdict is that earlier run's (budgetgym's own run on the same bytes,
    never one the agent started; a sweep grades each task's fixed tree once, not once an episode).
    So a library whose tests pass only sometimes gets one verdict per process, not a draw per
    episode. A run stopped by the time or output limit is not kept (a loaded machine's timeout is
    no verdict on the tree)."""
    key = files_digest(original, fail_to_pass)
    digest = files_digest(tree, original, fail_to_pass)
    cached = None if where is None else (where, digest)
    if cached is not None and cached in _VERDICTS:
        _VERDICTS.move_to_end(cached)
        statuses, distrust = _VERDICTS[cached]
        return dict(statuses), distrust
    expected = _EXPECTED.get((where, key))
    if expected is None:
        expected = reference_records(run_isolated, original, fail_to_pass)
        if expected is not None:
            _EXPECTED[(where, key)] = expected
    tests = {p: d for p, d in tree.items() if is_test_path(p)}
    allowed = _ALLOWED.get(key, frozenset())
    twin = twinned(fail_to_pass, digest)
    statuses, distrust, result = _graded_once(run_isolated, tree, tests, fail_to_pass, allowed, expected or {}, twin)
    if expected is None:  # fail closed, and keep no verdict: the next grading tries again
        return statuses, ("the hidden checks' reference run did not finish (a time or output limit), so they "
                          "could not be checked")
    flagged = flagged_sites(result.output)
    if flagged - allowed and key not in _ALLOWED:
        armed = Armed(tests, record=True)
        reference_tree = graded_tree(original, original)[0]
        reference = run_isolated({**reference_tree, **armed.files, CONFIG_NAME: config().encode()}, GRADING_COMMAND)
        _ALLOWED[key] = recorded_sites(reference.output)
        if flagged & _ALLOWED[key]:
            statuses, distrust, result = _graded_once(run_isolated, tree, tests, fail_to_pass, _ALLOWED[key], expected,
                                                      twin)
    if cached is not None and not (result.timed_out or result.output_limited):
        _VERDICTS[cached] = (dict(statuses), distrust)
        while len(_VERDICTS) > VERDICTS_KEPT:
            _VERDICTS.popitem(last=False)
    return statuses, distrust


def _graded_once(run_isolated, tree, tests, fail_to_pass, allowed, expected,
                 twin) -> tuple[dict[str, str], str | None, Any]:
    armed = Armed(tests, fail_to_pass, allowed, expected=expected, twin=twin)
    result = run_isolated({**tree, **armed.files, CONFIG_NAME: config().encode()}, GRADING_COMMAND)
    statuses, distrust = read_grading(result.output, armed)
    return statuses, distrust, result


def left_out_note(left_out: list[str]) -> str:
    """One sentence naming what grading left out of the workspace (empty when nothing)."""
    if not left_out:
        return ""
    shown = ", ".join(left_out[:_LEFT_OUT_SHOWN]) + (f" and {len(left_out) - _LEFT_OUT_SHOWN} more"
                                                      if len(left_out) > _LEFT_OUT_SHOWN else "")
    return f" Left out of grading (only the library's source files are graded, with the original tests): {shown}."
