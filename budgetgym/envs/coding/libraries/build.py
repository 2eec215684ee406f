"""Building the library task set: the mutation search, the combinations, the issue texts, the records.

For each pinned library (:mod:`budgetgym.envs.coding.libraries.fetch`): the unmodified suite is
run (tests that do not pass there are never used); the library's mutations
(:func:`~budgetgym.envs.coding.libraries.synth.library_mutations`) are shuffled with
``random.Random(f"{seed}/{library}")``, interleaved by operator, and tried until ``singles`` sites
are kept; then tasks of three tiers are drawn from the kept sites (see
:mod:`budgetgym.envs.coding.libraries.synth`), each combination checked by a run of the suite.
Each task comes in both modes (``-withheld`` ids cut the fail-to-pass tests out of the
workspace). A library pinned to the ``test`` split has all its tasks there; of the others every
fourth task is. Suite runs go two at a time. Same seed and pins, same tasks.

A library's records are kept in the cache (``built/`` under :func:`~budgetgym.envs.coding.libraries.fetch.cache_dir`,
named by library, version, seed and counts), so each library is built once; its pin may name
its own counts (``"build": {"singles": ..., "easy": ..., "medium": ..., "hard": ...}``), which
the command line's defaults give way to.

**The record** (one JSON object a line of ``tasks.jsonl``; the same fields in both modes):

- ``id``: ``lib-<library>-<NNN>`` (``tests="visible"``) or ``lib-<library>-<NNN>-withheld``.
- ``tests``: ``"visible"`` (the whole suite in the workspace, SWE-smith) or ``"withheld"`` (the
  ``fail_to_pass`` tests cut out of the workspace's test files, SWE-bench).
- ``split``: ``"train"`` or ``"test"``; both modes of a bug are on the same split.
- ``tier``: ``"easy"``, ``"medium"`` or ``"hard"`` (:data:`TIERS`: how many sites).
- ``oracle_turns``: the oracle's turns (:func:`oracle_turns`, the env's ``1x``); ``max_turns``:
  the full budget, :func:`budgetgym.core.full_budget` of it.
- ``library``, ``version``, ``source`` (``"pypi"``): which pinned library the bug is in.
- ``sites``: the bug, a list of ``{path, operator, function, buggy, fixed, line}`` in the order
  the oracle fixes them (``line`` is 1-based in the pinned file); ``bug`` is the first of them
  and ``locate`` the oracle's first search and view.
- ``fail_to_pass``: pytest node ids (relative to the repository root, ``tests/...``) that pass
  on the pinned library and fail with the bug in; ``pass_to_pass``: those that pass on both.
  Together they are the whole passing baseline; tests failing on the pinned library are in neither.
- ``instruction``: the issue (the symptom, never the fix); ``breaker``: always None here.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from budgetgym.core import full_budget, read_jsonl, write_jsonl
from budgetgym.envs.coding.generate import issue_text, run_suite
from budgetgym.envs.coding.libraries.fetch import cache_dir, library_files, pins
from budgetgym.envs.coding.libraries.synth import Site, apply_sites, compatible, library_mutations, replay_fixes, \
    shuffled_sites, site_of
from budgetgym.envs.coding.repos import is_test_path

#: tier -> (fewest sites, most sites)
TIERS = {"easy": (1, 1), "medium": (2, 4), "hard": (8, 12)}
#: The counts a library is built with when neither the command line nor its pin names them.
DEFAULT_COUNTS = {"singles": 48, "easy": 20, "medium": 16, "hard": 10}
WORKERS = 2
#: A real library's whole suite on a busy machine (the shipped small ones need far less).
RUN_TIMEOUT = 300
_COMBINATION_TRIES = 6


def oracle_turns(sites: int) -> int:
    """The oracle's turns on a task of ``sites`` sites: search, view, a fix and a test run per site, submit."""
    return 3 + 2 * sites


class Outcome:
    """One suite run of a bugged library against the baseline: which tests fail, which pass."""

    def __init__(self, baseline: set[str], statuses: Mapping[str, str], output: str) -> None:
        self.collected = baseline <= set(statuses)
        self.failing = sorted(n for n in baseline if statuses.get(n) != "PASSED")
        self.passing = sorted(n for n in baseline if statuses.get(n) == "PASSED")
        self.output = output

    @property
    def kept(self) -> bool:
        return self.collected and bool(self.failing) and bool(self.passing)


def _runs(pool: ThreadPoolExecutor, variants: Iterable[Mapping[str, str]]):
    """Suite runs of the variants, ``WORKERS`` at a time, yielded in order."""
    pending = []
    for files in variants:
        pending.append(pool.submit(run_suite, files, timeout=RUN_TIMEOUT))
        if len(pending) >= WORKERS:
            yield pending.pop(0).result()
    for future in pending:
        yield future.result()


def build_library(library: str, seed: int, singles: int, per_tier: Mapping[str, int],
                  log=print) -> list[dict[str, Any]]:
    files = dict(library_files(library))
    statuses, output = run_suite(files, timeout=RUN_TIMEOUT)
    baseline = {n for n, s in statuses.items() if s == "PASSED"}
    if not baseline:
        raise RuntimeError(f"{library}: the unmodified suite passes no test:\n{output[-2000:]}")
    rng = random.Random(f"{seed}/{library}")
    candidates = [m for path, text in files.items() if path.endswith(".py") and not is_test_path(path)
                  for m in library_mutations(path, text)]
    ordered = shuffled_sites(candidates, rng)
    kept: list[tuple[Site, Outcome]] = []
    tried = 0
    with ThreadPoolExecutor(WORKERS) as pool:
        batch = 2 * WORKERS
        position = 0
        while len(kept) < singles and position < len(ordered):
            chunk = ordered[position:position + batch]
            position += batch
            for mutation, (result, out) in zip(chunk, _runs(pool, ({**files, m.path: m.source} for m in chunk))):
                tried += 1
                outcome = Outcome(baseline, result, out)
                if outcome.kept and len(kept) < singles:
                    kept.append((site_of(mutation, files[mutation.path]), outcome))
        log(f"{library}: {len(kept)} sites kept of {tried} mutations tried ({len(candidates)} in all)")
        drafts: list[tuple[str, list[Site], Outcome]] = [("easy", [s], o) for s, o in kept[:per_tier["easy"]]]
        for tier in ("medium", "hard"):
            drafts += _combinations(pool, tier, kept, files, baseline, per_tier[tier], rng)
    records = []
    test_library = pins()[library]["split"] == "test"
    for index, (tier, sites, outcome) in enumerate(drafts):
        records += _records(library, index, tier, sites, outcome, files, test_library)
    counts = {t: sum(1 for d in drafts if d[0] == t) for t in TIERS}
    log(f"{library}: {len(drafts)} bugs {counts}, {len(records)} tasks with both modes")
    return records


def _combinations(pool: ThreadPoolExecutor, tier: str, kept: Sequence[tuple[Site, Outcome]],
                  files: Mapping[str, str], baseline: set[str], count: int, rng: random.Random):
    low, high = TIERS[tier]
    sites = [s for s, _ in kept]
    if len(sites) < low:
        return []
    drafts = []
    seen: set[tuple[int, ...]] = set()
    proposals = []
    for _ in range(count * _COMBINATION_TRIES):
        size = rng.randint(low, min(high, len(sites)))
        chosen = tuple(sorted(rng.sample(range(len(sites)), size)))
        group = [sites[i] for i in chosen]
        if chosen in seen or not compatible(group):
            continue
        seen.add(chosen)
        ordered = _task_order(group, rng)
        if not replay_fixes(files, [s.record() for s in ordered]):
            continue
        proposals.append(ordered)
    variants = (apply_sites(files, group) for group in proposals)
    for group, (result, out) in zip(proposals, _runs(pool, variants)):
        outcome = Outcome(baseline, result, out)
        if outcome.kept:
            drafts.append((tier, group, outcome))
            if len(drafts) >= count:
                break
    return drafts


def _task_order(group: Sequence[Site], rng: random.Random) -> list[Site]:
    """The order the oracle fixes the sites in: files in a random order, top to bottom in each."""
    paths = sorted({s.path for s in group})
    rng.shuffle(paths)
    return [s for path in paths for s in sorted(group, key=lambda s: s.line) if s.path == path]


def _records(library: str, index: int, tier: str, sites: Sequence[Site], outcome: Outcome,
             files: Mapping[str, str], test_library: bool) -> list[dict[str, Any]]:
    first = sites[0]
    lines = files[first.path].splitlines()
    end = first.line + max(1, first.buggy.count("\n")) - 1
    text = issue_text(library, first.function, outcome.failing, outcome.output)
    if len(sites) > 1:
        spread = len({s.path for s in sites})
        text += (f"\n\n{len(outcome.failing)} tests fail in all; the regression seems to touch several parts of "
                 f"the library" + (" (more than one module)." if spread > 1 else "."))
    turns = oracle_turns(len(sites))
    base = {
        "split": "test" if test_library or index % 4 == 3 else "train",
        "max_turns": full_budget(turns),
        "oracle_turns": turns,
        "source": "pypi",
        "library": library,
        "version": pins()[library]["version"],
        "tier": tier,
        "instruction": text,
        "sites": [s.record() for s in sites],
        "bug": first.record(),
        "locate": {"query": f"def {first.function}", "view": [max(1, first.line - 4), min(len(lines), end + 4)]},
        "fail_to_pass": outcome.failing,
        "pass_to_pass": outcome.passing,
        "breaker": None,
    }
    stem = f"lib-{library}-{index:03d}"
    withheld_text = text.replace("Please fix the library so that these tests pass again without changing the tests.",
                                 "The failing tests are not in your checkout: reproduce the problem yourself, "
                                 "then fix the library.")
    return [{"id": stem, "tests": "visible", **base},
            {"id": f"{stem}-withheld", "tests": "withheld", **base, "instruction": withheld_text}]


def counts_for(library: str, singles: int | None, per_tier: Mapping[str, int | None]) -> tuple[int, dict[str, int]]:
    """The counts a library is built with: those given, else its pin's ``build``, else :data:`DEFAULT_COUNTS`."""
    pinned = {**DEFAULT_COUNTS, **pins()[library].get("build", {})}
    chosen_singles = pinned["singles"] if singles is None else singles
    return chosen_singles, {t: pinned[t] if per_tier.get(t) is None else per_tier[t] for t in TIERS}


def built_path(library: str, seed: int, singles: int, per_tier: Mapping[str, int]) -> Path:
    """Where a library's built records are cached: one file per library, version, seed and counts
    (and the builder's own code, so a changed builder builds again)."""
    code = hashlib.sha256("".join(Path(m.__file__).read_text(encoding="utf-8")
                                  for m in (sys.modules[__name__], sys.modules[apply_sites.__module__])).encode())
    key = json.dumps([pins()[library], seed, singles, dict(per_tier), code.hexdigest()[:16]], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / "built" / f"{library}-{pins()[library]['version']}-{digest}.jsonl"


def build(libraries: Sequence[str], seed: int, singles: int | None = None,
          per_tier: Mapping[str, int | None] | None = None, log=None) -> list[dict[str, Any]]:
    """Every library's records, each built once and then read from the cache (:func:`built_path`)."""
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    records = []
    for library in libraries:
        library_singles, counts = counts_for(library, singles, per_tier or {})
        path = built_path(library, seed, library_singles, counts)
        if path.is_file():
            built = read_jsonl(path)
            log(f"{library}: {len(built)} tasks from the cache ({path})")
        else:
            built = build_library(library, seed, library_singles, counts, log)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_jsonl(path, built)
        records += built
    return records


def merged(shipped: Sequence[Mapping[str, Any]], built: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The shipped records with those of the built libraries replaced by the new ones, by library name."""
    libraries = {r["library"] for r in built}
    kept = [dict(r) for r in shipped if r["library"] not in libraries]
    return sorted(kept + [dict(r) for r in built], key=lambda r: (r["library"], r["id"]))
