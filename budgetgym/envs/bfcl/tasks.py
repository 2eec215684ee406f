"""BFCL's multi-turn entries as budgetgym tasks, read from the installed package (nothing is copied).

Each entry of ``data/BFCL_v4_multi_turn_<category>.json`` is joined with its ground truth from
``data/possible_answer/`` into one task record: BFCL's fields as they are (``question``,
``initial_config``, ``involved_classes``, ``missed_function``, ...), plus ``ground_truth``, the
category as ``split``, the first user message as ``instruction``, and the full turn budget.
(``excluded_function`` stays in the record as BFCL ships it; BFCL's own pipeline does not use it.)
"""

from __future__ import annotations

import functools
import math

# The core parser's cap on calls in one output (a few BFCL turns have more ground-truth calls).
from budgetgym.core import MAX_CALLS_PER_STEP, full_budget, read_jsonl
from budgetgym.core.tasks import Task
from budgetgym.envs.bfcl.upstream import load_upstream

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")


def oracle_steps(ground_truth: list[list[str]]) -> int:
    """Steps the oracle takes: per user turn one step with all its calls (if any) and one answer.

    A turn with more calls than one output may hold takes one step per ``MAX_CALLS_PER_STEP`` calls.
    """
    return sum(1 + math.ceil(len(calls) / MAX_CALLS_PER_STEP) for calls in ground_truth)


@functools.lru_cache(maxsize=None)
def load_category(category: str) -> tuple[Task, ...]:
    """The tasks of one BFCL multi-turn category (read once per process)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; choose from {', '.join(CATEGORIES)}")
    upstream = load_upstream()
    name = f"{upstream.version_prefix}_multi_turn_{category}.json"
    entries = read_jsonl(upstream.data_dir / name)
    answers = {record["id"]: record["ground_truth"] for record in read_jsonl(upstream.data_dir / "possible_answer" / name)}
    tasks = []
    for entry in entries:
        ground_truth = answers[entry["id"]]
        if len(ground_truth) != len(entry["question"]):
            raise ValueError(f"{name}: {entry['id']} has {len(entry['question'])} user turns but "
                             f"{len(ground_truth)} ground-truth turns")
        first_message = next((m["content"] for turn in entry["question"] for m in turn if m["role"] == "user"), "")
        tasks.append(Task.from_record({
            **entry,
            "split": category,
            "max_turns": full_budget(oracle_steps(ground_truth)),
            "oracle_turns": oracle_steps(ground_truth),
            "instruction": first_message,
            "ground_truth": ground_truth,
            "missed_function": entry.get("missed_function", {}),
        }))
    return tuple(tasks)
