"""Coding tasks in pinned real libraries: pins, fetching, bug synthesis, the shipped set, the oracle in the env."""

from __future__ import annotations

import collections
import io
import json
import re
import tarfile

import pytest

from budgetgym.core import TaskSet, full_budget, rollout
from budgetgym.envs.coding.generate import run_suite
from budgetgym.envs.coding.libraries import TASKS_FILE, FetchError, library_files, library_tasks, pins
from budgetgym.envs.coding.libraries import fetch
from budgetgym.envs.coding.libraries import build as libraries_build
from budgetgym.envs.coding.libraries.build import DEFAULT_COUNTS, TIERS, build, build_library, built_path, \
    counts_for, merged, oracle_turns
from budgetgym.envs.coding.libraries.screen import Screen
from budgetgym.envs.coding.libraries.synth import Site, apply_sites, compatible, library_mutations, replay_fixes, \
    task_files, withhold

SMALL = "inflection"  # one module, one test file, a setuptools sdist: the quickest to fetch and run


def test_pins_name_a_version_a_sha256_a_licence_and_a_layout_with_tests():
    assert len(pins()) >= 8
    for name, pin in pins().items():
        assert re.fullmatch(r"[0-9a-f]{64}", pin["sha256"]), name
        assert pin["license"] in ("MIT", "BSD-3-Clause", "Apache-2.0"), name
        assert pin["split"] in ("train", "test"), name
        assert any(target.startswith("tests") for target in pin["layout"].values()), name
    assert {pin["split"] for pin in pins().values()} == {"train", "test"}


def test_a_sdist_whose_sha256_is_not_the_pin_is_refused_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("BUDGETGYM_CACHE", str(tmp_path))
    folder = fetch.cache_dir() / "sdists"
    folder.mkdir(parents=True)
    forged = folder / f"{SMALL}-{pins()[SMALL]['version']}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = b"raise SystemExit('forged')\n"
        info = tarfile.TarInfo(f"{SMALL}-0.5.1/test_inflection.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    forged.write_bytes(buffer.getvalue())
    with pytest.raises(FetchError, match="is not the pinned"):
        fetch.sdist(SMALL)
    assert not forged.exists()


def test_the_layout_lifts_code_to_the_root_and_tests_under_tests():
    assert fetch._placed("src/cachetools/keys.py", {"src/cachetools": "cachetools", "tests": "tests"}) == "cachetools/keys.py"
    layout = {"toolz": "toolz", "toolz/tests": "tests"}
    assert fetch._placed("toolz/tests/test_x.py", layout) == "tests/test_x.py"
    assert fetch._placed("toolz/itertoolz.py", layout) == "toolz/itertoolz.py"
    assert fetch._placed("setup.py", layout) is None


SOURCE = '''def clamp(value, low, high):
    if value < low:
        return low
    result = min(value, high)
    return result


def span(first, second):
    return second - first
'''


def test_the_extra_operators_remove_statements_and_swap_arguments():
    found = library_mutations("lib.py", SOURCE)
    operators = {m.operator for m in found}
    assert {"removed_statement", "swapped_arguments", "flip_comparison", "dropped_branch"} <= operators
    swapped = [m for m in found if m.operator == "swapped_arguments"]
    assert any("min(high, value)" in m.source for m in swapped)


def test_sites_put_in_together_are_fixed_one_by_one_back_to_the_original():
    original = {"lib.py": SOURCE}
    sites = [Site("lib.py", "flip_comparison", "clamp", "    if value <= low:\n", "    if value < low:\n", 2),
             Site("lib.py", "swap_arithmetic", "span", "    return second + first\n", "    return second - first\n", 9)]
    assert compatible(sites)
    buggy = apply_sites(original, sites)["lib.py"]
    assert "value <= low" in buggy and "second + first" in buggy
    assert replay_fixes(original, [s.record() for s in sites])
    neighbour = Site("lib.py", "off_by_one", "clamp", "        return low + 1\n", "        return low\n", 3)
    assert not compatible([sites[0], neighbour])


def test_withholding_cuts_the_named_tests_and_keeps_the_rest():
    tests = ("import pytest\n\n\ndef test_kept():\n    assert True\n\n\n@pytest.mark.parametrize('x', [1])\n"
             "def test_cut(x):\n    assert x\n\n\nclass TestBox:\n    def test_gone(self):\n        assert 0\n")
    cut = withhold({"tests/test_a.py": tests}, ["tests/test_a.py::test_cut[1]", "tests/test_a.py::TestBox::test_gone"])
    text = cut["tests/test_a.py"]
    assert "def test_kept" in text and "test_cut" not in text and "test_gone" not in text
    assert "parametrize" not in text
    compile(text, "test_a.py", "exec")


def test_the_shipped_set_has_three_tiers_both_modes_and_unseen_libraries_on_test():
    tasks = list(library_tasks())
    assert tasks, TASKS_FILE
    tiers = collections.Counter(t.data["tier"] for t in tasks)
    assert set(tiers) == set(TIERS)
    by_id = {t.id: t for t in tasks}
    for task in tasks:
        data = task.data
        low, high = TIERS[data["tier"]]
        assert low <= len(data["sites"]) <= high
        assert data["oracle_turns"] == oracle_turns(len(data["sites"]))
        assert data["fail_to_pass"] and data["pass_to_pass"]
        assert not set(data["fail_to_pass"]) & set(data["pass_to_pass"])
        twin = task.id[: -len("-withheld")] if task.id.endswith("-withheld") else task.id + "-withheld"
        assert by_id[twin].split == task.split and by_id[twin].data["sites"] == data["sites"]
    held_out = {name for name, pin in pins().items() if pin["split"] == "test"}
    train_libraries = {t.data["library"] for t in tasks if t.split == "train"}
    assert held_out and not held_out & train_libraries
    assert {t.data["library"] for t in tasks if t.split == "test"} - held_out  # unseen tasks of seen libraries
    assert max(t.data["oracle_turns"] for t in tasks) >= 25 and min(t.data["oracle_turns"] for t in tasks) <= 5


def test_a_built_task_fails_its_tests_and_the_oracle_solves_it_in_both_modes():
    records = build_library(SMALL, seed=1, singles=2, per_tier={"easy": 1, "medium": 1, "hard": 0}, log=lambda m: None)
    medium = [r for r in records if r["tier"] == "medium"]
    assert {r["tests"] for r in medium} == {"visible", "withheld"}
    visible, withheld = sorted(medium, key=lambda r: r["tests"] == "withheld")
    initial, original = task_files(visible)
    statuses, _ = run_suite({p: d.decode() for p, d in initial.items()})
    assert all(statuses[node] != "PASSED" for node in visible["fail_to_pass"])
    assert all(statuses[node] == "PASSED" for node in visible["pass_to_pass"])
    hidden, _ = task_files(withheld)
    test_text = "".join(d.decode() for p, d in hidden.items() if p.startswith("tests/"))
    for node in withheld["fail_to_pass"]:
        assert f"def {node.split('::')[-1].split('[')[0]}(" not in test_text
    from budgetgym.envs.coding.env import CodingEnv

    env = CodingEnv(tasks=TaskSet([withheld]))
    try:
        run = rollout(env, "oracle", seed=0)
    finally:
        env.close()
    assert run.success and run.turns == withheld["oracle_turns"]
    assert set(library_files(SMALL)) == set(original)


def test_the_splits_are_disjoint_and_hold_whole_unseen_libraries():
    tasks = list(library_tasks())
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids))
    bug = lambda t: json.dumps(t.data["sites"], sort_keys=True)  # noqa: E731
    by_split = {split: {bug(t) for t in tasks if t.split == split} for split in ("train", "test")}
    assert by_split["train"] and by_split["test"] and not by_split["train"] & by_split["test"]
    held_out = {name for name, pin in pins().items() if pin["split"] == "test"}
    assert len(held_out) >= 2
    for task in tasks:
        if task.data["library"] in held_out:
            assert task.split == "test", task.id


def test_oracle_turns_follow_the_sites_and_full_budgets_reach_fifty():
    tasks = list(library_tasks())
    turns = collections.Counter(t.data["oracle_turns"] for t in tasks)
    for task in tasks:
        low, high = TIERS[task.data["tier"]]
        assert oracle_turns(low) <= task.data["oracle_turns"] <= oracle_turns(high)
        assert task.data["max_turns"] == full_budget(task.data["oracle_turns"])
    assert min(turns) <= 5 and max(turns) >= 25 and len(turns) >= 6
    assert max(t.data["max_turns"] for t in tasks) >= 50


def test_the_shipped_set_meets_the_bar_of_600_tasks_in_8_libraries():
    tasks = list(library_tasks())
    assert len(tasks) >= 600 and len({t.data["library"] for t in tasks}) >= 8
    per_tier = collections.Counter((t.data["tier"], t.split) for t in tasks)
    assert all(per_tier[(tier, split)] for tier in TIERS for split in ("train", "test")), per_tier


def test_no_test_bug_shares_a_site_with_a_training_bug():
    tasks = list(library_tasks())
    site = lambda s: (s["path"], s["line"], s["buggy"])  # noqa: E731
    by_split = {split: {(t.data["library"], site(s)) for t in tasks if t.split == split for s in t.data["sites"]}
                for split in ("train", "test")}
    assert by_split["train"] and not by_split["train"] & by_split["test"]


def test_the_screen_agrees_with_a_full_run_and_leaves_the_library_as_it_was():
    files = dict(library_files(SMALL))
    mutations = library_mutations("inflection/__init__.py", files["inflection/__init__.py"])
    caught = next(m for m in mutations if m.function == "pluralize" and m.operator == "swap_boolean")
    at_import = next(m for m in mutations if m.function == "_irregular" and m.operator == "swapped_arguments")
    baseline = {n for n, s in run_suite(files)[0].items() if s == "PASSED"}
    with Screen(files) as screen:
        assert baseline <= {n for n, s in screen.statuses.items() if s == "PASSED"}
        verdict = screen.check({caught.path: caught.source})
        assert verdict["verdict"] == "caught" and verdict["failing"]
        full = run_suite({**files, caught.path: caught.source})[0]
        assert all(full[n] != "PASSED" for n in verdict["failing"])
        # _irregular runs when the module is imported: only a fresh import can tell, so the screen does not judge it
        assert screen.check({at_import.path: at_import.source})["verdict"] == "unknown"
        assert screen.check({caught.path: files[caught.path]})["verdict"] == "missed"
        assert (screen.root / caught.path).read_text() == files[caught.path]


def test_a_built_library_is_read_from_the_cache_and_merged_by_library(tmp_path, monkeypatch):
    monkeypatch.setenv("BUDGETGYM_CACHE", str(tmp_path))
    singles, counts = counts_for(SMALL, None, {"hard": 1})
    assert counts["hard"] == 1 and singles == {**DEFAULT_COUNTS, **pins()[SMALL].get("build", {})}["singles"]
    path = built_path(SMALL, 0, singles, counts)
    assert path != built_path(SMALL, 1, singles, counts)
    record = {"id": f"lib-{SMALL}-000", "library": SMALL, "split": "train"}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record) + "\n")

    def never(*args, **kwargs):
        raise AssertionError("built again although cached")

    monkeypatch.setattr(libraries_build, "build_library", never)
    assert build([SMALL], 0, None, {"hard": 1}, log=lambda m: None) == [record]
    shipped = [{"id": "lib-aaa-000", "library": "aaa"}, {"id": f"lib-{SMALL}-007", "library": SMALL}]
    assert merged(shipped, [record]) == [shipped[0], record]


def test_the_shipped_bugs_go_into_the_pinned_library_and_parse_and_their_fixes_restore_it():
    import ast

    files = dict(library_files(SMALL))
    shipped = [t.data for t in library_tasks() if t.data["library"] == SMALL]
    assert shipped
    for data in shipped:
        bugged = apply_sites(files, data["sites"])
        for path in {s["path"] for s in data["sites"]}:
            assert bugged[path] != files[path]
            ast.parse(bugged[path])
        assert replay_fixes(files, data["sites"]), data["id"]
