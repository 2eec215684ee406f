"""Task generation: seeded bug injection into the shipped libraries, kept only when a test catches it.

Library code, no command line: ``python -m budgetgym.envs.coding.assets --tasks`` rebuilds the
shipped tasks with it (and ``--seed``, ``--per-repo``, ``--library``, ``--out`` write another set).

For each library the candidate mutations (:mod:`budgetgym.envs.coding.mutate`) are shuffled with
``random.Random(f"{seed}/{library}")`` and taken round-robin over the operators; each is applied to
a scratch copy of the library and its test suite is run. A mutation is kept when at least one test
fails (its fail-to-pass tests) while at least one still passes (its pass-to-pass tests) and the
suite still collects, until ``per_repo`` are kept. The issue text is written from the first
failing test's report: the failing check and what it got, never the fix. Every fourth task of a
library is in the test split. ``max_turns`` is the core's full budget for the oracle's turn count,
measured by playing the oracle on the new task. The same seed gives the same tasks, byte for byte.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from budgetgym.core import TaskSet, full_budget, rollout
from budgetgym.envs.coding.mutate import OPERATORS, Mutation, mutations, segment
from budgetgym.envs.coding.repos import REPOS, is_test_path, repo_files, repo_names
from budgetgym.envs.coding.testlog import PYTEST_ARGS, PYTEST_ENV, failure_excerpts, parse_statuses

_MEASURING_BUDGET = 100
_RUN_TIMEOUT = 60


def run_suite(files: Mapping[str, str], python: str = sys.executable,
              timeout: float = _RUN_TIMEOUT) -> tuple[dict[str, str], str]:
    """Run the library's tests on ``files`` in a scratch folder: (statuses, output; ``{}`` past ``timeout`` s)."""
    with tempfile.TemporaryDirectory(prefix="budgetgym-mutant-") as root:
        for path, text in files.items():
            target = Path(root, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        env = {**os.environ, **PYTEST_ENV}
        try:
            done = subprocess.run([python, "-m", "pytest", *PYTEST_ARGS, "tests"], cwd=root, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {}, "timed out"
    return parse_statuses(done.stdout), done.stdout


def candidates(library: str, rng: random.Random) -> list[Mutation]:
    """The library's mutations, shuffled, then interleaved by operator (so each operator gets turns)."""
    by_operator: dict[str, list[Mutation]] = {op: [] for op in OPERATORS}
    for path, text in repo_files(library).items():
        if path.endswith(".py") and not is_test_path(path) and not path.endswith("__init__.py"):
            for mutation in mutations(path, text):
                if mutation.function:
                    by_operator[mutation.operator].append(mutation)
    for pool in by_operator.values():
        rng.shuffle(pool)
    order = list(OPERATORS)
    rng.shuffle(order)
    result: list[Mutation] = []
    while any(by_operator.values()):
        for operator in order:
            if by_operator[operator]:
                result.append(by_operator[operator].pop())
    return result


def issue_text(library: str, function: str, failing: list[str], output: str) -> str:
    """An issue a user could file: which behaviour is broken and how it shows, not where or why."""
    excerpts = failure_excerpts(output)
    first = failing[0]
    name = first.split("::", 1)[1]
    lines = excerpts.get(name) or excerpts.get(name.replace("::", "."), [])  # pytest titles a method Class.test
    errors = [i for i, line in enumerate(lines) if line.startswith("E ") and not line.startswith("E    +")]
    shown = []
    if errors:
        source = lines[errors[0] - 1] if errors[0] > 0 and not lines[errors[0] - 1].startswith("E") else ""
        shown = ([source.strip()] if source.strip() else []) + [lines[i] for i in errors[:4]]
    parts = [part for part in function.split(".") if not part.startswith("_")]
    subject = f"`{parts[-1]}`" if parts else "the library"
    body = [f"{library}: {subject} misbehaves", "",
            f"Since the last change, `{first}` fails:", ""]
    body += [f"    {line}" for line in shown] or ["    (no details)"]
    if len(failing) > 1:
        others = ", ".join(f"`{node}`" for node in failing[1:4]) + (" and more" if len(failing) > 4 else "")
        body += ["", f"Also failing: {others}."]
    body += ["", "The rest of the test suite passes. Please fix the library so that these tests pass "
                 "again without changing the tests."]
    return "\n".join(body)


def draft_tasks(library: str, per_repo: int, seed: int) -> list[dict[str, Any]]:
    files = dict(repo_files(library))
    baseline, output = run_suite(files)
    if not baseline or any(status != "PASSED" for status in baseline.values()):
        raise RuntimeError(f"{library}: the unmodified test suite does not pass:\n{output[-2000:]}")
    rng = random.Random(f"{seed}/{library}")
    drafts = []
    for mutation in candidates(library, rng):
        if len(drafts) >= per_repo:
            break
        mutant = {**files, mutation.path: mutation.source}
        statuses, output = run_suite(mutant)
        if set(statuses) != set(baseline):
            continue  # collection broke: not a behavioural bug
        failing = sorted(node for node in baseline if statuses[node] != "PASSED")
        passing = sorted(node for node in baseline if statuses[node] == "PASSED")
        if not failing or not passing:
            continue
        seg = segment(mutation.source, files[mutation.path])
        function = mutation.function
        lines = mutation.source.splitlines()
        drafts.append({
            "library": library,
            "instruction": issue_text(library, function, failing, output),
            "bug": {
                "path": mutation.path,
                "operator": mutation.operator,
                "function": function,
                "buggy": seg.buggy,
                "fixed": seg.fixed,
                "line": seg.start,
            },
            "locate": {
                "query": f"def {function.split('.')[-1]}" if function else seg.buggy.strip().splitlines()[0],
                "view": [max(1, seg.start - 4), min(len(lines), max(seg.end, seg.start) + 4)],
            },
            "fail_to_pass": failing,
            "pass_to_pass": passing,
        })
    if len(drafts) < per_repo:
        print(f"warning: {library}: only {len(drafts)} caught mutations", file=sys.stderr)
    for draft in drafts:
        draft["breaker"] = _breaker(draft, drafts, files)
    return drafts


def _breaker(draft: dict[str, Any], drafts: list[dict[str, Any]], files: Mapping[str, str]) -> dict[str, str] | None:
    """Another caught bug of the same file that breaks one of this task's pass-to-pass tests: the
    failure states' "fix that breaks a passing test" puts it in beside the fix."""
    bug = draft["bug"]
    span = range(bug["line"], bug["line"] + max(1, bug["fixed"].count("\n")))
    for other in drafts:
        theirs = other["bug"]
        if other is draft or theirs["path"] != bug["path"]:
            continue
        if set(range(theirs["line"], theirs["line"] + max(1, theirs["fixed"].count("\n")))) & set(span):
            continue
        broken = sorted(set(other["fail_to_pass"]) & set(draft["pass_to_pass"]))
        if broken and files[bug["path"]].count(theirs["fixed"]) == 1 and bug["fixed"] not in theirs["fixed"]:
            return {"fixed": theirs["fixed"], "buggy": theirs["buggy"], "breaks": broken[0]}
    return None


def generate(seed: int = 0, per_repo: int = 12, libraries: list[str] | None = None) -> list[dict[str, Any]]:
    records = []
    for library in libraries or repo_names():
        for index, draft in enumerate(draft_tasks(library, per_repo, seed)):
            records.append({
                "id": f"coding-{library}-{index:03d}",
                "split": "test" if index % 4 == 3 else "train",
                "max_turns": _MEASURING_BUDGET,
                **draft,
            })
    return measure_budgets(records)


def measure_budgets(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Play the oracle on each record (local sandbox) and size ``max_turns`` from its turn count."""
    from budgetgym.envs.coding.env import CodingEnv

    env = CodingEnv(tasks=TaskSet(records))
    try:
        finished = []
        for record in records:
            run = rollout(env, "oracle", seed=0, options={"task_id": record["id"]})
            if not run.success:
                raise RuntimeError(f"{record['id']}: the oracle does not solve the task")
            finished.append({**record, "oracle_turns": run.turns, "max_turns": full_budget(run.turns)})
        return finished
    finally:
        env.close()

