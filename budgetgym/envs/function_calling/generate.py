"""Task generation (library code): seeded drafts from every domain, made into task records with
oracle-sized budgets. ``python -m budgetgym.envs.function_calling.assets --out tasks.jsonl --seed 0
--n 5000`` writes a task set with it (``assets.py`` is the family's one data command).

The same seed and count give the same tasks, byte for byte: each task draws from its own
``random.Random`` seeded by (seed, index), so task i does not depend on how many were asked for.
Domains take turns (task i is of domain i mod 4); every fifth task is in the test split.

Long conversations (``generate_long_tasks``): eight to ten request kinds of one domain
(``LONG_REQUESTS``) played one after another on the same service, so that later requests meet what
earlier ones changed; a draft is kept when it has at least ``LONG_MIN_USER_TURNS`` user turns and a
full budget of at least ``LONG_MIN_BUDGET`` (the oracle's turns, batched by dependency depth as
everywhere), else the task's next draw is tried (still seeded by (seed, index, draw)).
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from budgetgym.core import TaskSet, full_budget, rollout
from budgetgym.envs.function_calling.domains import DOMAINS
from budgetgym.envs.function_calling.drafting import Draft

#: A generous budget used only while measuring the oracle's own turn count.
_MEASURING_BUDGET = 500
#: How many request kinds a long conversation draws (lowest, highest).
LONG_REQUESTS = (8, 10)
#: A long conversation has at least this many user turns ...
LONG_MIN_USER_TURNS = 8
#: ... and at least this full budget (``max_turns``).
LONG_MIN_BUDGET = 30
#: Draws tried per long task before the generator gives up (a bug: nearly every draw qualifies).
_LONG_DRAWS = 50


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



def generate_long_tasks(seed: int, n: int, domains: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``n`` long conversations from ``seed`` (see the module docstring): task i is of domain
    i mod len(domains), every fifth in the test split."""
    names = list(domains or DOMAINS)
    records = []
    for index in range(n):
        domain = DOMAINS[names[index % len(names)]]
        split = "test" if index % 5 == 4 else "train"
        task_id = f"fc-{domain.name}-long-s{seed}-{index:04d}"
        for draw in range(_LONG_DRAWS):
            rng = random.Random(f"budgetgym-fc-long/{seed}/{index}/{draw}")
            try:
                draft = domain.generate(rng, LONG_REQUESTS)
            except RuntimeError:
                continue  # a request kind that the state earlier requests left cannot hold: draw again
            if len(draft.turns) < LONG_MIN_USER_TURNS:
                continue
            record = task_record(draft, task_id, split, source="generated-long", seed=seed)
            if record["max_turns"] >= LONG_MIN_BUDGET:
                records.append(record)
                break
        else:
            raise RuntimeError(f"{task_id}: no long conversation in {_LONG_DRAWS} draws")
    return records
