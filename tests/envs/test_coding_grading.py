"""Coding-v0's grading is out of the agent's reach: one test per attack class, on both backends.

Each attack is played by its exploit agent (``budgetgym.eval.exploits.coding``, the agents
``budgetgym probe exploits`` runs); every one of them won on the grading before this (it reused the
agent's own test run, ran the agent's tree as it was, or ran in the agent's interpreter set-up).
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_tasks
from budgetgym.envs.coding.grading import Armed, graded_tree, read_grading
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.exploits import coding as exploits
from coding_support import BACKENDS, require

TASK = next(t for t in load_tasks("coding") if t.split == "train")


@pytest.fixture(scope="module", params=BACKENDS)
def env(request):
    require(request.param)
    environment = gym.make("budgetgym/Coding-v0", backend=request.param)
    yield environment
    environment.close()


def _played(env, agent) -> str:
    result = play_episode(env, agent, seed=0, options={"task_id": TASK.id})
    assert not result.success and result.reward == 0.0
    return env.unwrapped.ws.verdict[1]


def test_a_symlinked_conftest_and_the_agents_own_test_run_do_not_count(env):
    report = _played(env, exploits.SymlinkedConftest())
    assert "not resolved" in report and ".hooks/passing.py" in report


def test_a_plugin_in_the_user_site_is_not_loaded_by_grading(env):
    report = _played(env, exploits.UserSitePlugin())
    assert "not resolved" in report and "budget_passing.pth" in report


def test_a_pytest_module_at_the_root_does_not_shadow_pytest(env):
    report = _played(env, exploits.ShadowPytest())
    assert "not resolved" in report and "pytest.py" in report


def test_a_library_that_disarms_pytest_at_import_fails_with_the_reason(env):
    report = _played(env, exploits.InitDisarmsPytest())
    assert "disarmed from inside the library" in report


def test_bytecode_with_an_unchecked_hash_is_not_graded(env):
    report = _played(env, exploits.UncheckedPyc())
    assert "__pycache__" in report and "not resolved" in report


def test_objects_equal_to_anything_fail_with_the_reason(env):
    report = _played(env, exploits.AlwaysEqual())
    assert "compares equal to anything" in report


def test_run_tests_measures_progress_on_the_grading_tree(env):
    env.reset(options={"task_id": TASK.id})
    agent = exploits.SymlinkedConftest()
    agent.reset(env, "", {}, 0)
    for action in agent.plan():
        observation, _, _, _, info = env.step(action)
    assert "failed" not in observation.split("short test summary info")[-1]  # the agent's own run: all passed
    assert info["progress"] == 0.0


def test_the_graded_tree_holds_the_original_tests_and_library_sources_only():
    original = {"pkg/__init__.py": b"", "pkg/core.py": b"x = 1\n", "README.md": b"r", "tests/test_core.py": b"t"}
    files = {
        "pkg/__init__.py": b"import os\n", "pkg/core.py": b"x = 2\n", "pkg/helpers.py": b"h = 1\n",
        "README.md": b"r", "tests/test_core.py": b"def test_x(): pass\n", "tests/test_new.py": b"",
        "conftest.py": b"", "pkg/conftest.py": b"", "pytest.py": b"", "sitecustomize.py": b"", "evil.pth": b"",
        "pkg/evil.pth": b"", "pkg/__pycache__/core.cpython-311.pyc": b"", "pkg/core.pyc": b"", "pyproject.toml": b"",
        "setup.cfg": b"", "tox.ini": b"", "pytest.ini": b"", "pkg/sub/new.py": b"", "notes.txt": b"",
    }
    tree, left_out = graded_tree(files, original)
    assert tree == {"pkg/__init__.py": b"import os\n", "pkg/core.py": b"x = 2\n", "pkg/helpers.py": b"h = 1\n",
                    "README.md": b"r", "tests/test_core.py": b"t"}
    assert set(left_out) == set(files) - set(tree) | {"tests/test_core.py"}


def test_a_missing_canary_is_a_disarmed_runner():
    armed = Armed({"tests/test_a.py": b"def test_a():\n    assert 1 == 1\n"})
    source = armed.files["tests/test_a.py"].decode()
    assert f"def test_{armed.nonce}()" in source and f"{armed.guard}(1, 'tests/test_a.py:2:11:0')" in source
    honest = (f"=== short test summary info ===\nPASSED tests/test_a.py::test_a\n"
              f"FAILED tests/test_a.py::test_{armed.nonce} - assert\n=== 1 failed, 1 passed in 0.1s ===\n")
    assert read_grading(honest, armed) == ({"tests/test_a.py::test_a": "PASSED"}, None)
    forged = "=== short test summary info ===\nPASSED tests/test_a.py::test_a\n=== 1 passed in 0.1s ===\n"
    assert "not reported" in read_grading(forged, armed)[1]
    assert Armed({"tests/test_a.py": b""}).nonce != armed.nonce  # drawn per run


def test_the_oracle_still_solves_under_the_armed_grading(env):
    observation, info = env.reset(options={"task_id": TASK.id})
    for _ in range(TASK.max_turns):
        observation, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        if terminated or truncated:
            break
    assert info["success"] and reward == 1.0, observation
    assert json.loads(json.dumps(env.unwrapped.snapshot()))["state"]["verdict"] is True


# ---------------------------------------------------------------- the guard's precision, the perturbed checks

LIBRARY = {
    "pkg/__init__.py": b"",
    "pkg/core.py": (b"class Wildcard:\n    __hash__ = object.__hash__\n\n    def __eq__(self, other):\n        return True\n\n\n"
                    b"def wildcard():\n    return Wildcard()\n\n\ndef double(x):\n    return 2 * x\n\n\n"
                    b"def name():\n    return 'pkg'\n"),
    "tests/test_core.py": (b"from pkg.core import double, name, wildcard\n\n\n"
                           b"def test_wildcard_matches():\n    assert wildcard() == 3\n\n\n"
                           b"def test_double():\n    assert double(3) == 6\n    assert double(-1) == -2\n\n\n"
                           b"def test_name():\n    assert name() == 'pkg'\n"),
}
F2P = ["tests/test_core.py::test_double"]


def _graded(core: bytes, library=LIBRARY, fail_to_pass=F2P):
    from budgetgym.envs.coding.grading import run_grading
    from budgetgym.envs.coding.sandbox import make_sandbox

    require("local")
    files = {**library, "pkg/core.py": core}
    with make_sandbox("local") as box:
        box.load({})
        return run_grading(box.run_isolated, graded_tree(files, library)[0], library, fail_to_pass)


def test_a_permissive_eq_the_shipped_library_has_passes_and_a_new_one_fails():
    """The guard flagged every value equal to a sentinel, so a library whose own API returns a
    wildcard (toolz's tests compare such values) could never be solved; now only a value equal to
    anything where the shipped library's is not fails the submission."""
    statuses, distrust = _graded(LIBRARY["pkg/core.py"])
    assert distrust is None and set(statuses.values()) == {"PASSED"}, statuses
    exploit = LIBRARY["pkg/core.py"].replace(b"def name():\n    return 'pkg'", b"def name():\n    return Wildcard()")
    statuses, distrust = _graded(exploit)
    assert distrust and "compares equal to anything" in distrust


def test_special_casing_the_tests_literal_inputs_fails_the_perturbed_checks():
    buggy = LIBRARY["pkg/core.py"].replace(b"return 2 * x", b"return 2 + x")
    special = buggy.replace(b"def double(x):\n", b"def double(x):\n    if x == 3:\n        return 6\n"
                                                 b"    if x == -1:\n        return -2\n")
    statuses, distrust = _graded(special)
    assert statuses["tests/test_core.py::test_double"] == "PASSED"  # the visible test is fooled ...
    assert distrust and "beyond the tests' own inputs" in distrust  # ... the shifted inputs are not
    refactored = LIBRARY["pkg/core.py"].replace(b"return 2 * x", b"return x + x")
    assert _graded(refactored)[1] is None  # an equivalent fix passes them


TIPS = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"def with_tip(total, percent=15):\n    return total + (total * percent + 50) // 100\n",
    "tests/test_core.py": (b"from pkg.core import with_tip\n\n\ndef test_with_tip():\n    assert with_tip(1000) == 1150\n"
                           b"    assert with_tip(335, 10) == 369\n\n\n"
                           b"def test_bound_total():\n    total = 335\n    assert with_tip(total, 10) == 369\n"),
}


@pytest.mark.parametrize("test", ["test_with_tip", "test_bound_total"])
def test_a_bug_on_a_residue_the_small_shifts_keep_clear_of_still_fails_the_perturbed_checks(test):
    """coding-splitbill-002: rounding half a cent down shows only where total * percent ends in 50;
    shifted by 1 or 2, doubled, the tests' inputs never do, so a table of the tests' own answers in
    front of the bug won. A shift by 100 keeps the residue; an input bound to a name is shifted too."""
    buggy = TIPS["pkg/core.py"].replace(b"+ 50)", b"+ 49)")
    special = buggy + b"\n_bug = with_tip\n\n\ndef with_tip(total, percent=15):\n    return 369 if (total, percent) == (335, 10) else _bug(total, percent)\n"
    statuses, distrust = _graded(special, TIPS, [f"tests/test_core.py::{test}"])
    assert statuses[f"tests/test_core.py::{test}"] == "PASSED"
    assert distrust and "beyond the tests' own inputs" in distrust
    assert _graded(TIPS["pkg/core.py"], TIPS, [f"tests/test_core.py::{test}"])[1] is None


NAMES = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"def label(text):\n    return text.upper()\n",
    "tests/test_core.py": (b"from pkg.core import label\n\n\nclass Local:\n    pass\n\n\n"
                           b"def test_label():\n    assert label('ab') == 'AB'\n    assert hash(label('ab')) == hash('AB')\n"
                           b"    assert type(Local()) == Local\n"),
}


@pytest.mark.parametrize("package", [False, True], ids=["tests-folder", "tests-package"])
def test_the_shipped_fix_passes_the_perturbed_checks_whose_records_name_the_test_module_or_a_hash(package):
    """The pinned fix of 33 semver and six bugs (and of toolz's) failed its own perturbed checks: the
    reference run executed the copies in a namespace named ``_budgetgym_reference`` while pytest names
    the module ``test_core`` (``tests.test_core`` in a package), so a record naming a class the test
    defines (``<class 'test_core.Local'>``, six's generics) differed; and a str's hash (semver's
    ``hash(version)``) differs per process (``python -I`` draws a hash seed per process), while the
    reference ran its copies twice in one process. The reference now runs under pytest's module
    name, and what differs between two reference processes checks nothing."""
    library = {**NAMES, "tests/__init__.py": b""} if package else NAMES
    fail_to_pass = ["tests/test_core.py::test_label"]
    assert _graded(NAMES["pkg/core.py"], library, fail_to_pass)[1] is None
    special = b"def label(text):\n    return 'AB' if text == 'ab' else text\n"
    statuses, distrust = _graded(special, library, fail_to_pass)
    assert statuses["tests/test_core.py::test_label"] == "PASSED"
    assert distrust and "beyond the tests' own inputs" in distrust  # the checks still check


def test_a_tree_graded_before_in_the_same_kind_of_sandbox_keeps_its_verdict():
    from budgetgym.envs.coding.grading import run_grading
    from budgetgym.envs.coding.sandbox import make_sandbox

    require("local")
    runs = []
    tree = graded_tree({**LIBRARY, "pkg/core.py": LIBRARY["pkg/core.py"].replace(b"2 * x", b"2 + x")}, LIBRARY)[0]
    with make_sandbox("local") as box:
        box.load({})

        def counted(files, command, timeout=None):
            runs.append(command)
            return box.run_isolated(files, command, timeout)

        where = (*box.grading_identity(), TASK.id)  # a key no other test shares
        first = run_grading(counted, tree, LIBRARY, F2P, where=where)
        assert first[0]["tests/test_core.py::test_double"] == "FAILED"
        ran = len(runs)  # the reference records, the grading (and the record mode, the first time)
        assert run_grading(counted, tree, LIBRARY, F2P, where=where) == first and len(runs) == ran
        assert run_grading(counted, tree, LIBRARY, F2P, where=(*where, "another limit")) == first
        assert len(runs) > ran  # another kind of sandbox runs it
        for _ in range(2):
            ran = len(runs)
            assert run_grading(counted, tree, LIBRARY, F2P) == first and len(runs) > ran  # no where: always run
        ran = len(runs)
        fixed = graded_tree(LIBRARY, LIBRARY)[0]
        assert run_grading(counted, fixed, LIBRARY, F2P, where=where)[1] is None and len(runs) == ran + 1

        def stopped(files, command, timeout=None):
            runs.append(command)
            return box.run_isolated(files, "sleep 5", timeout=0.2)

        tree_b = {**tree, "pkg/extra.py": b""}
        run_grading(stopped, tree_b, LIBRARY, F2P, where=where)
        run_grading(stopped, tree_b, LIBRARY, F2P, where=where)
        assert len(runs) == ran + 3  # a run stopped by the time limit is no verdict to keep
        fresh = (*where, "a fresh kind")
        statuses, distrust = run_grading(stopped, fixed, LIBRARY, F2P, where=fresh)
        assert "reference run did not finish" in distrust  # fails closed: no hidden check skipped
        assert run_grading(counted, fixed, LIBRARY, F2P, where=fresh)[1] is None  # and runs it again


def test_no_graded_run_holds_the_shipped_library():
    """The perturbed checks' reference records came from the shipped library laid beside the
    agent's in the graded tree, where the agent's code (running in that process) could read the fix."""
    from budgetgym.envs.coding.grading import GRADING_COMMAND, run_grading
    from budgetgym.envs.coding.sandbox import make_sandbox

    require("local")
    buggy = LIBRARY["pkg/core.py"].replace(b"return 2 * x", b"return 2 + x")
    graded = []
    with make_sandbox("local") as box:
        box.load({})

        def seen(files, command, timeout=None):
            if command == GRADING_COMMAND:
                graded.append(files)
            return box.run_isolated(files, command, timeout)

        statuses, distrust = run_grading(seen, graded_tree({**LIBRARY, "pkg/core.py": buggy}, LIBRARY)[0], LIBRARY, F2P)
    assert statuses["tests/test_core.py::test_double"] == "FAILED" and graded
    assert not any(data == LIBRARY["pkg/core.py"] for files in graded for data in files.values())
