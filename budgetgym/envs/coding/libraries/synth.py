"""Bug synthesis inside a pinned library, SWE-smith style, and the repository a task starts from.

A *site* is one mutation of one library file, as :mod:`budgetgym.envs.coding.mutate` makes them
(flipped comparisons, off-by-ones, swapped operators, wrong defaults, dropped branches, swapped
booleans and builtins) plus two operators of this module: ``removed_statement`` (a statement of a
function body taken out, multi-line statements included) and ``swapped_arguments`` (the first two
positional arguments of a call exchanged). A site is kept when, alone, it makes some of the
library's tests fail while others still pass and the suite still collects.

A *task* is one site (tier ``easy``), two to four (``medium``) or eight to twelve (``hard``),
drawn at random from the library's kept sites (so spread over the files those sites are in),
never two on neighbouring lines; a combination is kept only when it too fails some tests and
passes others. The oracle's fix is the
reverse of each site, which restores the library as pinned, whose suite passes. Its plan (see
:func:`oracle_action`): search for the first site's function, view it, fix it; after each fix run
the tests and fix the next site; then submit: ``3 + 2 * sites`` turns.

Two modes per task: ``tests="visible"`` (the workspace has the whole suite) and ``"withheld"``
(the fail-to-pass tests are cut out of the workspace's test files, as in SWE-bench, where the
agent has only the issue and writes its own checks); grading runs the full original suite either way.
"""

from __future__ import annotations

import ast
import random
import shlex
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from budgetgym.core import Action, ToolCall
from budgetgym.envs.coding.mutate import Mutation, mutations, parsed_mutation, segment
from budgetgym.envs.coding.repos import is_test_path

EXTRA_OPERATORS = ("removed_statement", "swapped_arguments")


@dataclass(frozen=True)
class Site:
    """One bug site: the ``fixed`` stretch of ``path`` at ``line`` (1-based) reads ``buggy`` in the task."""

    path: str
    operator: str
    function: str
    buggy: str
    fixed: str
    line: int

    def record(self) -> dict[str, Any]:
        return {"path": self.path, "operator": self.operator, "function": self.function,
                "buggy": self.buggy, "fixed": self.fixed, "line": self.line}

    @property
    def span(self) -> range:
        return range(self.line, self.line + max(1, self.fixed.count("\n")))


def site_of(mutation: Mutation, original: str) -> Site:
    piece = segment(mutation.source, original)
    return Site(mutation.path, mutation.operator, mutation.function, piece.buggy, piece.fixed, piece.start)


def library_mutations(path: str, source: str) -> list[Mutation]:
    """Every mutation of a library file: the project's operators and this module's, inside functions."""
    found = [m for m in mutations(path, source) if m.function]
    found += _extra_mutations(path, source)
    return found


def _extra_mutations(path: str, source: str) -> list[Mutation]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found: list[Mutation] = []

    def add(operator: str, line: int, function: str, new_lines: list[str]) -> None:
        mutation = parsed_mutation(path, source, operator, line, function, new_lines)
        if mutation is not None:
            found.append(mutation)

    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for block in ast.walk(func):
            body = getattr(block, "body", None)
            if not isinstance(body, list) or len(body) < 2:
                continue
            for stmt in body:
                if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)) and not (
                        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                    add("removed_statement", stmt.lineno, func.name,
                        lines[: stmt.lineno - 1] + lines[stmt.end_lineno:])
        for call in ast.walk(func):
            if (isinstance(call, ast.Call) and len(call.args) >= 2 and call.lineno == call.end_lineno
                    and not any(isinstance(a, ast.Starred) for a in call.args[:2])):
                first, second = call.args[0], call.args[1]
                if first.lineno != second.lineno or first.end_lineno != first.lineno or second.end_lineno != first.lineno:
                    continue
                raw = lines[first.lineno - 1].encode()
                a = raw[first.col_offset:first.end_col_offset]
                b = raw[second.col_offset:second.end_col_offset]
                if a == b:
                    continue
                between = raw[first.end_col_offset:second.col_offset]
                new = raw[:first.col_offset] + b + between + a + raw[second.end_col_offset:]
                copy = list(lines)
                copy[first.lineno - 1] = new.decode()
                add("swapped_arguments", call.lineno, func.name, copy)
    return found


def apply_sites(original: Mapping[str, str], sites: Sequence[Site | Mapping[str, Any]]) -> dict[str, str]:
    """The library with every site's bug put in (bottom-up in each file, so line numbers hold)."""
    files = dict(original)
    records = [s.record() if isinstance(s, Site) else s for s in sites]
    for record in sorted(records, key=lambda r: (r["path"], -r["line"])):
        lines = files[record["path"]].splitlines(keepends=True)
        start = record["line"] - 1
        count = len(record["fixed"].splitlines(keepends=True))
        if "".join(lines[start:start + count]) != record["fixed"]:
            raise ValueError(f"{record['path']}: a site's fixed text is not at line {record['line']}")
        files[record["path"]] = "".join(lines[:start]) + record["buggy"] + "".join(lines[start + count:])
    return files


def compatible(sites: Sequence[Site]) -> bool:
    """The sites can be put in together and fixed one by one with ``replace_in_file`` in order:
    no two touch neighbouring lines, and each buggy stretch is unique in its file at its turn."""
    ordered = sorted(sites, key=lambda s: (s.path, s.line))
    for a, b in zip(ordered, ordered[1:]):
        if a.path == b.path and b.line <= a.span.stop + 1:
            return False
    return True


def replay_fixes(original: Mapping[str, str], sites: Sequence[Mapping[str, Any]]) -> bool:
    """True when fixing the sites in task order, each by one unique replacement, gives the original."""
    files = apply_sites(original, sites)
    for site in sites:
        text = files[site["path"]]
        if text.count(site["buggy"]) != 1:
            return False
        files[site["path"]] = text.replace(site["buggy"], site["fixed"], 1)
    return files == dict(original)


# ---------------------------------------------------------------------- withheld tests


def withhold(files: Mapping[str, str], node_ids: Sequence[str]) -> dict[str, str]:
    """The test files with the named tests cut out (functions and methods; a class left empty gets
    ``pass``). A file that cannot be cut cleanly is left out whole."""
    by_file: dict[str, set[str]] = {}
    for node in node_ids:
        path, _, rest = node.partition("::")
        by_file.setdefault(path, set()).add(rest.split("[", 1)[0])
    result = dict(files)
    for path, names in by_file.items():
        if path not in result:
            continue
        cut = _cut_tests(result[path], names)
        if cut is None:
            del result[path]
        else:
            result[path] = cut
    return result


def _cut_tests(source: str, names: set[str]) -> str | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    spans: list[tuple[int, int, str]] = []  # (first line, last line, replacement)

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and f"{prefix}{node.name}" in names:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                spans.append((first, node.end_lineno, ""))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}::")

    visit(tree.body, "")
    if not spans:
        return None
    for first, last, _ in sorted(spans, reverse=True):
        indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        lines[first - 1:last] = [f"{indent}pass\n"] if indent else []
    text = "".join(lines)
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text


def task_files(task: Mapping[str, Any]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(the repository the episode starts with, the library as pinned) of a library task."""
    from budgetgym.envs.coding.libraries.fetch import library_files

    original = dict(library_files(task["library"]))
    initial = apply_sites(original, task["sites"])
    if task.get("tests") == "withheld":
        initial = withhold(initial, task["fail_to_pass"])
    encode = lambda files: {p: t.encode("utf-8") for p, t in files.items()}  # noqa: E731
    return encode(initial), encode(original)


# ---------------------------------------------------------------------- the oracle


def _call(name: str, **arguments: Any) -> Action:
    return Action((ToolCall(name, arguments),))


def oracle_action(ws: Any, task: Mapping[str, Any]) -> Action:
    """The oracle's next action on a library task's workspace ``ws`` (Coding-v0's ``Workspace``),
    from any state. Its target is the pinned library with the workspace's own starting test files
    (withheld tests are not put back). On the plan (the first ``j`` sites fixed, nothing else
    changed): search and view the first site, fix the sites in order, running the tests after each
    fix; then submit. Off the plan: undo one changed file towards the target, then go on."""
    sites = task["sites"]
    target = {p: d for p, d in ws.original.items() if not is_test_path(p)}
    target.update({p: d for p, d in ws.initial.items() if is_test_path(p)})
    files = dict(ws.files)
    stage = dict(ws.initial)
    for fixed_count in range(len(sites) + 1):
        if files == stage:
            break
        if fixed_count < len(sites):
            site = sites[fixed_count]
            text = stage[site["path"]].decode("utf-8")
            stage[site["path"]] = text.replace(site["buggy"], site["fixed"], 1).encode("utf-8")
    else:
        return _undo(ws, target)
    if fixed_count == 0:
        if not ws.searched:
            return _call("search", query=task["locate"]["query"])
        if not ws.viewed:
            start, end = task["locate"]["view"]
            return _call("view_file", path=sites[0]["path"], start_line=start, end_line=end)
    elif not ws.tested:
        return _call("run_tests")
    if fixed_count < len(sites):
        site = sites[fixed_count]
        return _call("replace_in_file", path=site["path"], old=site["buggy"], new=site["fixed"])
    return _call("submit")


def _undo(ws: Any, target: Mapping[str, bytes]) -> Action:
    differing = sorted(p for p in set(ws.files) | set(target) if ws.files.get(p) != target.get(p))
    path = differing[0]
    want, current = target.get(path), ws.files.get(path)
    if want is None:
        return _call("run_command", command=f"rm -f -- {shlex.quote(path)}")
    if current is None:
        return _call("create_file", path=path, content=want.decode("utf-8"))
    try:
        piece = segment(current.decode("utf-8"), want.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return _call("create_file", path=path, content=want.decode("utf-8"), overwrite=True)
    return _call("replace_in_file", path=path, old=piece.buggy, new=piece.fixed)


def shuffled_sites(candidates: Sequence[Mutation], rng: random.Random) -> list[Mutation]:
    """The candidates shuffled, then interleaved by operator so that each operator gets its turn."""
    pools: dict[str, list[Mutation]] = {}
    for mutation in candidates:
        pools.setdefault(mutation.operator, []).append(mutation)
    for pool in pools.values():
        rng.shuffle(pool)
    order = sorted(pools)
    rng.shuffle(order)
    result: list[Mutation] = []
    while any(pools.values()):
        for operator in order:
            if pools[operator]:
                result.append(pools[operator].pop())
    return result
