"""Tasks and the curated failure states, loaded from ``budgetgym/assets/<family>/``.

``tasks.jsonl`` holds one task a line: ``id``, ``split``, ``max_turns`` (the task's full turn
budget), ``instruction``, and the family's own fields. ``failure_states.jsonl`` holds one curated
failure state a line: ``id``, ``task_id``, ``kind``, ``description``, ``error_step`` and
``snapshot``. Both are read once per process and shared by every env instance.
"""

from __future__ import annotations

import copyreg
import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from budgetgym.core.jsonl import read_jsonl

ASSETS = Path(__file__).resolve().parent.parent / "assets"

# Records are read-only views (MappingProxyType), which pickle cannot take by default: a view pickles
# as a view of a copy of its dict, so envs and wrappers holding records pickle and deep-copy.
def read_only(record: dict[str, Any]) -> Mapping[str, Any]:
    """A read-only view of ``record`` (what a pickled view unpickles to)."""
    return MappingProxyType(record)


copyreg.pickle(MappingProxyType, lambda view: (read_only, (dict(view),)))
_REQUIRED = ("id", "split", "max_turns", "instruction")


@dataclass(frozen=True)
class Task:
    """One task record. ``data`` is the whole record, read-only."""

    id: str
    split: str
    max_turns: int
    instruction: str
    data: Mapping[str, Any] = field(repr=False, compare=False)
    #: Turns the oracle takes from the initial state (the shortest known solution), where known.
    oracle_turns: int | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Task":
        missing = [key for key in _REQUIRED if key not in record]
        if missing:
            raise ValueError(f"task record {record.get('id', '?')!r} lacks {', '.join(missing)}")
        max_turns = record["max_turns"]
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"task {record['id']!r}: max_turns must be a positive int, got {max_turns!r}")
        oracle_turns = record.get("oracle_turns")
        if oracle_turns is not None and (not isinstance(oracle_turns, int) or not 1 <= oracle_turns <= max_turns):
            raise ValueError(f"task {record['id']!r}: oracle_turns must be an int in [1, max_turns], got {oracle_turns!r}")
        return cls(str(record["id"]), str(record["split"]), max_turns, str(record["instruction"]),
                   MappingProxyType(dict(record)), oracle_turns)

    @functools.cached_property
    def fingerprint(self) -> str:
        """A short hash of the record: a snapshot names it, so one from a changed task is refused."""
        blob = json.dumps(dict(self.data), sort_keys=True, ensure_ascii=False, default=list)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __deepcopy__(self, memo: dict[int, Any]) -> "Task":
        return self  # immutable: a copied env shares its tasks


class TaskSet(Sequence[Task]):
    """An ordered, immutable collection of tasks with lookup by id and by split."""

    def __init__(self, tasks: Iterable[Task | Mapping[str, Any]]) -> None:
        self._tasks = tuple(t if isinstance(t, Task) else Task.from_record(t) for t in tasks)
        self._by_id = {t.id: t for t in self._tasks}
        if len(self._by_id) != len(self._tasks):
            raise ValueError("task ids must be unique")

    def __getitem__(self, index):  # type: ignore[override]
        return self._tasks[index]

    def __deepcopy__(self, memo: dict[int, Any]) -> "TaskSet":
        return self  # immutable

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._by_id

    def get(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"unknown task id {task_id!r}; {len(self)} tasks, e.g. {', '.join(list(self._by_id)[:3])}") from None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._by_id)

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(sorted({t.split for t in self._tasks}))

    def select(self, split: str | None = None, task_ids: Iterable[str] | None = None) -> "TaskSet":
        """The tasks of ``split`` (None: all), restricted to ``task_ids`` when given."""
        tasks: Iterable[Task] = self._tasks
        if split is not None:
            if split not in self.splits:
                raise ValueError(f"unknown split {split!r}; this task set has {', '.join(self.splits)}")
            tasks = [t for t in tasks if t.split == split]
        if task_ids is not None:
            wanted = list(task_ids)
            for task_id in wanted:
                self.get(task_id)
            chosen = set(wanted)
            tasks = [t for t in tasks if t.id in chosen]
        return TaskSet(tasks)


@functools.lru_cache(maxsize=None)
def load_tasks(family: str) -> TaskSet:
    """The shipped tasks of a family (read once per process)."""
    path = ASSETS / family / "tasks.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no task file for family {family!r} at {path}")
    return TaskSet(read_jsonl(path))


@functools.lru_cache(maxsize=None)
def load_failure_states(family: str) -> tuple[Mapping[str, Any], ...]:
    """The shipped curated failure states of a family (or of a task set with a folder of its own under
    the family's, e.g. ``"coding/libraries"``); empty when it ships none."""
    path = ASSETS / family / "failure_states.jsonl"
    if not path.exists():
        return ()
    return tuple(MappingProxyType(r) for r in read_jsonl(path))
