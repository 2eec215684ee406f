"""Building the library task set: the mutation search, the combinations, the issue texts, the records.

For each pinned library (:mod:`budgetgym.envs.coding.libraries.fetch`): the unmodified suite is
run (tests that do not pass there are never used); the library's mutations
(:func:`~budgetgym.envs.coding.libraries.synth.library_mutations`) are shuffled with
``random.Random(f"{seed}/{library}")``, interleaved by operator, and screened
(:mod:`~budgetgym.envs.coding.libraries.screen`: a fork of a collected suite runs the tests that
reach the mutated code) until ``singles`` sites break some tests; those the screen cannot judge
are run through the whole suite instead (up to a fifth of ``singles``). The sites are split: all
on ``test`` for a library pinned there, else every fourth site on ``test``, so no test bug shares
a site with a training one. From each split's sites come tasks of three tiers (see
:mod:`budgetgym.envs.coding.libraries.synth`): one-site bugs, and combinations of sites. **Every
task's bug is kept only on a full run of the whole suite in a fresh process**
(:func:`budgetgym.envs.coding.generate.run_suite`, as without screening): some tests fail, others
pass; its fail-to-pass and pass-to-pass lists and its issue text come from that run. The screen
only decides which candidates get that run. Each task comes in both modes (``-withheld`` ids cut
the fail-to-pass tests out of the workspace). Runs go ``WORKERS`` at a time. Same seed and pins,
same tasks (unless a run's time limit falls differently on a busy machine).

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

import collections
import hashlib
import itertools
import json
import queue
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from budgetgym.core import full_budget, read_jsonl, write_jsonl
from budgetgym.envs.coding.generate import issue_text, run_suite
from budgetgym.envs.coding.libraries.fetch import cache_dir, library_files, pins
from budgetgym.envs.coding.libraries.screen import Screen
from budgetgym.envs.coding.mutate import Mutation
from budgetgym.envs.coding.libraries.synth import Site, apply_sites, compatible, library_mutations, replay_fixes, \
    shuffled_sites, site_of
from budgetgym.envs.coding.repos import is_test_path

#: tier -> (fewest sites, most sites)
TIERS = {"easy": (1, 1), "medium": (2, 4), "hard": (8, 12)}
#: The counts a library is built with when neither the command line nor its pin names them.
DEFAULT_COUNTS = {"singles": 60, "easy": 20, "medium": 14, "hard": 8}
WORKERS = 2
#: The unmodified suite's time limit on a busy machine; a candidate's full run gets
#: ``RUN_SLOWDOWN`` times what the unmodified run took, and at least ``MIN_RUN_TIMEOUT`` seconds.
RUN_TIMEOUT = 300
RUN_SLOWDOWN = 10
MIN_RUN_TIMEOUT = 60
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


class _Judge:
    """Whether candidates are kept: a :class:`~budgetgym.envs.coding.libraries.screen.Screen` per
    worker filters them, and each one it does not rule out is run through the whole suite in a
    fresh process, whose outcome alone decides (see :mod:`budgetgym.envs.coding.libraries.screen`)."""

    def __init__(self, files: Mapping[str, str], baseline: set[str], timeout: float) -> None:
        self.files, self.baseline, self.timeout = files, baseline, timeout
        self.pool = ThreadPoolExecutor(WORKERS)
        self.screens: queue.Queue = queue.Queue()
        for screen in self.pool.map(lambda _: Screen(files), range(WORKERS)):
            self.screens.put(screen)
        self.verdicts: collections.Counter = collections.Counter()

    def verdict(self, changed: Mapping[str, str]) -> str:
        """The screen's verdict on the library with ``changed`` (path -> text) put in."""
        screen = self.screens.get()
        try:
            verdict = screen.check(changed)["verdict"]
        finally:
            self.screens.put(screen)
        self.verdicts[verdict] += 1
        return verdict

    def verdicts_of(self, candidates: Sequence[Mapping[str, str]]) -> list[str]:
        return list(self.pool.map(self.verdict, candidates))

    def outcome(self, changed: Mapping[str, str], screen: bool = True) -> Outcome | None:
        """The whole suite's outcome with ``changed`` put in (a fresh run); None when the screen
        (``screen=True``) rules it out first."""
        if screen and self.verdict(changed) == "missed":
            return None
        statuses, output = run_suite({**self.files, **changed}, timeout=self.timeout)
        outcome = Outcome(self.baseline, statuses, output)
        self.verdicts["full run, kept" if outcome.kept else "full run, not kept"] += 1
        return outcome

    def outcomes(self, candidates: Iterable[Mapping[str, str]], screen: bool = True):
        """:meth:`outcome` of each candidate, ``2 * WORKERS`` in flight, yielded in order."""
        pending: collections.deque = collections.deque()
        for changed in candidates:
            pending.append(self.pool.submit(self.outcome, changed, screen))
            if len(pending) >= 2 * WORKERS:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        while not self.screens.empty():
            self.screens.get().close()
        self.pool.shutdown(cancel_futures=True)


def build_library(library: str, seed: int, singles: int, per_tier: Mapping[str, int],
                  log=print) -> list[dict[str, Any]]:
    files = dict(library_files(library))
    started = time.monotonic()
    statuses, output = run_suite(files, timeout=RUN_TIMEOUT)
    baseline = {n for n, s in statuses.items() if s == "PASSED"}
    if not baseline:
        raise RuntimeError(f"{library}: the unmodified suite passes no test:\n{output[-2000:]}")
    timeout = max(MIN_RUN_TIMEOUT, RUN_SLOWDOWN * (time.monotonic() - started))
    rng = random.Random(f"{seed}/{library}")
    candidates = [m for path, text in files.items() if path.endswith(".py") and not is_test_path(path)
                  for m in library_mutations(path, text)]
    ordered = shuffled_sites(candidates, rng)
    test_library = pins()[library]["split"] == "test"
    judge = _Judge(files, baseline, timeout)
    try:
        kept = _sites(judge, ordered, files, singles)
        log(f"{library}: {len(kept)} sites of {len(candidates)} mutations; screen {dict(judge.verdicts)}; "
            f"{time.monotonic() - started:.0f} s")
        drafts: list[tuple[str, str, list[Site], Outcome]] = []
        for split, pool in _partition(kept, test_library).items():
            share = _share(split, test_library)
            drafts += [("easy", split, [s], o) for s, o in _confirmed(judge, pool, files, share(per_tier["easy"]))]
            for tier in ("medium", "hard"):
                drafts += [(tier, split, group, o) for group, o in
                           _combinations(judge, tier, [s for s, _ in pool], files, share(per_tier[tier]), rng)]
    finally:
        judge.close()
    records = []
    for index, (tier, split, sites, outcome) in enumerate(drafts):
        records += _records(library, index, tier, split, sites, outcome, files)
    counts = collections.Counter((d[0], d[1]) for d in drafts)
    log(f"{library}: {len(drafts)} bugs {dict(sorted(counts.items()))}, {len(records)} tasks with both modes; "
        f"screen {dict(judge.verdicts)}; {time.monotonic() - started:.0f} s")
    return records


def _sites(judge: _Judge, ordered: Sequence[Mutation], files: Mapping[str, str],
           singles: int) -> list[tuple[Site, Outcome | None]]:
    """The first ``singles`` candidates (in order) that break some tests and not all: those the
    screen catches (their full run comes later, if they become a one-site task), and, up to a fifth
    of ``singles``, those it cannot judge, run through the whole suite now."""
    kept: list[tuple[Site, Outcome | None]] = []
    unjudged = 0
    position = 0
    while len(kept) < singles and position < len(ordered):
        chunk = ordered[position:position + 4 * WORKERS]
        position += len(chunk)
        verdicts = judge.verdicts_of([{m.path: m.source} for m in chunk])
        unknown = [m for m, v in zip(chunk, verdicts) if v == "unknown"][:max(0, singles // 5 - unjudged)]
        unjudged += len(unknown)
        full = dict(zip(unknown, judge.outcomes(({m.path: m.source} for m in unknown), screen=False)))
        for mutation, verdict in zip(chunk, verdicts):
            outcome = full.get(mutation)
            if verdict == "caught" or (outcome is not None and outcome.kept):
                if len(kept) < singles:
                    kept.append((site_of(mutation, files[mutation.path]), outcome))
    return kept


def _confirmed(judge: _Judge, pool: Sequence[tuple[Site, Outcome | None]], files: Mapping[str, str],
               count: int) -> list[tuple[Site, Outcome]]:
    """The first ``count`` sites of ``pool`` that the whole suite keeps alone (one full run each,
    unless they already had theirs)."""
    found: list[tuple[Site, Outcome]] = []
    position = 0
    while len(found) < count and position < len(pool):
        chunk = pool[position:position + count - len(found)]
        position += len(chunk)
        runs = iter(judge.outcomes(({s.path: apply_sites(files, [s])[s.path]} for s, o in chunk if o is None),
                                   screen=False))
        for site, outcome in chunk:
            outcome = outcome if outcome is not None else next(runs)
            if outcome.kept and len(found) < count:
                found.append((site, outcome))
    return found


def _partition(kept: Sequence[tuple[Site, Outcome]], test_library: bool) -> dict[str, list[tuple[Site, Outcome]]]:
    """The kept sites by split: all on ``test`` for a held-out library, else every fourth one, so no
    bug of the test split shares a site with one of the training split."""
    if test_library:
        return {"test": list(kept)}
    return {"train": [k for i, k in enumerate(kept) if i % 4 != 3], "test": [k for i, k in enumerate(kept) if i % 4 == 3]}


def _share(split: str, test_library: bool):
    """How many of a tier's ``count`` bugs go to ``split`` (a quarter to test in a seen library)."""
    if test_library:
        return lambda count: count
    return lambda count: (count + 2) // 4 if split == "test" else count - (count + 2) // 4


def _combinations(judge: _Judge, tier: str, sites: Sequence[Site], files: Mapping[str, str], count: int,
                  rng: random.Random) -> list[tuple[list[Site], Outcome]]:
    low, high = TIERS[tier]
    if len(sites) < low or count <= 0:
        return []
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
    drafts = []
    changed = ({p: t for p, t in apply_sites(files, group).items() if t != files[p]} for group in proposals)
    for group, outcome in zip(proposals, judge.outcomes(changed)):
        if outcome is not None and outcome.kept:
            drafts.append((group, outcome))
            if len(drafts) >= count:
                break
    return drafts


def _task_order(group: Sequence[Site], rng: random.Random) -> list[Site]:
    """The order the oracle fixes the sites in: files in a random order, top to bottom in each."""
    paths = sorted({s.path for s in group})
    rng.shuffle(paths)
    return [s for path in paths for s in sorted(group, key=lambda s: s.line) if s.path == path]


def _records(library: str, index: int, tier: str, split: str, sites: Sequence[Site], outcome: Outcome,
             files: Mapping[str, str]) -> list[dict[str, Any]]:
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
        "split": split,
        "max_turns": full_budget(turns),
        "oracle_turns": turns,
        "source": "pypi",
        "library": library,
        "version": pins()[library]["version"],
        "tier": tier,
        "instruction": text,
        "sites": [s.record() for s in sites],
        "bug": first.record(),
        "locate": {"query": _query(first, files[first.path]), "view": [max(1, first.line - 4), min(len(lines), end + 4)]},
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


def _query(site: Site, text: str) -> str:
    """The oracle's first search: the definition the first site is in, else its buggy line."""
    name = site.function.split(".")[-1]
    for query in (f"def {name}(", f"class {name}"):
        if name and query in text:
            return query
    return site.buggy.strip().splitlines()[0]


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
