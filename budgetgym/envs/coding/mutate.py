"""Seeded bug injection with Python's ``ast``: every single-point mutation of a source file.

Each operator finds its sites with ``ast`` and edits only the characters of that site in the
source text (never re-printing the file), so the buggy file differs from the original in one place
and reads like code a person wrote:

* ``flip_comparison``: ``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``in`` and ``not in``;
* ``off_by_one``: an integer literal ``n`` becomes ``n + 1`` or ``n - 1``;
* ``swap_arithmetic``: ``+`` and ``-``, ``*`` and ``//``, ``//`` and ``/``;
* ``wrong_default``: a parameter's default value changed (numbers, booleans);
* ``dropped_branch``: an ``if`` without ``else`` removed with its body, or an ``elif``/``else`` dropped;
* ``swap_boolean``: ``and`` and ``or``; ``not`` removed;
* ``swap_builtin``: ``min`` and ``max``; ``any`` and ``all``.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass

OPERATORS = ("flip_comparison", "off_by_one", "swap_arithmetic", "wrong_default", "dropped_branch",
             "swap_boolean", "swap_builtin")

_COMPARE_SWAP = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
                 ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}
_ARITH_SWAP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "/")}
_BUILTIN_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}


@dataclass(frozen=True)
class Mutation:
    path: str
    operator: str
    line: int          # 1-based line of the site in the original file
    function: str      # the enclosing function or class ("" at module level)
    source: str        # the whole mutated file


@dataclass(frozen=True)
class Segment:
    """The smallest unique stretch of whole lines that tells the buggy file from the fixed one."""

    buggy: str
    fixed: str
    start: int  # 1-based first line of ``buggy`` in the buggy file
    end: int    # 1-based last line (inclusive); ``start - 1`` when the stretch is empty


def parsed_mutation(path: str, source: str, operator: str, line: int, function: str,
                    new_lines: list[str]) -> Mutation | None:
    """The mutation whose text is ``new_lines``, or None when it changes nothing or no longer parses."""
    text = "".join(new_lines)
    if text == source:
        return None
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return Mutation(path, operator, line, function, text)


def mutations(path: str, source: str) -> list[Mutation]:
    """Every mutation of ``source`` (the file at ``path``) that still parses, in file order."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    owners = _owners(tree)
    found: list[Mutation] = []

    def add(operator: str, node: ast.AST, new_lines: list[str]) -> None:
        mutation = parsed_mutation(path, source, operator, node.lineno, owners.get(node.lineno, ""), new_lines)
        if mutation is not None:
            found.append(mutation)

    def replace_span(line: int, start: int, end: int, new: str) -> list[str]:
        copy = list(lines)
        raw = copy[line - 1].encode()
        copy[line - 1] = (raw[:start] + new.encode() + raw[end:]).decode()
        return copy

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and node.lineno == node.end_lineno:
            op = node.ops[0]
            right = node.comparators[0]
            between = _span_text(lines, node.lineno, node.left.end_col_offset, right.col_offset)
            if type(op) in _COMPARE_SWAP:
                old, new = _COMPARE_SWAP[type(op)]
                if between.count(old) == 1:
                    add("flip_comparison", node, replace_span(node.lineno, node.left.end_col_offset, right.col_offset,
                                                              between.replace(old, new)))
            elif isinstance(op, (ast.In, ast.NotIn)):
                old, new = ("not in", "in") if isinstance(op, ast.NotIn) else ("in", "not in")
                if between.strip() == old:
                    add("flip_comparison", node, replace_span(node.lineno, node.left.end_col_offset, right.col_offset,
                                                              f" {new} "))
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAP and node.lineno == node.end_lineno:
            old, new = _ARITH_SWAP[type(node.op)]
            between = _span_text(lines, node.lineno, node.left.end_col_offset, node.right.col_offset)
            if between.strip() == old:
                add("swap_arithmetic", node, replace_span(node.lineno, node.left.end_col_offset, node.right.col_offset,
                                                          between.replace(old, new)))
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2 and node.lineno == node.end_lineno:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            left, right = node.values
            between = _span_text(lines, node.lineno, left.end_col_offset, right.col_offset)
            if between.strip() == old:
                add("swap_boolean", node, replace_span(node.lineno, left.end_col_offset, right.col_offset, f" {new} "))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and node.lineno == node.end_lineno:
            add("swap_boolean", node, replace_span(node.lineno, node.col_offset, node.operand.col_offset, ""))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILTIN_SWAP):
            func = node.func
            add("swap_builtin", node, replace_span(func.lineno, func.col_offset, func.end_col_offset,
                                                   _BUILTIN_SWAP[func.id]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]:
                replacement = _wrong_default(default)
                if replacement is not None and default.lineno == default.end_lineno:
                    found_lines = replace_span(default.lineno, default.col_offset, default.end_col_offset, replacement)
                    add("wrong_default", default, found_lines)
        elif isinstance(node, ast.If):
            _branch_mutations(node, lines, add)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.lineno == node.end_lineno:
            if _is_default(tree, node):
                continue
            for new in (node.value + 1, node.value - 1):
                if new >= 0:
                    add("off_by_one", node, replace_span(node.lineno, node.col_offset, node.end_col_offset, str(new)))
    found.sort(key=lambda m: (m.line, m.operator, m.source))
    unique: dict[str, Mutation] = {}
    for mutation in found:
        unique.setdefault(mutation.source, mutation)
    return list(unique.values())


def segment(buggy: str, fixed: str) -> Segment:
    """The unique stretch of ``buggy`` that, replaced by the matching stretch of ``fixed``, gives ``fixed``."""
    old = buggy.splitlines(keepends=True)
    new = fixed.splitlines(keepends=True)
    blocks = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not blocks:
        raise ValueError("the files are the same")
    i1, i2, j1, j2 = blocks[0][1], blocks[-1][2], blocks[0][3], blocks[-1][4]
    grow_up = True
    while True:
        piece = "".join(old[i1:i2])
        if piece.strip() and buggy.count(piece) == 1:
            repaired = buggy.replace(piece, "".join(new[j1:j2]), 1)
            if repaired == fixed:
                return Segment(piece, "".join(new[j1:j2]), i1 + 1, i2)
        # widen by one line of context, alternating up and down
        if grow_up and i1 > 0:
            i1, j1 = i1 - 1, j1 - 1
        elif i2 < len(old):
            i2, j2 = i2 + 1, j2 + 1
        elif i1 > 0:
            i1, j1 = i1 - 1, j1 - 1
        else:
            raise ValueError("no unique segment")
        grow_up = not grow_up


def _span_text(lines: list[str], line: int, start: int, end: int) -> str:
    return lines[line - 1].encode()[start:end].decode()


def _wrong_default(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if value is True:
        return "False"
    if value is False:
        return "True"
    if type(value) is int:
        return str(value + 1) if value != 1 else "0"
    if type(value) is float:
        return repr(value * 2 if value else 1.0)
    return None


def _is_default(tree: ast.AST, constant: ast.Constant) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(d is constant for d in list(node.args.defaults) + list(node.args.kw_defaults)):
                return True
    return False


def _branch_mutations(node: ast.If, lines: list[str], add) -> None:
    first, last = node.lineno, node.end_lineno
    if not node.orelse:
        # drop the whole `if` (and its body); keep the file valid by leaving `pass` if it was alone
        copy = list(lines)
        indent = lines[first - 1][: len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        removed = copy[: first - 1] + copy[last:]
        if _block_would_be_empty(lines, first, last):
            removed = copy[: first - 1] + [f"{indent}pass\n"] + copy[last:]
        add("dropped_branch", node, removed)
    else:
        # drop the else / elif part
        else_first = node.orelse[0].lineno
        header = else_first - 1
        text = lines[header - 1].strip() if header >= 1 else ""
        if isinstance(node.orelse[0], ast.If) and lines[else_first - 1].lstrip().startswith("elif"):
            copy = list(lines)
            removed = copy[: else_first - 1] + copy[node.orelse[0].end_lineno:]
            add("dropped_branch", node, removed)
        elif text == "else:":
            copy = list(lines)
            removed = copy[: header - 1] + copy[node.end_lineno:]
            add("dropped_branch", node, removed)


def _block_would_be_empty(lines: list[str], first: int, last: int) -> bool:
    """True when the `if` at lines first..last is the only statement of its block."""
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())

    def neighbour(index: int) -> bool:
        text = lines[index]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            return False
        return len(text) - len(text.lstrip()) == indent

    before = first - 2
    while before >= 0 and not lines[before].strip():
        before -= 1
    after = last
    while after < len(lines) and not lines[after].strip():
        after += 1
    has_before = before >= 0 and neighbour(before) and not lines[before].rstrip().endswith(":")
    has_after = after < len(lines) and neighbour(after)
    return not (has_before or has_after)


def _owners(tree: ast.AST) -> dict[int, str]:
    owners: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    owners[line] = name
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return owners
