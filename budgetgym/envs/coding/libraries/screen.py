"""Screening candidate bugs cheaply: the library's suite collected once, each candidate run in a fork on the tests that reach it.

Where a suite run's time goes (measured on the eight pinned libraries, CPU seconds of one run):
starting Python and importing pytest 0.12-0.18, collecting (importing the library and its test
modules) 0.2-0.5, the tests 0.1-1.5; a single mutation is reached by a few of the suite's tests.
So a :class:`Screen` keeps one pytest process per worker (this module run as a script in a
scratch copy of the library) that collects the suite once, runs it once in a fork with a profiler
to learn which library code objects each test calls, and then answers each candidate in a fresh
fork: the candidate's files are written over the scratch copy (so a lazy import, a subprocess or
``inspect.getsource`` sees them), the live functions whose code changed get the candidate's code
(``function.__code__``, so every reference to them, imported names and decorators' wrappers
included, runs it), and only the tests that called a changed code object in the recording run
are run. The fork starts from the collected session, so nothing a test does leaks into the next
candidate.

A screen is only a filter: a candidate it reports ``"caught"`` is then run through the whole
suite in a fresh process (:func:`budgetgym.envs.coding.generate.run_suite`), and the keep rule and
the fail-to-pass / pass-to-pass lists come from that run alone, exactly as without screening. A
wrong screen can only lose a candidate (or waste a full run), never keep a wrong one. It answers
``"unknown"`` (the builder then runs the whole suite) where patching cannot give what a fresh
import gives: the changed code ran while the suite was collected (module and class bodies,
default values, decorators applied at import), the code objects no longer pair up (a nested
function or lambda added or removed), two code objects share a name and line, or a closure's
variables changed.
"""

from __future__ import annotations

import functools
import gc
import json
import linecache
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any, Iterable, Mapping

from budgetgym.envs.coding.repos import is_test_path
from budgetgym.envs.coding.testlog import PYTEST_ARGS, PYTEST_ENV

#: How long a screened candidate may run: this many seconds plus ``_SLOWDOWN`` times what its
#: tests took in the recording run (a mutation that loops forever is answered "missed").
_GRACE = 10.0
_SLOWDOWN = 10.0
_START_TIMEOUT = 600


class ScreenError(RuntimeError):
    """The screening process could not start, or died."""


class Screen:
    """One screening process over a scratch copy of a library (``files``: path -> text).

    :meth:`check` answers one candidate (its changed files) at a time; use one screen per worker
    thread. ``close`` (or the context manager) ends the process and removes the copy."""

    def __init__(self, files: Mapping[str, str], log_name: str = "screen") -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="budgetgym-screen-")
        self.root = Path(self._folder.name)
        for path, text in files.items():
            target = self.root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        self._log = open(self.root.parent / f"{self.root.name}.{log_name}.log", "w+b")
        reply_read, reply_write = os.pipe()
        env = {**os.environ, **PYTEST_ENV, "BUDGETGYM_SCREEN_FD": str(reply_write)}
        self._process = subprocess.Popen([sys.executable, "-m", __name__], cwd=self.root, env=env,
                                         stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT,
                                         pass_fds=(reply_write,))
        os.close(reply_write)
        self._replies = os.fdopen(reply_read, "r", encoding="utf-8")
        ready = self._reply(_START_TIMEOUT)
        #: node id -> status of the forked recording run, and how many tests reach each file
        self.statuses: dict[str, str] = ready["statuses"]
        self.recorded_s: float = ready["seconds"]

    def check(self, changed: Mapping[str, str]) -> dict[str, Any]:
        """``{"verdict": "caught" | "missed" | "unknown", "failing": [...], "ran": n, "why": text}``
        for the library with ``changed`` (path -> new text) put in."""
        self._process.stdin.write((json.dumps({"files": dict(changed)}) + "\n").encode())
        self._process.stdin.flush()
        return self._reply(None)

    def _reply(self, timeout: float | None) -> dict[str, Any]:
        ready, _, _ = select.select([self._replies], [], [], timeout)
        line = self._replies.readline() if ready else ""
        if not line:
            self.close()
            raise ScreenError(f"the screening process gave no answer: {self._tail()}")
        return json.loads(line)

    def _tail(self) -> str:
        try:
            self._log.seek(0)
            return self._log.read().decode("utf-8", "replace")[-2000:]
        except ValueError:
            return "(no log)"

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._replies.close()
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)
        self._folder.cleanup()

    def __enter__(self) -> "Screen":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- the screening process


@functools.lru_cache(maxsize=None)
def _real(filename: str) -> str:
    return os.path.realpath(filename)


def _key(code: types.CodeType) -> tuple[str, int, str]:
    return (_real(code.co_filename), code.co_firstlineno, code.co_qualname)


def _code_tree(code: types.CodeType) -> list[types.CodeType]:
    """The code object and every code object nested in it, depth first, in constant order."""
    found = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += _code_tree(const)
    return found


def _own(code: types.CodeType) -> tuple:
    """What a code object does, without its line numbers or what its nested code objects do."""
    consts = tuple(("<code>",) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)) for c in code.co_consts)
    return (code.co_code, consts, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
            code.co_flags, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            code.co_exceptiontable, code.co_qualname)


class _Server:
    """The pytest plugin that is the screening process (see the module docstring)."""

    def __init__(self, reply_fd: int) -> None:
        self.reply = os.fdopen(reply_fd, "w", encoding="utf-8")
        # pytest's capturing puts /dev/null on fd 0 and replaces sys.stdin: the requests keep their own fd
        self.requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
        self.root = os.path.realpath(os.getcwd())
        self.at_import: set[types.CodeType] = set()
        self.reports: dict[str, str] | None = None
        sys.setprofile(self._seen_at_import)

    def _seen_at_import(self, frame, event, arg) -> None:
        if event == "call":
            self.at_import.add(frame.f_code)

    def pytest_collection_finish(self, session) -> None:
        sys.setprofile(None)
        self.at_import = {_key(c) for c in self.at_import if self._library_file(c.co_filename)}

    @functools.lru_cache(maxsize=None)
    def _library_file(self, filename: str) -> bool:
        path = _real(filename)
        return path.startswith(self.root + os.sep) and not is_test_path(os.path.relpath(path, self.root))

    def pytest_runtest_logreport(self, report) -> None:
        if self.reports is None:
            return
        if report.when == "call":
            status = "PASSED" if report.passed else ("FAILED" if report.failed else "SKIPPED")
        elif report.failed:
            status = "ERROR"
        else:
            return
        if self.reports.get(report.nodeid) in (None, "PASSED"):
            self.reports[report.nodeid] = status

    def pytest_runtestloop(self, session) -> bool:
        self.items = list(session.items)
        self.by_id = {item.nodeid: item for item in self.items}
        started = time.monotonic()
        recorded = self._forked(self._record, self.items, None)
        if recorded is None:
            raise SystemExit("the recording run died")
        self.durations = recorded["durations"]
        self.reached: dict[tuple, set[str]] = {}
        for node, keys in recorded["codes"].items():
            for key in keys:
                self.reached.setdefault(tuple(key), set()).add(node)
        self._send({"statuses": recorded["statuses"], "seconds": round(time.monotonic() - started, 3)})
        for line in self.requests:
            request = json.loads(line)
            try:
                answer = self._check(request["files"])
            except Exception as err:  # a candidate the screen cannot handle is the full suite's to judge
                answer = {"verdict": "unknown", "failing": [], "ran": 0, "why": f"{type(err).__name__}: {err}"}
            self._send(answer)
        return True

    def _send(self, message: Mapping[str, Any]) -> None:
        self.reply.write(json.dumps(message) + "\n")
        self.reply.flush()

    # -- running tests in a fork

    def _run(self, items: list, seen: Any = None, first_failure: bool = False) -> dict[str, Any]:
        self.reports = {}
        codes: dict[str, list] = {}
        durations: dict[str, float] = {}
        hook = items[0].config.hook if items else None
        for index, item in enumerate(items):
            calls: set[types.CodeType] = set()
            if seen is not None:
                profiler = lambda frame, event, arg, calls=calls: calls.add(frame.f_code) if event == "call" else None  # noqa: E731
                sys.setprofile(profiler)
            began = time.monotonic()
            hook.pytest_runtest_protocol(item=item, nextitem=items[index + 1] if index + 1 < len(items) else None)
            durations[item.nodeid] = time.monotonic() - began
            if seen is not None:
                sys.setprofile(None)
                codes[item.nodeid] = sorted({_key(c) for c in calls if self._library_file(c.co_filename)})
            if first_failure and self.reports.get(item.nodeid, "PASSED") != "PASSED":
                break  # one failing test is all a screen needs; the full run finds the rest
        return {"statuses": self.reports, "durations": durations, "codes": codes}

    def _record(self, items: list, _: Any) -> dict[str, Any]:
        return self._run(items, seen=True)

    def _patched_run(self, items: list, patches: list) -> dict[str, Any]:
        for function, code in patches:
            function.__code__ = code
        linecache.clearcache()
        return self._run(items, first_failure=len(items) < len(self.items))

    def _forked(self, work, items: list, argument: Any, timeout: float | None = None) -> dict[str, Any] | None:
        """``work(items, argument)`` in a child process; None when it died or ran past ``timeout``."""
        out = tempfile.NamedTemporaryFile(prefix="budgetgym-screen-", suffix=".json", delete=False)
        out.close()
        pid = os.fork()
        if pid == 0:  # the child: its output goes nowhere, its result to the file
            code = 1
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                result = work(items, argument)
                Path(out.name).write_text(json.dumps(result), encoding="utf-8")
                code = 0
            finally:
                os._exit(code)
        handle = os.pidfd_open(pid)
        try:
            ready, _, _ = select.select([handle], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(handle)
        try:
            if ready and os.waitstatus_to_exitcode(status) == 0:
                return json.loads(Path(out.name).read_text(encoding="utf-8"))
            return None
        finally:
            os.unlink(out.name)

    # -- one candidate

    def _check(self, files: Mapping[str, str]) -> dict[str, Any]:
        new_codes: dict[tuple, types.CodeType] = {}
        changed: set[tuple] = set()
        for path, text in files.items():
            filename = os.path.join(self.root, path)
            old_tree = _code_tree(compile(Path(filename).read_text(encoding="utf-8"), filename, "exec", dont_inherit=True))
            new_tree = _code_tree(compile(text, filename, "exec", dont_inherit=True))
            if len(old_tree) != len(new_tree) or any(a.co_qualname != b.co_qualname for a, b in zip(old_tree, new_tree)):
                return _unknown(f"{path}: its code objects no longer pair up")
            keys = [_key(c) for c in old_tree]
            for old, new, key in zip(old_tree, new_tree, keys):
                if old == new:
                    continue
                if keys.count(key) > 1:
                    return _unknown(f"{path}: two code objects are {key[2]} at line {key[1]}")
                new_codes[key] = new
                if _own(old) != _own(new):
                    if key in self.at_import or old is old_tree[0]:
                        return _unknown(f"{path}: {key[2]} (line {key[1]}) ran while the suite was collected")
                    if old.co_freevars != new.co_freevars:
                        return _unknown(f"{path}: {key[2]} (line {key[1]}) closes over other variables")
                    changed.add(key)
        if not changed:
            return {"verdict": "missed", "failing": [], "ran": 0, "why": "no code changed"}
        selected = sorted(set().union(*(self.reached.get(k, set()) for k in changed)))
        if not selected:
            return {"verdict": "missed", "failing": [], "ran": 0, "why": "no test calls the changed code"}
        patches = [(f, new_codes[_key(f.__code__)]) for f in gc.get_objects()
                   if isinstance(f, types.FunctionType) and _key(f.__code__) in new_codes]
        items = [self.by_id[n] for n in selected if n in self.by_id]
        timeout = _GRACE + _SLOWDOWN * sum(self.durations.get(n, 0.0) for n in selected)
        originals = {p: Path(self.root, p).read_bytes() for p in files}
        try:
            for path, text in files.items():
                Path(self.root, path).write_text(text, encoding="utf-8")
            result = self._forked(self._patched_run, items, patches, timeout)
        finally:
            for path, data in originals.items():
                Path(self.root, path).write_bytes(data)
        if result is None:
            return {"verdict": "missed", "failing": [], "ran": len(items), "why": f"died or ran past {timeout:.0f} s"}
        failing = sorted(n for n in selected if result["statuses"].get(n, "PASSED") != "PASSED")
        caught = bool(failing) and (len(failing) < len(self.items))
        return {"verdict": "caught" if caught else "missed", "failing": failing, "ran": len(result["statuses"]), "why": ""}


def _unknown(why: str) -> dict[str, Any]:
    return {"verdict": "unknown", "failing": [], "ran": 0, "why": why}


def _serve() -> int:
    import pytest

    server = _Server(int(os.environ["BUDGETGYM_SCREEN_FD"]))
    return int(pytest.main([*PYTEST_ARGS, "tests"], plugins=[server]))


if __name__ == "__main__":
    raise SystemExit(_serve())
