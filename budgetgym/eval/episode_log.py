"""The JSON-lines file of a sweep: one episode a line, appended as episodes finish, so a sweep that
is interrupted (killed, out of time, a server gone) resumes from it without repeating or losing one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping
from budgetgym.core.jsonl import Record

Key = tuple[Any, ...]


def episode_key(record: Mapping[str, Any]) -> Key:
    """What identifies an episode within a sweep file."""
    return (record["env"], record["task"], record["reveal"], record["budget"], record["attempt"])


def sort_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    # Full-budget runs (budget None) first, then caps in increasing order; 4 and 4.0 are distinct.
    budget = record["budget"]
    budget_key = (0, 0.0, False) if budget is None else (1, float(budget), isinstance(budget, float))
    return (record["env"], record["task"], record["reveal"], budget_key, record["attempt"])


def read_records(path: str | Path) -> list[Record]:
    """Every complete episode line of ``path``; an unfinished last line (a kill mid-write) is ignored."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.endswith("\n"):
                break  # the partial line a killed writer left behind
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{number}: not an episode record ({err.msg})") from None
    return records


class EpisodeLog:
    """Append-only episode file with resume. ``open()`` drops a partial last line, so appends
    start on a fresh line; ``finalize()`` rewrites the file sorted, so an interrupted and resumed
    sweep ends byte for byte like an uninterrupted one, whatever the executor's completion order."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._handle: Any = None

    def open(self) -> dict[Key, Record]:
        """Open for appending; return the episodes already in the file, by key."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existing: dict[Key, Record] = {}
        if self.path.exists():
            for record in read_records(self.path):
                existing[episode_key(record)] = record
            self._drop_partial_line()
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (held across appends; close() closes it)
        return existing

    def append(self, record: Mapping[str, Any]) -> None:
        # One write of one whole line, flushed at once: a kill loses at most the line being written.
        self._handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def finalize(self) -> list[Record]:
        """Close, and rewrite the file in canonical order (atomically); return the records."""
        self.close()
        records = sorted(read_records(self.path), key=sort_key)
        write_records(self.path, records)
        return records

    def _drop_partial_line(self) -> None:
        with open(self.path, "rb+") as handle:
            data = handle.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                handle.truncate(end)


def write_records(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    os.replace(temporary, path)
