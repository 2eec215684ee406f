"""SWEBench-v0: SWE-bench instances from a local file, in each instance's image, graded by ``swebench``.

Description:
    The SWE-bench task format run through the ``swebench`` package (5.x): each instance (from a
    JSON, JSON-lines or parquet file the user points to) names its Docker image, whose repository
    sits at ``/testbed`` (``workdir`` in the record overrides it), its problem statement, its
    evaluation script and log parser, and its fail-to-pass and pass-to-pass tests. The agent works
    in a container of that image (the Docker backend of the coding family: no network, memory,
    CPU and process limits) with the coding tools. Images are not pulled: they must be on the
    engine (built locally or loaded).

Action Space:
    Text: tool calls of ``run_command``, ``view_file``, ``search``, ``replace_in_file``,
    ``create_file`` and ``submit`` (as in Coding-v0; there is no ``run_tests``: the instance's test
    command is part of its hidden evaluation); one call a turn (``max_calls_per_turn = 1``). Bad
    input costs the turn and changes nothing.

Observation Space:
    Text: the problem statement at reset, then each tool's result.

Rewards:
    ``submit`` takes the repository's changes as a patch (``git diff`` against the starting commit,
    new files included) less what would configure or start the test runner (:func:`graded_patch`:
    ``conftest.py``, pytest and packaging configuration, ``.pth``, bytecode, symlinks, new top-level
    modules; the report names them), applies it in a fresh container of the image, runs the instance's
    evaluation script there (it puts the hidden tests in) and grades the log with
    ``swebench.harness.grading.get_eval_report`` and the instance's log parser: 1.0 when resolved.
    ``info["progress"]`` is 0 until the instance is resolved, then 1 (no partial measure is run
    during the episode), so ``reward_mode="progress"`` pays the same 1.0 as ``"sparse"``.

Termination:
    ``terminated`` on ``submit``; ``truncated`` at ``max_turns``: the core's full budget from the
    oracle (apply the gold patch, submit: 6 turns) unless ``max_turns=`` is passed. A container that
    dies under an action (its processes killed, a patch past the output limit) is answered and
    rebuilt with the episode's changes from before that action (the turn is spent); when the rebuild
    fails too, the episode is ``terminated`` as failed.

Registered Configurations:
    ``budgetgym/SWEBench-v0``: ``gym.make("budgetgym/SWEBench-v0", instances="path/to/instances.jsonl")``
    (or the ``BUDGETGYM_SWEBENCH_INSTANCES`` variable); an instance's ``split`` field places it
    (default ``test``). Failure states (``partial_fix``, ``wrong_edit``: edits made from the gold
    patch, :mod:`budgetgym.envs.coding.swebench.mistakes`) are built from the instances on first use
    of ``failure_states()`` (``ErrorInjection``, ``budgetgym probe recovery``), a few seconds an
    instance, since no instances ship. Needs ``pip install 'budgetgym[swebench]'`` and a Docker
    engine holding the instances' images.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shlex
import tarfile
import tempfile
import time
from typing import Any, Mapping

from budgetgym.core import (Action, BackendUnavailable, Outcome, SnapshotError, Task, TaskSet, TextEnv, ToolCall,
                            ToolError, tool_map)
from budgetgym.core.extras import MissingExtra
from budgetgym.envs.coding.sandbox import Limits, SandboxDied, SandboxUnavailable
from budgetgym.envs.coding.swebench import mistakes
from budgetgym.envs.coding.swebench.instances import load_instances, task_record, workdir_of
from budgetgym.envs.coding.tools import CREATE_FILE, REPLACE_IN_FILE, RUN_COMMAND, SEARCH, SUBMIT, VIEW_FILE
from budgetgym.envs.coding.workspace import SandboxWorkspace

TOOLS = tool_map(RUN_COMMAND, VIEW_FILE, SEARCH, REPLACE_IN_FILE, CREATE_FILE, SUBMIT)
PATCH_FILE = "/budgetgym-model.patch"  # not under /tmp: a tmpfs there hides archive uploads
APPLY_MARKER = "BUDGETGYM_GOLD_PATCH"
_BUILT_FAILURE_STATES: dict[tuple[tuple[str, ...], str], tuple[Mapping[str, Any], ...]] = {}


class InstancesMissing(FileNotFoundError):
    """No instance file was named: SWE-bench data is not shipped, the user points to it."""


def _require_swebench() -> None:
    """The swebench extra is installed: a MissingExtra at make, not at the first grading. Found, not
    imported: its harness imports datasets, pandas and modal (about 6 s), paid by the first grading."""
    if importlib.util.find_spec("swebench") is None:
        raise MissingExtra("swebench", "budgetgym/SWEBench-v0", missing="the swebench package")


def _swebench():
    try:
        from swebench.harness.grading import get_eval_report
        from swebench.harness.utils import make_test_spec
    except ImportError as err:
        raise MissingExtra("swebench", "budgetgym/SWEBench-v0", missing="the swebench package",
                           detail=str(err)) from None
    return make_test_spec, get_eval_report


class RepoWorkspace(SandboxWorkspace):
    """The tools' view of an instance's container (no mirror: SWE-bench repositories are large)."""

    def __init__(self, sandbox, instance: Mapping[str, Any], output_limit: int) -> None:
        super().__init__(sandbox, output_limit)
        self.instance = instance
        self.gold_applied = False

    def _written(self) -> None:
        self.gold_applied = False

    def search(self, query: str, path: str, limit: int) -> list[tuple[str, int, str]]:
        rel = self._rel(path)
        self.checked_text(query, "query")
        result = self.sandbox.run(f"grep -rnIF --exclude-dir=.git -e {shlex.quote(query)} -- {shlex.quote(rel)} "
                                  f"| head -n {int(limit)}")
        found = []
        for line in result.output.splitlines():
            name, _, rest = line.partition(":")
            number, _, text = rest.partition(":")
            if number.isdigit():
                found.append((name[2:] if name.startswith("./") else name, int(number), text))
        return found

    def run_command(self, command: str, timeout: int) -> str:
        result = self.sandbox.run(self.checked_text(command, "command"), timeout=timeout)
        self.gold_applied = APPLY_MARKER in command and result.exit_code == 0
        return result.shown(self.output_limit)

    def diff(self) -> str:
        """The repository's changes as a patch (new files included), against the starting commit.
        A patch past the sandbox's output limit cannot be kept: SandboxDied (the env rebuilds the
        repository as it was before the action that made it)."""
        result = self.sandbox.run("git add -A >/dev/null 2>&1 && git diff --cached --binary HEAD")
        if result.output_limited:
            raise SandboxDied(f"the repository's changes grew past {self.sandbox.limits.output_kill_bytes} bytes "
                              f"as a patch, more than an episode keeps")
        if result.exit_code != 0:
            raise SandboxDied(f"git diff failed: {result.output[-500:]}")
        return result.output

    def submit(self) -> str:
        patch, left_out = graded_patch(self.diff())
        solved, report = grade(self.sandbox, self.instance, patch)
        if left_out:
            report += (" Left out of the graded patch (only source changes are graded): "
                       + ", ".join(left_out[:8]) + (f" and {len(left_out) - 8} more" if len(left_out) > 8 else "") + ".")
        self.verdict = (solved, report)
        return "Submitted. " + report


_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
#: Files a patch may not bring into grading: the test runner's configuration and start-up hooks.
_UNGRADED_NAMES = {"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sitecustomize.py",
                   "usercustomize.py", "pytest.py", "_pytest"}


def graded_patch(patch: str) -> tuple[str, list[str]]:
    """(the part of the agent's patch that grading applies, the files left out).

    The evaluation script resets the instance's test files and runs its own test command as
    root, inside the repository: a change to what configures or starts that runner would grade
    the runner, not the fix. Left out: every ``conftest.py``, pytest and packaging configuration,
    ``sitecustomize``/``usercustomize``, a module named ``pytest``, ``.pth`` files, bytecode and
    ``__pycache__``, symlinks, and files whose names git had to quote (never source files of the
    instances). The rest applies as the agent wrote it."""
    kept: list[str] = []
    left_out: list[str] = []
    chunk: list[str] = []
    name = ""

    def close() -> None:
        if not chunk:
            return
        body = "".join(chunk)
        if _graded_file(name, body):
            kept.append(body)
        else:
            left_out.append(name)

    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git "):
            close()
            chunk = [line]
            match = _DIFF_HEADER.match(line.rstrip("\n"))
            name = match.group(2) if match else line[len("diff --git "):].strip()
        else:
            chunk.append(line)
    close()
    return "".join(kept), sorted(set(left_out))


def _graded_file(name: str, body: str) -> bool:
    parts = name.split("/")
    if name.startswith('"') or "\nnew file mode 120000" in body or "\nnew mode 120000" in body \
            or "\nold mode 120000" in body or "\ndeleted file mode 120000" in body:
        return False
    if "__pycache__" in parts or name.endswith((".pyc", ".pyo", ".pth")):
        return False
    if parts[-1] in _UNGRADED_NAMES or parts[0] in _UNGRADED_NAMES:
        return False
    # a new top-level module or package would shadow what the runner imports (cwd is on sys.path)
    new = "\nnew file mode " in body
    return not (new and (len(parts) == 1 and name.endswith(".py") or len(parts) == 2 and parts[1] == "__init__.py"))


def grade(sandbox, instance: Mapping[str, Any], patch: str) -> tuple[bool, str]:
    """SWE-bench's grading: the patch applied in a fresh container, the evaluation script run there,
    the log graded by ``get_eval_report`` with the instance's log parser."""

    make_test_spec, get_eval_report = _swebench()
    spec = make_test_spec(dict(instance))
    fresh = sandbox.sibling()
    try:
        fresh.load({})
        lines = []
        if patch.strip():
            fresh.put_archive("/", _single_file(PATCH_FILE.lstrip("/"), patch))
            applied = fresh.run(f"git apply -v {PATCH_FILE}", timeout=60)
            lines.append(applied.output)
            lines.append(">>>>> Applied Patch" if applied.exit_code == 0 else ">>>>> Patch Apply Failed")
        fresh.put_archive("/", _single_file("eval.sh", spec.eval_script))
        run = fresh.run("/bin/bash /eval.sh", timeout=fresh.limits.wall_seconds)
        lines.append(run.output)
    finally:
        fresh.close()
    with tempfile.TemporaryDirectory(prefix="budgetgym-swebench-") as folder:
        log = os.path.join(folder, "test_output.txt")
        with open(log, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        prediction = {"instance_id": instance["instance_id"], "model_name_or_path": "budgetgym", "model_patch": patch}
        report = get_eval_report(spec, prediction, log, include_tests_status=True)[instance["instance_id"]]
    resolved = bool(report.get("resolved"))
    status = report.get("tests_status", {})
    f2p = status.get("FAIL_TO_PASS", {})
    p2p = status.get("PASS_TO_PASS", {})
    text = (f"SWE-bench evaluation: fail-to-pass {len(f2p.get('success', []))}/{len(spec.FAIL_TO_PASS)}, "
            f"pass-to-pass {len(p2p.get('success', []))}/{len(spec.PASS_TO_PASS)}; "
            + ("resolved." if resolved else "not resolved."))
    return resolved, text


def _single_file(name: str, text: str) -> bytes:
    buffer = io.BytesIO()
    data = text.encode("utf-8")
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, time.time()
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class SWEBenchEnv(TextEnv):
    """SWE-bench instances in their images; see the module docstring."""

    family = "swebench"
    max_calls_per_turn = 1  # sequential: each action depends on what the last one showed
    exploit_upstream = "graded by swebench's own get_eval_report and log parsers"
    exploit_sample = 1
    failure_kinds = mistakes.KINDS
    instructions = (
        "You are a software engineer resolving an issue in a repository (the working directory), through "
        "tools in a container without network. Make the change in the source code, check it with commands "
        "as you see fit, then call submit: the repository's changes are evaluated with the hidden tests."
    )

    def __init__(self, instances: str | None = None, split: str | None = None, task_ids: list[str] | None = None,
                 reward_mode: str = "sparse", render_mode: str | None = None, max_turns: int | None = None,
                 limits: Limits | None = None, output_limit: int = 8000, pool_size: int = 1) -> None:
        _require_swebench()
        path = instances or os.environ.get("BUDGETGYM_SWEBENCH_INSTANCES")
        if not path:
            raise InstancesMissing("SWEBench-v0 needs SWE-bench instances: gym.make('budgetgym/SWEBench-v0', "
                                   "instances='instances.jsonl') or BUDGETGYM_SWEBENCH_INSTANCES=path "
                                   "(JSON, JSON lines or parquet)")
        records = [task_record(instance, max_turns) for instance in load_instances(path)]
        self._arguments = {"instances": path, "max_turns": max_turns, "limits": limits, "output_limit": output_limit}
        super().__init__(split=split, task_ids=task_ids, tasks=TaskSet(records), reward_mode=reward_mode,
                         render_mode=render_mode)
        from budgetgym.envs.coding.sandbox.docker_backend import docker_client

        self.client = docker_client()
        self.tools = TOOLS
        self.limits = limits or Limits(wall_seconds=600, cpu_seconds=600, memory_bytes=8 << 30, processes=512,
                                       file_bytes=256 << 20, scratch_bytes=1 << 30)
        self.output_limit = output_limit
        self.pool_size = pool_size
        self.sandbox = None
        self.ws: RepoWorkspace | None = None

    def check_backend(self) -> None:
        """The Docker engine answers and the first instance's image runs git in its repository
        (images are never pulled: a missing one scored every episode 0)."""
        from budgetgym.envs.coding.sandbox.docker_backend import DockerSandbox

        instance = self.tasks[0]["instance"]
        where = f"budgetgym/SWEBench-v0 (image {instance['image']})"
        try:
            with DockerSandbox(limits=self.limits, image=instance["image"], client=self.client,
                               workdir=workdir_of(instance), user=instance.get("user", "root"), pool_size=0) as sandbox:
                sandbox.load({})
                result = sandbox.run("git rev-parse HEAD", timeout=60)
        except (SandboxUnavailable, SandboxDied) as err:
            raise BackendUnavailable(f"{where}: {err}") from None
        if result.exit_code != 0:
            raise BackendUnavailable(f"{where}: git does not run in {workdir_of(instance)} "
                                     f"({' '.join(result.output.split())[-200:]}); build or load the instance's image")

    def _open(self, task: Task, patch: str) -> None:
        from budgetgym.envs.coding.sandbox.docker_backend import DockerSandbox

        instance = task["instance"]
        # The previous sandbox is not closed here: a restore runs on a sibling that shares it until
        # it succeeds; a dropped sandbox removes its container when it is collected.
        self.sandbox = DockerSandbox(limits=self.limits, image=instance["image"], client=self.client,
                                     workdir=workdir_of(instance), user=instance.get("user", "root"),
                                     pool_size=self.pool_size)
        self.sandbox.load({})
        if patch.strip():
            self.sandbox.put_archive("/", _single_file(PATCH_FILE.lstrip("/"), patch))
            applied = self.sandbox.run(f"git apply {PATCH_FILE} && rm {PATCH_FILE}")
            if applied.exit_code != 0:
                raise SnapshotError(f"the snapshot's patch does not apply to {instance['image']}: {applied.output[-300:]}")
        self.ws = RepoWorkspace(self.sandbox, instance, self.output_limit)

    def _load_task(self, task: Task, seed: int) -> str:
        self._open(task, "")
        return f"Issue:\n{task.instruction}\n\nRepository: {workdir_of(task['instance'])}\nTools: {', '.join(self.tools)}."

    def _execute(self, action: Action) -> Outcome:
        """The action's tool calls; a container that dies under them (a command that kills its
        processes, a patch past the output limit) is answered, then rebuilt from the patch taken
        after the last action that completed (this action is not applied). When even the rebuild
        fails, the episode ends as failed."""
        parts = []
        try:
            for call in action.calls:
                tool = self.tools[call.name]
                try:
                    parts.append(tool.function(self.ws, **tool.normalise(call.arguments)))
                except ToolError as err:
                    parts.append(f"Error: {err}")
                if self.ws.verdict is not None:
                    break
            patch = self.ws.diff() if self.ws.verdict is None else ""
        except SandboxDied as err:
            try:
                self._open(self.task, self._last_patch)
            except (SandboxDied, SandboxUnavailable, SnapshotError) as again:
                parts.append(f"Error: the container stopped working ({err}) and could not be rebuilt ({again}); "
                             f"the episode ends as failed.")
                return Outcome("\n\n".join(parts), failed=True)
            parts.append(f"Error: the container stopped working ({err}); it was rebuilt from the state before "
                         f"this action, which was not applied.")
            return Outcome("\n\n".join(parts))
        self._last_patch = patch
        observation = "\n\n".join(parts)
        if self.ws.verdict is not None:
            solved = self.ws.verdict[0]
            return Outcome(observation, solved=solved, failed=not solved, progress=1.0 if solved else None)
        return Outcome(observation)

    _last_patch = ""

    def propose_mistake(self, kind: str, plan, rng) -> tuple[Action, str] | None:
        return mistakes.propose(self.task["instance"], kind, plan, rng)

    def failure_states(self) -> tuple[Mapping[str, Any], ...]:
        """Failure states of these instances, built on first use (SWE-bench data is the user's, so
        none are shipped): per split and kind, one per instance where the kind fits its gold patch,
        from the core's builder in a second env of the same instances (this one's episode is left
        alone); each keeps only mistakes the oracle recovers from within the full budget. Built once
        per process for the same instance file (by its content) and budget."""
        key = (tuple(task.fingerprint for task in self.all_tasks), repr(self.limits))  # budgets are in the records
        if key not in _BUILT_FAILURE_STATES:
            from budgetgym.core.failures import build_failure_states

            builder = SWEBenchEnv(**self._arguments, split=None)
            try:
                tasks = builder.all_tasks
                states = []
                for split in tasks.splits:
                    for kind in self.failure_kinds:
                        # the instances whose gold patch has a form of this mistake (no trajectory for the rest)
                        fitting = [task for task in tasks.select(split)
                                   if mistakes.altered_patch(task["instance"].get("patch") or "", kind) is not None]
                        states += build_failure_states(builder, fitting, len(fitting), seed=0,
                                                       namespace="budgetgym-swebench-failures", kinds=(kind,))
                _BUILT_FAILURE_STATES[key] = tuple(states)
            finally:
                builder.close()
        return _BUILT_FAILURE_STATES[key]

    def _oracle(self) -> Action | None:
        instance = self.task["instance"]
        if self.ws.gold_applied or not instance.get("patch"):
            return Action((ToolCall("submit", {}),))
        command = (f"git reset -q --hard && git clean -fdq && git apply - <<'{APPLY_MARKER}'\n"
                   f"{instance['patch'].rstrip(chr(10))}\n{APPLY_MARKER}")
        return Action((ToolCall("run_command", {"command": command}),))

    def _get_state(self) -> Any:
        if self.ws is None:
            return None
        verdict = None if self.ws.verdict is None else self.ws.verdict[0]
        return {"patch": self.ws.diff(), "gold_applied": self.ws.gold_applied, "verdict": verdict}

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        # Snapshots from before the verdict was kept hold only the patch and the flag.
        if not isinstance(state, Mapping) or not {"patch", "gold_applied"} <= set(state) <= {"patch", "gold_applied", "verdict"} \
                or not isinstance(state["patch"], str) or not isinstance(state["gold_applied"], bool) \
                or state.get("verdict") not in (None, True, False):
            raise SnapshotError("corrupt SWE-bench state: expected a patch (text), gold_applied (bool) and a "
                                "verdict (null or bool)")
        self._open(task, state["patch"])
        self.ws.gold_applied = state["gold_applied"]
        self._last_patch = state["patch"]
        if state.get("verdict") is not None:
            self.ws.verdict = (state["verdict"], "")
        self._status_known = "verdict" in state

    def _state_status(self) -> tuple[bool, bool, float] | None:
        """(solved, failed, progress) as the restored state's verdict says (a snapshot whose flags
        say otherwise is refused); None for snapshots made before the state kept the verdict."""
        if not self._status_known:
            return None
        verdict = None if self.ws.verdict is None else self.ws.verdict[0]
        return verdict is True, verdict is False, 1.0 if verdict is True else 0.0

    _status_known = False

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and deep copy: everything but the Docker client and the container, plus the
        episode's state; the copy opens a container of its own with the same changes (an
        independent episode with the same future)."""
        state = self.__dict__.copy()
        state["client"] = state["sandbox"] = state["ws"] = None
        state["_copied_state"] = self._get_state()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        copied = state.pop("_copied_state", None)
        self.__dict__.update(state)
        from budgetgym.envs.coding.sandbox.docker_backend import docker_client

        self.client = docker_client()
        if copied is not None and self.task is not None:
            self._set_state(self.task, self._episode_seed or 0, copied)

    def _teardown(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
