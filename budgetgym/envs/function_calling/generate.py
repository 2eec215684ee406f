"""Task generation: seeded drafts from every domain, made into task records with oracle-sized budgets.

    python -m budgetgym.envs.function_calling.generate --seed 0 --n 5000 --out tasks.jsonl

The same seed and count give the same tasks, byte for byte: each task draws from its own
``random.Random`` seeded by (seed, index), so task i does not depend on how many were asked for.
Domains take turns (task i is of domain i mod 4); every fifth task is in the test split.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any, Sequence

from budgetgym.core import TaskSet, full_budget, rollout, write_jsonl
from budgetgym.envs.function_calling.domains import DOMAINS
from budgetgym.envs.function_calling.drafting import Draft

#: A generous budget used only while measuring the oracle's own turn count.
_MEASURING_BUDGET = 500


def task_record(draft: Draft, task_id: str, split: str, **extra: Any) -> dict[str, Any]:
    """A task record for ``draft``, its ``max_turns`` the core's full budget for the oracle's turns."""
    if not draft.turns:
        raise ValueError(f"{task_id}: a task needs at least one user turn")
    record = {
        "id": task_id,
        "split": split,
        "max_turns": _MEASURING_BUDGET,
        "instruction": DOMAINS[draft.domain].intro,
        "domain": draft.domain,
        "tools": list(draft.tools),
        "initial_state": draft.initial_state,
        "turns": draft.turns,
        **extra,
    }
    turns = oracle_turns(record)
    record["oracle_turns"] = turns
    record["max_turns"] = full_budget(turns)
    return record


def oracle_turns(record: dict[str, Any]) -> int:
    """How many turns the oracle takes to complete the task; raises if it cannot."""
    from budgetgym.envs.function_calling.env import FunctionCallingEnv  # the env imports this package

    env = FunctionCallingEnv(tasks=TaskSet([record]))
    played = rollout(env, "oracle", options={"task_index": 0})
    invalid = next((step for step in played.steps if not step.info["action_valid"]), None)
    if invalid is not None:
        raise RuntimeError(f"{record['id']}: the oracle's action {invalid.action!r} is invalid: {invalid.info['action_error']}")
    if not played.success:
        raise RuntimeError(f"{record['id']}: the oracle does not complete the task (stuck at user turn {env.user_turn})")
    return played.turns


def generate_tasks(seed: int, n: int, domains: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``n`` task records from ``seed``: task i is of domain i mod len(domains)."""
    names = list(domains or DOMAINS)
    records = []
    for index in range(n):
        domain = DOMAINS[names[index % len(names)]]
        draft = domain.generate(random.Random(f"budgetgym-fc/{seed}/{index}"))
        split = "test" if index % 5 == 4 else "train"
        records.append(task_record(draft, f"fc-{domain.name}-s{seed}-{index:04d}", split, source="generated", seed=seed))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, default=100, help="how many tasks")
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines file to write")
    parser.add_argument("--domains", nargs="*", choices=sorted(DOMAINS), help="only these domains")
    args = parser.parse_args(argv)
    count = write_jsonl(args.out, generate_tasks(args.seed, args.n, args.domains))
    print(f"wrote {count} tasks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
