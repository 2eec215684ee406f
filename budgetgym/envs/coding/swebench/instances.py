"""SWE-bench instances from a local file (JSON list, JSON lines or parquet), as task records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from budgetgym.core import full_budget, read_jsonl
from budgetgym.core.extras import require

REQUIRED = ("instance_id", "problem_statement", "image", "eval_script", "log_parser", "FAIL_TO_PASS", "PASS_TO_PASS")


def load_instances(path: str | Path) -> list[dict[str, Any]]:
    """The instance records of ``path``; each must carry the fields SWE-bench 5 builds a test spec from."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no SWE-bench instance file at {path}")
    if path.suffix == ".parquet":
        pandas = require("pandas", "reading SWE-bench instances from parquet")
        records = json.loads(pandas.read_parquet(path).to_json(orient="records"))
    elif path.suffix == ".jsonl":
        records = read_jsonl(path)
    else:
        records = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(records, dict):
            records = [records]
    for record in records:
        missing = [key for key in REQUIRED if key not in record]
        if missing:
            raise ValueError(f"{path}: instance {record.get('instance_id', '?')!r} lacks {', '.join(missing)}")
    return records


def workdir_of(instance: Mapping[str, Any]) -> str:
    """The repository folder in the instance's image (SWE-bench images use /testbed)."""
    return instance.get("workdir", "/testbed")


def task_record(instance: Mapping[str, Any], max_turns: int | None = None) -> dict[str, Any]:
    """A budgetgym task for an instance. The oracle applies the gold patch and submits (two turns),
    so the core's rule gives a full budget of 6; real agents need more: pass ``max_turns``."""
    oracle_turns = 2 if instance.get("patch") else 1
    return {
        "id": instance["instance_id"],
        "split": instance.get("split", "test"),
        "max_turns": max_turns or full_budget(oracle_turns),
        "oracle_turns": oracle_turns,
        "instruction": instance["problem_statement"],
        "instance": dict(instance),
    }
