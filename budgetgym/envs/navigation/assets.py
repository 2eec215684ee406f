"""Rebuilds Navigation-v0's shipped data, the family's one data command:

    python -m budgetgym.envs.navigation.assets [--games-only | --failures-only] [--tier NAME] [--only ID]
                                               [--reselect]

First the games (``budgetgym/assets/navigation/games/`` and ``tasks.jsonl``, from TextWorld's
generator: :mod:`budgetgym.envs.navigation.generate`), then the curated failure states
(``failure_states.jsonl``). The games are rebuilt from each tier's recorded provenance
(``manifest.json``: options, TextWorld version, seeds, content hashes), so the command gives the
shipped games byte for byte, or stops, saying which game differs and why, before writing one that
differs. ``--tier`` rebuilds that tier's games and keeps the others' (repeatable); ``--only ID``
rebuilds one game; ``--tasks-only`` recomputes the task records from the shipped games without
building any. ``--reselect`` (with ``--tier``: a new tier, or a deliberate reship) selects the
tier's seeds afresh from its seed base with today's oracle and filters, and records the new
provenance: for xlong, every game id would name another game than the shipped one.

The failure states: the core's builder (:mod:`budgetgym.core.failures`) plays the oracle through a
game, inserts one mistake proposed by :meth:`NavigationEnv.propose_mistake` (the kinds in
:mod:`budgetgym.envs.navigation.mistakes`) at a seeded point, and keeps the state after it when the
mistake left the clean solution's states (TextWorld's world facts, the env's ``state_key``) and the
oracle still wins within the task's full budget. Within each group of tiers (``FAILURE_GROUPS``),
each kind is built over the tasks on its own (one state per task and kind, up to ``--per-kind``),
the tiers interleaved so each kind spans them; then every game still without a state (on either
split) gets one of the first kind that suits it, so a recovery probe on any split or game has
states to draw. A group is built from its own tasks only, so a new tier's states leave the earlier
tiers' states as they were.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Iterable

from budgetgym.core import Task, TaskSet
from budgetgym.core.tasks import ASSETS

PER_KIND = 20
FAILURES_PATH = ASSETS / "navigation" / "failure_states.jsonl"
FAILURE_GROUPS: tuple[tuple[str, ...], ...] = (("easy", "medium", "hard"), ("long",), ("xlong",))
"""Tiers whose failure states are built together (the first group is the set as first shipped)."""


def interleaved(tasks: Iterable[Task]) -> list[Task]:
    """The tasks with the tiers alternating (easy, medium, hard, easy, ...)."""
    tiers: dict[str, list[Task]] = {}
    for task in tasks:
        tiers.setdefault(task["tier"], []).append(task)
    columns = list(tiers.values())
    if not columns:
        return []
    return [column[i] for i in range(max(map(len, columns))) for column in columns if i < len(column)]


def _group_states(env: Any, tasks: list[Task], per_kind: int, seed: int) -> list[dict[str, Any]]:
    from budgetgym.core.failures import build_failure_states

    states: list[dict[str, Any]] = []
    for kind in env.failure_kinds:
        built = build_failure_states(env, interleaved(tasks), per_kind, seed=seed,
                                     namespace="budgetgym-navigation-failures", kinds=(kind,))
        print(f"{kind}: {len(built)}", file=sys.stderr, flush=True)
        states.extend(built)
    # The core builder gives each task the first kind that suits it, the kinds rotating over tasks.
    covered = {state["task_id"] for state in states}
    uncovered = [task for task in tasks if task.id not in covered]
    states.extend(build_failure_states(env, uncovered, max(len(uncovered), 1), seed=seed,
                                       namespace="budgetgym-navigation-failures"))
    return states


def generate_failure_states(tasks: TaskSet, per_kind: int = PER_KIND, seed: int = 0,
                            groups: Iterable[tuple[str, ...]] = FAILURE_GROUPS) -> list[dict[str, Any]]:
    """The failure states of ``tasks``, group of tiers by group (see the module docstring)."""
    from budgetgym.envs.navigation.env import NavigationEnv

    env = NavigationEnv(tasks=tasks)
    try:
        states: list[dict[str, Any]] = []
        for group in groups:
            in_group = [task for task in tasks if task["tier"] in group]
            if in_group:
                states.extend(_group_states(env, in_group, per_kind, seed))
        print(f"games covered: {len({state['task_id'] for state in states})} of {len(tasks)}",
              file=sys.stderr, flush=True)
        return states
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    from budgetgym.core.jsonl import read_jsonl, write_jsonl
    from budgetgym.core.tasks import load_tasks
    from budgetgym.envs.navigation.generate import PER_TIER, TASKS_PATH, build_games

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    part = parser.add_mutually_exclusive_group()
    part.add_argument("--games-only", action="store_true", help="build the games and tasks.jsonl only")
    part.add_argument("--failures-only", action="store_true", help="build the failure states only")
    parser.add_argument("--tier", action="append", help="rebuild this tier's games or failure states, "
                                                        "keep the others' (repeatable)")
    parser.add_argument("--only", help="rebuild this game id only (its recorded seed)")
    parser.add_argument("--reselect", action="store_true",
                        help="select the tiers' seeds afresh from their seed base (a new set of games) and record them")
    parser.add_argument("--tasks-only", action="store_true", help="recompute tasks.jsonl from the shipped games")
    parser.add_argument("--per-tier", type=int, default=PER_TIER)
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.failures_only:
        started = time.time()
        records = build_games(args.per_tier, only=args.only, tasks_only=args.tasks_only, tiers=args.tier,
                              reselect=args.reselect)
        write_jsonl(TASKS_PATH, records)
        print(f"{len(records)} games -> {TASKS_PATH} in {time.time() - started:.0f}s", file=sys.stderr)
    if not args.games_only:
        started = time.time()
        tasks = load_tasks("navigation")
        groups = [g for g in FAILURE_GROUPS if args.tier is None or set(g) & set(args.tier)]
        kept = []
        if args.tier is not None and FAILURES_PATH.exists():  # the other groups' states as shipped
            rebuilt = {task.id for task in tasks if any(task["tier"] in g for g in groups)}
            kept = [s for s in read_jsonl(FAILURES_PATH) if s["task_id"] not in rebuilt]
        states = generate_failure_states(tasks, args.per_kind, args.seed, groups)
        order = {g: i for i, g in enumerate(FAILURE_GROUPS)}
        tier_group = {t: order[g] for g in FAILURE_GROUPS for t in g}
        merged = sorted(kept + states, key=lambda s: tier_group[tasks.get(s["task_id"])["tier"]])  # stable
        write_jsonl(FAILURES_PATH, merged)
        print(f"{len(merged)} failure states -> {FAILURES_PATH} in {time.time() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
