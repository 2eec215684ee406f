"""One episode's repository: the sandbox, the task's tests and what the agent has done so far.

The tools call into this object. :class:`SandboxWorkspace` is their file access with its path
checks, shared with SWEBench-v0's workspace; :class:`Workspace` is Coding-v0's episode on top of it.
Coding-v0's keeps a mirror of the workspace's files after every action (read back from the
sandbox), which the snapshot's fast path, the oracle and ``search`` use, and the facts the oracle's
plan needs (searched, viewed, tests run since the last change).

Grading never trusts the workspace: the agent's library source files and fresh copies of the
library's original tests are laid out in a separate, read-only tree and run by an isolated
interpreter with our own pytest configuration, with checks that the runner was not disarmed from
inside the library (:mod:`budgetgym.envs.coding.grading`). ``run_tests`` shows the workspace's own
run and measures progress on that grading tree; a run the agent started is never reused.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from typing import Any, Mapping

from budgetgym.core import ToolError
from budgetgym.envs.coding.sandbox import Sandbox, SandboxPathError
from budgetgym.envs.coding.sandbox.base import relative_path, text_problem
from budgetgym.envs.coding.grading import graded_tree, left_out_note, run_grading
from budgetgym.envs.coding.testlog import PYTEST_ARGS, passing

TEST_COMMAND = "python -m pytest " + " ".join(PYTEST_ARGS) + " tests"
_DURATION = re.compile(r"(\b\d+ (?:passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?)\b[^\n]*?) in "
                       r"\d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def normalise(text: str) -> str:
    """Output without what differs run to run (durations, object addresses): same actions, same text."""
    return _ADDRESS.sub(" at 0x?", _DURATION.sub(r"\1", text))


class SandboxWorkspace(ABC):
    """The file tools' view of a sandbox's workspace, for every env that plays in one (Coding-v0,
    SWEBench-v0): each path is checked before the sandbox sees it (no escape from the workspace:
    :func:`relative_path`), then by the sandbox itself (symlinks resolved inside the workspace, the
    file size limit, folders refused), and every refusal is a :class:`ToolError` for the agent.
    A successful write calls :meth:`_written`, where a subclass keeps its own view current."""

    def __init__(self, sandbox: Sandbox, output_limit: int) -> None:
        self.sandbox = sandbox
        self.output_limit = output_limit
        self.verdict: tuple[bool, str] | None = None  # set by submit: (solved, report)
        self.progress: float | None = None            # set by a tool that measures progress

    def _rel(self, path: str) -> str:
        try:
            return relative_path(path, self.sandbox.workdir)
        except SandboxPathError as err:
            raise ToolError(str(err)) from None

    @staticmethod
    def checked_text(text: str, what: str) -> str:
        """``text`` when a shell or a file can take it (no NUL, no lone surrogate), else a ToolError."""
        problem = text_problem(text, what)
        if problem:
            raise ToolError(problem)
        return text

    def read_text(self, path: str) -> str:
        self._rel(path)
        try:
            return self.sandbox.read_text(path)
        except FileNotFoundError:
            raise ToolError(f"{path}: no such file") from None
        except SandboxPathError as err:
            raise ToolError(str(err)) from None
        except OSError as err:
            raise ToolError(_os_error(path, err)) from None

    def exists(self, path: str) -> bool:
        self._rel(path)
        try:
            self.sandbox.read_bytes(path)
        except FileNotFoundError:
            return False
        except SandboxPathError as err:
            if "is not a file" in str(err) or "folder" in str(err):
                raise ToolError(f"{path} is a folder") from None
            raise ToolError(str(err)) from None
        except OSError as err:
            raise ToolError(_os_error(path, err)) from None
        return True

    def write_text(self, path: str, text: str) -> None:
        self._rel(path)
        data = self.checked_text(text, "content").encode("utf-8")
        try:
            self.sandbox.write_bytes(path, data)
        except SandboxPathError as err:
            raise ToolError(str(err)) from None
        except OSError as err:
            raise ToolError(_os_error(path, err)) from None
        self._written()

    @abstractmethod
    def _written(self) -> None:
        """What follows a successful write (the subclass's own bookkeeping)."""


def fixed_share(statuses: Mapping[str, str], distrust: str | None, fail_to_pass: list[str]) -> float:
    """``info["progress"]``: the share of the fail-to-pass tests a grading run saw pass; 0 when the
    run cannot be trusted (a runner disarmed from inside the library, values equal to anything, a
    fix that holds only for the tests' own inputs): its statuses prove nothing, and a rig that makes
    them say passed would otherwise earn the whole progress return without a fix."""
    if distrust is not None:
        return 0.0
    return passing(statuses, fail_to_pass) / len(fail_to_pass)


def _os_error(path: str, err: OSError) -> str:
    """An OS error of a file tool as the agent sees it: the workspace path and the reason, never
    the host's folder (``err.filename`` is not shown)."""
    reason = os.strerror(err.errno) if err.errno else err.__class__.__name__
    return f"{path}: {reason.lower()}; nothing changed"


class Workspace(SandboxWorkspace):
    """Coding-v0's episode: the workspace with its mirror, the oracle's facts and the grading."""

    def __init__(self, sandbox: Sandbox, task: Mapping[str, Any], initial: Mapping[str, bytes],
                 original: Mapping[str, bytes], output_limit: int) -> None:
        super().__init__(sandbox, output_limit)
        self.task = task
        self.initial = dict(initial)      # the repository the episode starts with (bug in)
        self.original = dict(original)    # the library as shipped (bug out): the oracle's target
        self.files: dict[str, bytes] = dict(initial)
        self.searched = self.viewed = self.tested = False
        self._graded: tuple[dict[str, bytes], dict[str, str], str | None] | None = None
        self.measured = 0.0  # the progress the last test run measured (kept in the state)
        #: SWE-bench mode: the fail-to-pass tests are not in the workspace, and only grading runs them.
        self.withheld = task.get("tests") == "withheld"

    # ------------------------------------------------------------------ files, for the tools

    def read_text(self, path: str) -> str:
        text = super().read_text(path)
        if self._rel(path) == self.task["bug"]["path"]:
            self.viewed = True
        return text

    def _written(self) -> None:
        self.sync()

    def search(self, query: str, path: str, limit: int) -> list[tuple[str, int, str]]:
        """(path, line number, line) of the lines that contain ``query``, in the files under ``path``."""
        rel = self._rel(path)
        texts = {}
        for name, data in self.files.items():
            if rel in (".", name) or name.startswith(rel.rstrip("/") + "/"):
                try:
                    texts[name] = data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
        if not texts:
            raise ToolError(f"no text files under {path}")
        if self.task["bug"]["path"] in texts and self.task["locate"]["query"] in query:
            self.searched = True
        found = []
        for name, text in texts.items():
            for number, line in enumerate(text.splitlines(), 1):
                if query in line:
                    found.append((name, number, line))
                    if len(found) >= limit:
                        return found
        return found

    def sync(self) -> bool:
        """Read the workspace back; True when its files changed (and the tests must be run again)."""
        files = self.sandbox.files()
        changed = files != self.files
        self.files = files
        if changed:
            self.tested = False
        return changed

    # ------------------------------------------------------------------ commands

    def run_command(self, command: str, timeout: int) -> str:
        result = self.sandbox.run(self.checked_text(command, "command"), timeout=timeout)
        self.sync()
        return normalise(result.shown(self.output_limit))

    def run_tests(self) -> str:
        """The workspace's own test run, shown to the agent; the progress it reports is measured on
        the grading tree (the workspace's run proves nothing: its tree and runner are the agent's)."""
        result = self.sandbox.run(TEST_COMMAND)
        self.sync()
        if not self.withheld:  # withheld tests say nothing before the submission (SWE-bench)
            self.measure()
        self.tested = True
        return normalise(result.shown(self.output_limit))

    def grade_run(self) -> tuple[dict[str, str], str | None, list[str]]:
        """(statuses, why the run cannot be trusted or None, what was left out) of a grading run on
        the workspace's files as they are now (see :mod:`budgetgym.envs.coding.grading`). The last
        grading run is remembered with the tree it ran on: it is budgetgym's own run on a fresh
        copy, so an unchanged tree is not graded twice (nor, across episodes, a tree this process
        graded before in the same kind of sandbox: :func:`run_grading`)."""
        tree, left_out = graded_tree(self.files, self.original, self.initial)
        if self._graded is not None and self._graded[0] == tree:
            return self._graded[1], self._graded[2], left_out
        statuses, distrust = run_grading(self.sandbox.run_isolated, tree, self.original, self.task["fail_to_pass"],
                                         where=self.sandbox.grading_identity())
        self._graded = (tree, statuses, distrust)
        return statuses, distrust, left_out

    def grading_files(self) -> dict[str, bytes]:
        """The tree grading runs on: the agent's library source files with the original tests."""
        return graded_tree(self.files, self.original, self.initial)[0]

    def measure(self) -> None:
        """Measure progress on the repository as it is now (a grading run, kept for the same tree;
        no verdict): at a test run, and on the last turn, so that an episode's progress return is
        its last state's even where a fix was undone after the tests ran."""
        statuses, distrust, _ = self.grade_run()
        self.progress = self.measured = fixed_share(statuses, distrust, self.task["fail_to_pass"])

    def grade(self) -> tuple[bool, str]:
        statuses, distrust, left_out = self.grade_run()
        f2p, p2p = self.task["fail_to_pass"], self.task["pass_to_pass"]
        fixed, kept = passing(statuses, f2p), passing(statuses, p2p)
        # Measured in both modes: the last test run's measure may be stale (a fix undone after it),
        # and withheld tests are measured here first.
        self.progress = self.measured = fixed_share(statuses, distrust, f2p)
        solved = fixed == len(f2p) and kept == len(p2p) and distrust is None
        report = (f"Hidden tests on fresh copies of the test files: {fixed} of {len(f2p)} tests of the issue pass, "
                  f"{kept} of {len(p2p)} other tests still pass."
                  + left_out_note(left_out)
                  + (f" Failed: {distrust}." if distrust else "")
                  + (" The issue is resolved." if solved else " The issue is not resolved."))
        return solved, report

    def submit(self) -> str:
        # The instructions' own order made a rule: a submission is of a repository whose tests the
        # agent ran as it is now. Without it, "1x" would count a turn the rules do not ask for.
        if not self.tested:
            raise ToolError("run_tests first: the files changed since the tests last ran (or they never ran), and a "
                            "submission is of a repository whose tests you ran as it is now. Nothing was submitted.")
        self.verdict = self.grade()
        return "Submitted. " + self.verdict[1]

    # ------------------------------------------------------------------ state

    def state(self) -> dict[str, Any]:
        """The file changes against the episode's start, and the oracle's facts (JSON)."""
        changed = {p: d for p, d in self.files.items() if self.initial.get(p) != d}
        text, binary = {}, {}
        for path, data in changed.items():
            try:
                text[path] = data.decode("utf-8")
            except UnicodeDecodeError:
                binary[path] = data.hex()
        return {
            "files": dict(sorted(text.items())),
            "binary": dict(sorted(binary.items())),
            "deleted": sorted(p for p in self.initial if p not in self.files),
            "searched": self.searched, "viewed": self.viewed, "tested": self.tested,
            "progress": self.measured, "verdict": None if self.verdict is None else self.verdict[0],
            "file_count": len(self.files),
        }

    @staticmethod
    def files_from_state(initial: Mapping[str, bytes], state: Mapping[str, Any]) -> dict[str, bytes]:
        """The workspace a state describes; raises ValueError for anything malformed (before any change)."""
        required = {"files", "binary", "deleted", "searched", "viewed", "tested"}
        if not isinstance(state, Mapping) or not required <= set(state) <= required | {"progress", "verdict", "file_count"}:
            raise ValueError("the coding state needs files, binary, deleted, searched, viewed, tested "
                             "(and optionally progress, verdict, file_count), nothing else")
        progress = state.get("progress", 0.0)
        if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not 0.0 <= progress <= 1.0:
            raise ValueError("progress must be a number in [0, 1]")
        if state.get("verdict") not in (None, True, False):
            raise ValueError("verdict must be null or a boolean")
        if not all(isinstance(state[k], bool) for k in ("searched", "viewed", "tested")):
            raise ValueError("searched, viewed and tested must be booleans")
        files, binary, deleted = state["files"], state["binary"], state["deleted"]
        if not isinstance(files, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            raise ValueError("files must map paths to text")
        if not isinstance(binary, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in binary.items()):
            raise ValueError("binary must map paths to hex text")
        if not isinstance(deleted, list) or not all(isinstance(p, str) and p in initial for p in deleted):
            raise ValueError("deleted must list files of the task's repository")
        result = {p: d for p, d in initial.items() if p not in set(deleted)}
        for path, content in files.items():
            result[_checked(path)] = content.encode("utf-8")
        for path, content in binary.items():
            try:
                result[_checked(path)] = bytes.fromhex(content)
            except ValueError:
                raise ValueError(f"binary content of {path} is not hex") from None
        count = state.get("file_count", len(result))
        if isinstance(count, bool) or not isinstance(count, int) or count != len(result):
            raise ValueError(f"file_count {count!r} does not match the {len(result)} files the state describes")
        return result


def _checked(path: str) -> str:
    rel = relative_path(path)
    if rel != path or rel == ".":
        raise ValueError(f"{path!r} is not a normalised workspace path")
    return rel
