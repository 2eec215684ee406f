"""One file name per role in every family (CONTRIBUTING.md, "Adding a family"):

* ``assets.py``: the one command that rebuilds the family's shipped data
  (``python -m budgetgym.envs.<family>.assets``);
* ``generate.py``: seeded task generators, library code with no command of its own;
* ``mistakes.py``: the family's mistake kinds, what ``propose_mistake`` asks;
* no ``failures.py`` under ``envs/``: the failure-state builder is the core's (``core/failures.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "budgetgym"
ENVS = PACKAGE / "envs"
ASSETS = PACKAGE / "assets"


def _has_main(path: Path) -> bool:
    """Whether the module runs as a command (an ``if __name__ == "__main__":`` block)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def _env_folders() -> list[Path]:
    return sorted(path.parent for path in ENVS.rglob("env.py"))


def test_no_family_has_a_failures_module():
    assert sorted(str(p.relative_to(PACKAGE)) for p in ENVS.rglob("failures.py")) == []


@pytest.mark.parametrize("folder", sorted(p.name for p in ASSETS.iterdir() if p.is_dir()))
def test_a_family_with_shipped_data_rebuilds_it_from_assets_py(folder):
    module = ENVS / folder / "assets.py"
    assert module.is_file(), f"budgetgym/assets/{folder}/ is shipped but envs/{folder}/assets.py is missing"
    assert _has_main(module), f"envs/{folder}/assets.py has no command (python -m budgetgym.envs.{folder}.assets)"


def test_generators_have_no_command_of_their_own():
    commands = [str(p.relative_to(PACKAGE)) for p in ENVS.rglob("generate.py") if _has_main(p)]
    assert commands == [], f"the rebuild command is assets.py's: {commands}"


@pytest.mark.parametrize("folder", [p.relative_to(ENVS).as_posix() for p in _env_folders()])
def test_a_family_that_proposes_mistakes_keeps_them_in_mistakes_py(folder):
    env = ENVS / folder / "env.py"
    proposes = any(isinstance(node, ast.FunctionDef) and node.name == "propose_mistake"
                   for node in ast.walk(ast.parse(env.read_text())))
    if proposes:
        assert (ENVS / folder / "mistakes.py").is_file(), f"envs/{folder}/env.py proposes mistakes: mistakes.py"
