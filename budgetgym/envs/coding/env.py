"""Coding-v0: fix a bug in a small Python library from an issue report, in a sandbox.

Description:
    The agent gets an issue (a user's report of a failing behaviour, the symptom, never the fix)
    and a repository: one of eight small, real Python libraries shipped with budgetgym (intervals,
    Roman numerals, stock keeping, calendar arithmetic, matrices, text statistics, bill
    splitting, graphs), each with its pytest suite, into which one bug was injected by a seeded
    mutation (a flipped comparison, an off-by-one, a swapped operator, a wrong default, a dropped
    branch, ...) that at least one test catches. The agent reads, searches and edits the code, runs
    commands and the tests, and submits. The work happens in a sandbox: ``backend="local"`` (the
    default: a private copy under bubblewrap) or ``backend="docker"`` (a container per episode).

Action Space:
    Text (``UnicodeText``): one tool call a turn (``max_calls_per_turn = 1``: a second is an invalid
    action, since each call depends on what the last one showed), in any form of the shared parser (a JSON
    object ``{"name": ..., "arguments": {...}}`` or a list of them, ``<tool_call>`` blocks, or call
    syntax). Tools: ``run_command(command, timeout?)``, ``view_file(path, start_line?, end_line?)``,
    ``search(query, path?)``, ``replace_in_file(path, old, new)`` (old must occur exactly once),
    ``create_file(path, content, overwrite?)``, ``run_tests()``, ``submit()``. ``submit`` takes a
    repository whose tests the agent ran as it is (the instructions' order, made a rule: an
    untested submission is refused and changes nothing, so the oracle's test run is a turn the
    rules require, not one a confident agent could save). A malformed call, a
    path outside the workspace, an edit whose target is absent or not unique, or a command past its
    time limit costs the turn, says what was wrong and changes nothing else.

Observation Space:
    Text. At reset: the issue and the repository's file list. After a turn: each tool's result (a
    command's output, cut to ``output_limit`` characters with head and tail kept, and its exit
    code or why it was stopped; numbered file lines; matches; the test report).

Rewards:
    ``reward_mode="sparse"``: 1.0 on the step that submits a solution, else 0.0. A submission is
    graded SWE-bench style: the task's fail-to-pass tests (those the bug breaks) and pass-to-pass
    tests (the rest of the suite) run on fresh copies of the library's original test files laid
    over the agent's source files, in a read-only copy no process of the agent can reach; all must
    pass. Hidden extra checks, in both test modes: each fail-to-pass test that takes no arguments
    is also run with the literals it passes to the library (or binds to names) changed by each
    rule of ``grading.PERTURBATIONS`` (numbers shifted by 1, 2 and 100, doubled, strings repeated,
    one number of each call shifted), and its compared values must be what the shipped library
    gives there (so special-casing the tests' literal inputs fails); values equal to anything fail the submission unless the shipped
    library's own value at that check is too (:mod:`budgetgym.envs.coding.grading`).
    ``reward_mode="progress"``: the change in ``info["progress"]``, the share of fail-to-pass
    tests that pass, measured when the agent runs the tests (on fresh test copies whenever the
    workspace's tests were edited; 0 when that run's checks say it cannot be trusted), at the
    submission and on the episode's last turn (so an episode's return is its last state's, whatever
    a test run measured before), never on other steps; with ``tests="withheld"`` only at those two
    (the withheld tests say nothing before).

Termination:
    ``terminated`` on ``submit`` (success when the hidden tests pass). ``truncated`` when the task's
    full budget (``max_turns`` = max(6, 2 x the oracle's turns)) or a ``TurnBudget`` cap runs out
    without a submission: unsolved, whatever the repository holds, at every budget alike (so
    Pass@(K,T) reads the same rule at every T, and ``1x`` counts the submission: the oracle's own
    turns). Under ``reward_mode="progress"`` that last turn measures the repository's progress.

Registered Configurations:
    ``budgetgym/Coding-v0``: every shipped task of both splits (``split="train"`` or ``"test"``),
    local sandbox; ``task_set="libraries"`` plays the tasks in pinned real libraries instead
    (:mod:`budgetgym.envs.coding.libraries`: several sites per bug, three tiers);
    ``gym.make("budgetgym/Coding-v0", backend="docker")`` for containers. ``tests=`` picks the
    mode on every task set: ``"visible"`` (the whole suite in the workspace, SWE-smith style),
    ``"withheld"`` (the fail-to-pass tests cut out of the workspace, SWE-bench style: the agent has
    the issue and writes its own checks; grading runs them out of its reach; ids end in
    ``-withheld``), or None (the default: each task's own: the quick tier visible, the library set
    both, as separate ids). The oracle's plan and the full budget are the same in both modes.
    ``budgetgym/assets/coding/tasks.jsonl`` and ``failure_states.jsonl`` (curated mistakes of six
    kinds for ``ErrorInjection``, :mod:`budgetgym.envs.coding.mistakes`) are rebuilt by
    ``python -m budgetgym.envs.coding.assets --tasks``; the library set has failure states of its
    own (``budgetgym/assets/coding/libraries/failure_states.jsonl``: five of the kinds on both
    splits; no library bug has a second, test-breaking change for ``breaks_pass_to_pass``), rebuilt by ``python -m budgetgym.envs.coding.assets --libraries``.
"""

from __future__ import annotations

import hashlib
import random
import shlex
from typing import Any, Mapping, Sequence

from budgetgym.core import Action, BackendUnavailable, Outcome, SnapshotError, Task, TaskSet, TextEnv, ToolError, load_tasks
from budgetgym.core.tasks import load_failure_states
from budgetgym.envs.coding import mistakes
from budgetgym.envs.coding.mutate import segment
from budgetgym.envs.coding.repos import is_test_path, repo_files
from budgetgym.envs.coding.sandbox import Limits, SandboxDied, SandboxUnavailable, make_sandbox
from budgetgym.envs.coding.tools import TOOLS
from budgetgym.envs.coding.tools import call as _call
from budgetgym.envs.coding.workspace import Workspace

def apply_bug(original: str, bug: Mapping[str, Any]) -> str:
    """The library file with the task's bug put in (the fixed stretch at ``line`` becomes the buggy one)."""
    lines = original.splitlines(keepends=True)
    start = bug["line"] - 1
    count = len(bug["fixed"].splitlines(keepends=True))
    if "".join(lines[start:start + count]) != bug["fixed"]:
        raise ValueError(f"{bug['path']}: the task's fixed text is not at line {bug['line']}")
    return "".join(lines[:start]) + bug["buggy"] + "".join(lines[start + count:])


def task_files(task: Mapping[str, Any]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(the repository the episode starts with, the library as shipped)."""
    if task.get("source") == "pypi":  # a pinned real library (budgetgym.envs.coding.libraries)
        from budgetgym.envs.coding.libraries import task_files as library_task_files

        return library_task_files(task)
    original = {p: t.encode("utf-8") for p, t in repo_files(task["library"]).items()}
    bug = task["bug"]
    initial = dict(original)
    initial[bug["path"]] = apply_bug(original[bug["path"]].decode("utf-8"), bug).encode("utf-8")
    if task.get("tests") == "withheld":
        from budgetgym.envs.coding.libraries.synth import withhold

        cut = withhold({p: d.decode("utf-8") for p, d in initial.items() if p.startswith("tests/")}, task["fail_to_pass"])
        initial = {p: d for p, d in initial.items() if not p.startswith("tests/")}
        initial.update({p: t.encode("utf-8") for p, t in cut.items()})
    return initial, original


#: The two ways a task is played: the whole suite in the workspace (SWE-smith), or the fail-to-pass
#: tests withheld from it (SWE-bench: the agent has the issue and writes its own checks).
TESTS_MODES = ("visible", "withheld")
WITHHELD_SUFFIX = "-withheld"
LIBRARY_STATES = "coding/libraries"
"""The library task set's folder under the assets, where its own failure states are kept."""
_VISIBLE_ASK = "Please fix the library so that these tests pass again without changing the tests."
_WITHHELD_ASK = "The failing tests are not in your checkout: reproduce the problem yourself, then fix the library."


def tasks_in_mode(tasks: TaskSet, tests: str | None) -> TaskSet:
    """The tasks played under ``tests`` (None: each record's own mode). A record that names its
    mode (the library set ships both) is kept when it is that mode; one that names none (the
    quick tier) is played in it: as it is for ``"visible"``, as ``<id>-withheld`` with the issue's
    last request rewritten for ``"withheld"``."""
    if tests is None:
        return tasks
    if tests not in TESTS_MODES:
        raise ValueError(f"tests must be one of {', '.join(map(repr, TESTS_MODES))} (or None: each task's own), "
                         f"got {tests!r}")
    kept = []
    for task in tasks:
        mode = task.data.get("tests")
        if mode == tests:
            kept.append(task)
        elif mode is None:
            record = dict(task.data)
            if tests == "withheld":
                record.update(id=task.id + WITHHELD_SUFFIX, tests="withheld",
                              instruction=task.instruction.replace(_VISIBLE_ASK, _WITHHELD_ASK))
            kept.append(record)
    return TaskSet(kept)


class CodingEnv(TextEnv):
    """Bug fixing in a sandboxed repository; see the module docstring."""

    family = "coding"
    oracle_plans_from_any_state = True  # reward_mode='oracle_distance' (budgetgym.core.process_reward)
    episode_seed_matters = False  # the workspace is the task's files: _load_task ignores the seed
    max_calls_per_turn = 1  # sequential: each action depends on what the last one showed
    failure_kinds = mistakes.KINDS
    exploits = {
        "submit-at-once": "budgetgym.eval.exploits.coding:SubmitAtOnce",
        "edit-tests": "budgetgym.eval.exploits.coding:EditTests",
        "delete-tests": "budgetgym.eval.exploits.coding:DeleteTests",
        "rigged-runner": "budgetgym.eval.exploits.coding:RiggedRunner",
        "symlinked-conftest": "budgetgym.eval.exploits.coding:SymlinkedConftest",
        "user-site-plugin": "budgetgym.eval.exploits.coding:UserSitePlugin",
        "shadow-pytest": "budgetgym.eval.exploits.coding:ShadowPytest",
        "init-disarms-pytest": "budgetgym.eval.exploits.coding:InitDisarmsPytest",
        "unchecked-pyc": "budgetgym.eval.exploits.coding:UncheckedPyc",
        "always-equal": "budgetgym.eval.exploits.coding:AlwaysEqual",
        "special-case-literals": "budgetgym.eval.exploits.coding:SpecialCaseLiterals",
        "rig-named-tests": "budgetgym.eval.exploits.coding:RigNamedTests",
        "rig-code-names": "budgetgym.eval.exploits.coding:RigCodeNames",
        "rig-exercised": "budgetgym.eval.exploits.coding:RigExercised",
        "peek-expected": "budgetgym.eval.exploits.coding:PeekExpected",
        "copy-shipped-library": "budgetgym.eval.exploits.coding:CopyShippedLibrary",
    }
    #: run_tests changes no file (the exploit probe's read-only sweep may use it).
    read_only_tools = ("view_file", "search", "run_tests")
    #: Episodes run real test suites: the contract's exploit probe samples a few tasks (four: twenty-two
    #: agents; each attack class also has its own test on both backends, tests/envs/test_coding_grading.py).
    exploit_sample = 4
    instructions = (
        "You are a software engineer fixing an issue in a Python repository, working through tools in a "
        "sandbox (no network). Find the cause, fix the library's source code (not the tests), check your fix "
        "with run_tests, and call submit when the tests pass (submit takes only a repository whose tests you "
        "ran as it is now). Paths are relative to the repository root. "
        "replace_in_file needs the exact text, once in the file. Submitting ends the episode: hidden tests "
        "then decide, on fresh copies of the test files."
    )

    def __init__(self, split: str | None = None, task_ids: list[str] | None = None, tasks=None,
                 reward_mode: str = "sparse", render_mode: str | None = None, backend: str = "local",
                 limits: Limits | None = None, output_limit: int = 8000, allow_unsandboxed: bool = False,
                 sandbox_options: Mapping[str, Any] | None = None, task_set: str = "shipped",
                 tests: str | None = None) -> None:
        if task_set not in ("shipped", "libraries"):
            raise ValueError(f"task_set must be 'shipped' or 'libraries', got {task_set!r}")
        if tasks is None:
            if task_set == "libraries":
                from budgetgym.envs.coding.libraries import library_tasks

                tasks = library_tasks()
            else:
                tasks = load_tasks(self.family)
        tasks = tasks_in_mode(tasks, tests)
        self.tests = tests
        self.task_set = task_set
        super().__init__(split=split, task_ids=task_ids, tasks=tasks, reward_mode=reward_mode, render_mode=render_mode)
        self.tools = TOOLS
        self.backend = backend
        options = dict(sandbox_options or {})
        if backend == "local":
            options.setdefault("allow_unsandboxed", allow_unsandboxed)
        self._sandbox_args = (backend, {"limits": limits, **options})
        self.sandbox = make_sandbox(backend, limits=limits, **options)
        self.output_limit = output_limit
        self.ws: Workspace | None = None

    # ------------------------------------------------------------------ backend

    def check_backend(self) -> None:
        """The sandbox really runs the interpreter and pytest: one command, as grading runs it, in
        a sandbox of this env's backend and limits (a broken one scored every episode 0: an
        interpreter hidden from the sandbox answered ``python: not found`` to every test run)."""
        backend, options = self._sandbox_args
        where = f"budgetgym/Coding-v0 ({backend} sandbox)"
        try:
            with make_sandbox(backend, **options) as sandbox:
                sandbox.load({"check.py": "import pytest\nprint('pytest', pytest.__version__)\n"})
                result = sandbox.run("python -I -B check.py", timeout=60)
        except (SandboxUnavailable, SandboxDied) as err:
            raise BackendUnavailable(f"{where}: {err}") from None
        if result.exit_code != 0 or "pytest " not in result.output:
            said = " ".join(result.output.split())[-200:] or f"exit code {result.exit_code}"
            fix = ("the interpreter or pytest is missing inside the sandbox: install pytest into the Python "
                   "that runs budgetgym (pip install pytest)" if backend == "local" else
                   "rebuild the image: python -m budgetgym.envs.coding.image --force")
            raise BackendUnavailable(f"{where}: python and pytest do not run inside the sandbox ({said}); {fix}")

    # ------------------------------------------------------------------ episode

    def _load_task(self, task: Task, seed: int) -> str:
        initial, original = task_files(task.data)
        self.sandbox.load(initial)
        self.ws = Workspace(self.sandbox, task.data, initial, original, self.output_limit)
        self._status_known = True
        listing = "\n".join(f"  {path}" for path in sorted(initial))
        return (f"Issue:\n{task.instruction}\n\nRepository (/workspace), {len(initial)} files:\n{listing}\n\n"
                f"Tools: {', '.join(self.tools)}.")

    def _execute(self, action: Action) -> Outcome:
        ws = self.ws
        parts = []
        for call in action.calls:
            tool = self.tools[call.name]
            try:
                text = tool.function(ws, **tool.normalise(call.arguments))
            except ToolError as err:
                text = f"Error: {err}"
            except SandboxDied as err:
                text = self._revive_sandbox(err)
                parts.append(text)
                break
            parts.append(text)
            if ws.verdict is not None:
                break
        observation = "\n\n".join(parts)
        if ws.verdict is not None:
            solved, _ = ws.verdict
            progress, ws.progress = ws.progress, None
            return Outcome(observation, solved=solved, failed=not solved, progress=progress)
        if self._turn + 1 >= self.turn_limit and self.reward_mode == "progress":
            # The last turn (the full budget's or an outer cap's) ends unsubmitted, so unsolved; the
            # progress return is the repository's as it is now, not the last test run's.
            ws.measure()
        progress, ws.progress = ws.progress, None
        return Outcome(observation, progress=progress)

    def _revive_sandbox(self, err: Exception) -> str:
        """A sandbox that died mid-action is rebuilt with the files it had before the action."""
        ws = self.ws
        self.sandbox.revive()
        self.sandbox.load(ws.files)
        ws.tested = False
        return (f"Error: the sandbox stopped working ({err}); it was rebuilt from the state before this action, "
                f"which was not applied. Nothing else was lost.")

    def _teardown(self) -> None:
        self.sandbox.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and deep copy: everything but the sandbox, plus the workspace's state; the copy
        gets a sandbox of its own holding the same files (an independent episode, same future)."""
        state = self.__dict__.copy()
        state["sandbox"] = None
        state["ws"] = None
        state["_copied_workspace"] = None if self.ws is None else self.ws.state()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        copied = state.pop("_copied_workspace", None)
        self.__dict__.update(state)
        backend, options = self._sandbox_args
        self.sandbox = make_sandbox(backend, **options)
        if copied is not None and self.task is not None:
            initial, original = task_files(self.task.data)
            self.sandbox.load(Workspace.files_from_state(initial, copied))
            ws = Workspace(self.sandbox, self.task.data, initial, original, self.output_limit)
            ws.sync()
            ws.searched, ws.viewed, ws.tested = copied["searched"], copied["viewed"], copied["tested"]
            self.ws = ws

    def _sibling(self) -> "CodingEnv":
        """A restore rebuilds the episode in a sandbox of its own: the running episode's workspace is
        untouched until the restore has succeeded (then the old sandbox is released when dropped)."""
        sibling = super()._sibling()
        backend, options = self._sandbox_args
        sibling.sandbox = make_sandbox(backend, **options)
        return sibling

    # ------------------------------------------------------------------ snapshots

    def _get_state(self) -> Any:
        if self.ws is None:
            return None
        if not getattr(self, "_status_known", True):
            # Restored from a state that did not carry the measured progress (older snapshots,
            # shipped failure states among them): the snapshot's own progress is that measure, so
            # the next snapshot's state and its progress agree (they disagreed, and it was refused).
            self.ws.measured = float(self._progress)
            self._status_known = True
        return self.ws.state()

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        initial, original = task_files(task.data)
        try:
            files = Workspace.files_from_state(initial, state)
        except ValueError as err:
            raise SnapshotError(f"corrupt coding state: {err}") from None
        self.sandbox.load(files)
        ws = Workspace(self.sandbox, task.data, initial, original, self.output_limit)
        ws.sync()
        ws.searched, ws.viewed, ws.tested = state["searched"], state["viewed"], state["tested"]
        ws.measured = float(state.get("progress", 0.0))
        if state.get("verdict") is not None:
            ws.verdict = (state["verdict"], "")
        self._status_known = "progress" in state
        self.ws = ws

    def _state_status(self) -> tuple[bool, bool, float] | None:
        """(solved, failed, progress) as the restored workspace state says; None for snapshots made
        before the state carried them."""
        if not getattr(self, "_status_known", False):
            return None
        verdict = None if self.ws.verdict is None else self.ws.verdict[0]
        return verdict is True, verdict is False, self.ws.measured

    def state_key(self) -> str:
        digest = hashlib.sha256()
        for path, data in sorted(self.ws.files.items()):
            digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    # ------------------------------------------------------------------ oracle

    def _oracle(self) -> Action | None:
        ws = self.ws
        task = self.task.data
        if task.get("source") == "pypi":  # several sites, tests maybe withheld: the library tasks' own plan
            from budgetgym.envs.coding.libraries import oracle_action

            return oracle_action(ws, task)
        bug = task["bug"]
        target = self._target()
        differing = sorted(p for p in set(ws.files) | set(target) if ws.files.get(p) != target.get(p))
        if differing == [bug["path"]] and ws.files.get(bug["path"]) == ws.initial[bug["path"]]:
            if not ws.searched:
                return _call("search", query=task["locate"]["query"])
            if not ws.viewed:
                start, end = task["locate"]["view"]
                return _call("view_file", path=bug["path"], start_line=start, end_line=end)
            return _call("replace_in_file", path=bug["path"], old=bug["buggy"], new=bug["fixed"])
        if differing:
            return self._undo(differing[0], target)
        if not ws.tested:
            return _call("run_tests")
        return _call("submit")

    def _target(self) -> dict[str, bytes]:
        """What the oracle works towards: the shipped library's sources with the tests the workspace
        started with (withheld tests are never put back)."""
        ws = self.ws
        target = {p: d for p, d in ws.original.items() if not is_test_path(p)}
        target.update({p: d for p, d in ws.initial.items() if is_test_path(p)})
        return target

    def _undo(self, path: str, target_files: Mapping[str, bytes]) -> Action:
        ws = self.ws
        target = target_files.get(path)
        current = ws.files.get(path)
        if target is None:
            return _call("run_command", command=f"rm -f -- {shlex.quote(path)}")
        if current is None:
            return _call("create_file", path=path, content=target.decode("utf-8"))
        try:
            piece = segment(current.decode("utf-8"), target.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return _call("create_file", path=path, content=target.decode("utf-8"), overwrite=True)
        return _call("replace_in_file", path=path, old=piece.buggy, new=piece.fixed)

    # ------------------------------------------------------------------ failure states

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        return mistakes.propose(self.ws, self.task.data, kind, rng)

    def failure_states(self) -> tuple[Mapping[str, Any], ...]:
        """The curated failure states of the task set played: the quick tier's
        (``budgetgym/assets/coding/failure_states.jsonl``) or the library set's
        (``budgetgym/assets/coding/libraries/failure_states.jsonl``); both rebuilt by
        ``python -m budgetgym.envs.coding.assets``."""
        return load_failure_states(LIBRARY_STATES if self.task_set == "libraries" else self.family)
