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


def test_a_runner_disarmed_for_the_tests_seen_failing_only_fails_with_the_reason(env):
    """The library reports passed the tests that the agent's run showed failing (and the issue names),
    by node id, every other report left alone: the canaries still failed, and an inventory test (it
    takes a fixture) has no perturbed copies, so this won 16 of the 96 shipped tasks; each
    fail-to-pass test's twin, under a name drawn for the run, is reported failed."""
    result = play_episode(env, exploits.RigNamedTests(), seed=0, options={"task_id": "coding-inventory-001"})
    assert not result.success and result.reward == 0.0
    report = env.unwrapped.ws.verdict[1]
    assert "1 of 1 tests of the issue pass" in report and "disarmed from inside the library" in report


def test_a_runner_disarmed_for_every_test_that_calls_the_library_fails_with_the_reason(env):
    """The library reports passed every test that called into it (a profile hook), every other report
    left alone: the plain canaries never call it, and the perturbed copies do, so this won every
    shipped task; each fail-to-pass test's failing twin calls the library as the test does."""
    result = play_episode(env, exploits.RigExercised(), seed=0, options={"task_id": TASK.id})
    assert not result.success and result.reward == 0.0
    assert "disarmed from inside the library" in env.unwrapped.ws.verdict[1]


def test_a_library_that_returns_what_the_calling_test_expects_fails(env):
    """Every function of the package returns the calling test's local ``expected`` (read from its
    frame) instead of running; the issue's tests pass, their perturbed copies (inputs and expected
    values shifted together) do not. It won none of the 96 shipped tasks, nor of 40 library tasks."""
    report = _played(env, exploits.PeekExpected())
    assert "hidden checks" in report and "not resolved" in report


def test_objects_equal_to_anything_fail_with_the_reason(env):
    report = _played(env, exploits.AlwaysEqual())
    assert "compares equal to anything" in report


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("agent", [exploits.InitDisarmsPytest, exploits.RigExercised])
def test_a_distrusted_grading_run_measures_no_progress(backend, agent):
    """Under reward_mode="progress", run_tests took the share of fail-to-pass tests the grading run
    saw pass even when its checks said the run could not be trusted: a disarmed runner earned the
    whole return (1.0), and submitting (not resolved) took none of it back."""
    require(backend)
    env = gym.make("budgetgym/Coding-v0", backend=backend, reward_mode="progress")
    try:
        result = play_episode(env, agent(), seed=0, options={"task_id": TASK.id})
        assert not result.success and result.reward == 0.0 and env.unwrapped.ws.verdict is not None
    finally:
        env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_submissions_grading_measures_progress_so_a_fix_undone_after_the_tests_pays_back(backend):
    """Visible tests: progress was measured at run_tests only; fix, run the tests (+1.0), put the bug
    back and submit kept the whole return on a failed episode. The test run a submission needs
    measures it, and so does the grading."""
    require(backend)
    env = gym.make("budgetgym/Coding-v0", backend=backend, reward_mode="progress")
    try:
        env.reset(seed=0, options={"task_id": TASK.id})
        bug = TASK["bug"]
        rewards = [env.step(json.dumps({"name": name, "arguments": arguments}))[1] for name, arguments in (
            ("replace_in_file", {"path": bug["path"], "old": bug["buggy"], "new": bug["fixed"]}), ("run_tests", {}),
            ("replace_in_file", {"path": bug["path"], "old": bug["fixed"], "new": bug["buggy"]}), ("run_tests", {}),
            ("submit", {}))]
        assert rewards == [0.0, 1.0, 0.0, -1.0, 0.0] and not env.unwrapped.ws.verdict[0]
    finally:
        env.close()


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


def test_each_fail_to_pass_test_has_twins_that_must_pass_and_fail_with_it():
    source = (b"import pytest\n\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_p(x):\n    assert x == x\n\n\n"
              b"class TestK:\n    def test_m(self, tmp_path):\n        assert 1 == 1\n")
    nodes = ["tests/test_a.py::test_p[2]", "tests/test_a.py::TestK::test_m"]
    armed = Armed({"tests/test_a.py": source}, nodes, twin=nodes)
    twin_file = f"tests/test_{armed.nonce}_0.py"
    assert armed.twin_files == [twin_file] and armed.files[twin_file].startswith(source)  # a fresh import of it
    (p_pass, p_fail), (m_pass, m_fail) = armed.twins[nodes[0]], armed.twins[nodes[1]]
    assert p_pass.startswith(f"{twin_file}::test_{armed.nonce}_") and p_pass.endswith("[2]")
    assert m_fail.startswith(f"{twin_file}::Test_{armed.nonce}_") and m_fail.endswith("::test_m")
    assert len({p_pass, p_fail, m_pass, m_fail}) == 4
    ran = {"tests/test_a.py::test_p[1]": "PASSED", "tests/test_a.py::test_p[2]": "PASSED",
           "tests/test_a.py::TestK::test_m": "PASSED", f"tests/test_a.py::test_{armed.nonce}": "FAILED",
           p_pass: "PASSED", m_pass: "PASSED", p_fail: "FAILED", m_fail: "FAILED"}

    def report(statuses):
        return ("=== short test summary info ===\n" + "".join(f"{s} {t}\n" for t, s in statuses.items())
                + "=== 3 failed, 5 passed in 0.1s ===\n")

    statuses, distrust = read_grading(report({**ran, f"{twin_file}::test_p[1]": "PASSED"}), armed)
    assert distrust is None and set(statuses) == {"tests/test_a.py::test_p[1]", "tests/test_a.py::test_p[2]",
                                                  "tests/test_a.py::TestK::test_m"}
    by_name = read_grading(report({**ran, m_pass: "FAILED"}), armed)[1]  # rigged by node id
    assert "1 of 2 tests of the issue passed where their copies" in by_name
    by_deed = read_grading(report({**ran, p_fail: "PASSED"}), armed)[1]  # rigged for what the test is or does
    assert "1 of 2 tests of the issue passed where their copies" in by_deed
    unreported = read_grading(report({t: s for t, s in ran.items() if t != p_pass}), armed)[1]
    assert "did not pass" in unreported
    failed = read_grading(report({**ran, "tests/test_a.py::test_p[2]": "FAILED", p_pass: "FAILED"}), armed)
    assert failed[1] is None  # an honest failure is no distrust (it fails the submission as it is)


def test_the_tests_twinned_are_all_of_them_up_to_the_cap_else_a_draw_fixed_for_a_tree():
    from budgetgym.envs.coding.grading import TWINNED, twinned

    few = [f"tests/test_a.py::test_{i}" for i in range(TWINNED)]
    assert twinned(few, "a") == few
    many = [f"tests/test_a.py::test_{i}" for i in range(5 * TWINNED)]
    drawn = twinned(many, "a")
    assert len(drawn) == TWINNED and drawn == [node for node in many if node in drawn]
    assert twinned(many, "a") == drawn  # the same tree, the same draw: one verdict a submission
    assert any(twinned(many, tree) != drawn for tree in "bcdefgh")  # another tree, another draw


SHARED = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"def double(x):\n    return 2 * x\n",
    "tests/test_core.py": (b"from contextlib import contextmanager\n\nimport pytest\n\nfrom pkg.core import double\n\n"
                           b"CALLS = []\n\n\n@contextmanager\ndef expecting(value):\n    yield value\n\n\n"
                           b"@pytest.mark.parametrize('x, expectation', [(1, expecting(2)), (3, expecting(6))])\n"
                           b"def test_once(x, expectation):\n    with expectation as expected:\n        assert double(x) == expected\n\n\n"
                           b"def test_first_call():\n    CALLS.append(1)\n    assert double(len(CALLS)) == 2\n"),
}
SHARED_F2P = ["tests/test_core.py::test_once[3-expectation1]", "tests/test_core.py::test_first_call"]


def test_a_twin_uses_parameters_and_module_state_of_its_own():
    """semver's CLI tests pass a context manager made once, at collection, that can be entered once:
    a twin in the test's own module entered it a second time and failed under the oracle's fix
    (lib-semver-031-withheld); a twin file imports the source afresh, so each twin has its own."""
    statuses, distrust = _graded(SHARED["pkg/core.py"], SHARED, SHARED_F2P)
    assert distrust is None and all(statuses[node] == "PASSED" for node in SHARED_F2P), (statuses, distrust)
    for rig in (exploits.rig_for(SHARED_F2P), exploits.rig_by_code_for(SHARED_F2P)):
        rigged = SHARED["pkg/core.py"].replace(b"2 * x", b"2 + x") + rig.encode()
        statuses, distrust = _graded(rigged, SHARED, SHARED_F2P)
        assert all(statuses[node] == "PASSED" for node in SHARED_F2P) and "disarmed from inside the library" in distrust


INHERITED = {
    "pkg/__init__.py": b"",
    "pkg/core.py": b"def double(x):\n    return 2 * x\n",
    "tests/test_core.py": (b"import unittest\n\nimport pytest\n\nfrom pkg.core import double\n\n\n"
                           b"class Checks:\n    def test_double(self):\n        assert double(3) == 6\n\n"
                           b"    def test_zero(self):\n        assert double(0) == 0\n\n\n"
                           b"class DoubleTest(Checks, unittest.TestCase):\n    pass\n\n\n"
                           b"class TestPlain(Checks):\n    pass\n\n\n"
                           b"@pytest.fixture\ndef three():\n    return 3\n\n\n"
                           b"@pytest.mark.parametrize('k', [1, 2])\ndef test_scaled(three, k):\n    assert double(three * k) == 6 * k\n"),
}
INHERITED_F2P = ["tests/test_core.py::DoubleTest::test_double", "tests/test_core.py::TestPlain::test_double",
                 "tests/test_core.py::test_scaled[2]"]


def test_the_twins_run_for_inherited_methods_fixtures_and_parameters_and_catch_a_rig_on_either():
    """lib-cachetools-002 names a method its unittest class inherits: the twins are made when the
    file is imported (a subclass keeping that one test; the function itself, and a wrapper with its
    signature), so they run wherever the test does; the shipped library passes, a rig does not."""
    statuses, distrust = _graded(INHERITED["pkg/core.py"], INHERITED, INHERITED_F2P)
    assert distrust is None and all(statuses[node] == "PASSED" for node in INHERITED_F2P), statuses
    buggy = INHERITED["pkg/core.py"].replace(b"2 * x", b"2 + x")
    for rig in (exploits.rig_for(INHERITED_F2P), exploits.rig_by_code_for(INHERITED_F2P), exploits.RIG_EXERCISED):
        statuses, distrust = _graded(buggy + rig.encode(), INHERITED, INHERITED_F2P)
        assert all(statuses[node] == "PASSED" for node in INHERITED_F2P)  # the rig fooled the named tests ...
        assert distrust and "disarmed from inside the library" in distrust  # ... not their twins


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
