"""No package reads another budgetgym package's private names (``obj._name`` defined there): what
another package needs has a public name (``TextEnv.parse``, ``render_oracle``, ``current_info``)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import budgetgym

ROOT = Path(budgetgym.__file__).parent
#: Packages whose modules share their private names; a family is one (its sub-packages with it).
SPLIT = {"envs": 2}


def package_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    depth = SPLIT.get(parts[0], 1)
    return ".".join(parts[:depth]) if len(parts) > depth else parts[0]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8"), str(path)) for path in sorted(ROOT.rglob("*.py"))
            if "assets" not in path.relative_to(ROOT).parts}


def defined_private_names(trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Private attribute names each package defines: methods and class attributes, and ``self._x``
    assignments."""
    owners: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees.items():
        package = package_of(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    names = [item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                        [t.id for t in getattr(item, "targets", [getattr(item, "target", None)])
                         if isinstance(t, ast.Name)]
                    owners.update({n: owners[n] | {package} for n in names if is_private(n)})
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and is_private(node.attr) \
                    and isinstance(node.value, ast.Name) and node.value.id == "self":
                owners[node.attr].add(package)
    return owners


def foreign_reads(trees: dict[Path, ast.Module]) -> list[str]:
    owners = defined_private_names(trees)
    found = []
    for path, tree in trees.items():
        package = package_of(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not is_private(node.attr):
                continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                continue
            defining = owners.get(node.attr, set())
            if defining and package not in defining:
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: .{node.attr} "
                             f"(defined in {', '.join(sorted(defining))})")
    return found


def test_no_package_reads_another_packages_private_names():
    assert foreign_reads(modules()) == []


def test_the_check_finds_a_foreign_private_read(tmp_path):
    trees = {ROOT / "core" / "x.py": ast.parse("class A:\n    def _hook(self):\n        pass\n"),
             ROOT / "train" / "y.py": ast.parse("def f(base):\n    return base._hook()\n")}
    assert foreign_reads(trees) == ["budgetgym/train/y.py:2: ._hook (defined in core)"]
