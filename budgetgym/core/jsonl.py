"""The one JSON-lines module: tasks, failure states, episodes and exports are all read and written here.

Writes are atomic (a temporary file in the same folder, then ``os.replace``), so a killed writer
leaves either the old file or the new one, never half of one. Text is UTF-8; ``ensure_ascii=False``
keeps non-ASCII text readable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, TypedDict

Record = dict[str, Any]
"""One JSON object: a task, a failure state, an episode."""


def read_jsonl(path: str | Path) -> list[Record]:
    """Every non-blank line of ``path`` as a JSON object; a bad line raises ``ValueError`` naming it."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
            records.append(record)
    return records


def dumps_line(record: Mapping[str, Any], *, sort_keys: bool = False) -> str:
    """One record as one line, newline included."""
    return json.dumps(record, ensure_ascii=False, sort_keys=sort_keys) + "\n"


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]], *, sort_keys: bool = False) -> int:
    """Write ``records`` one a line, atomically; return how many were written."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(dumps_line(record, sort_keys=sort_keys))
                count += 1
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    return count


class EpisodeRecord(TypedDict, total=False):
    """One episode of a sweep, as a line of ``episodes.jsonl`` (the evaluation adds fields of its own).

    ``budget`` is the cap as asked (None: the full budget; an int: turns; a float: a share of the
    full budget; a ``"1.5x"`` string: a multiple of the oracle's turns), ``cap`` the turns it came to;
    ``turns`` counts the turns taken and ``success`` whether the task was solved within them.
    """

    env: str
    agent: str
    task: str
    reveal: str
    budget: int | float | str | None
    attempt: int
    seed: int
    max_turns: int
    cap: int
    turns: int
    success: bool
    reward: float
    actions: list[str]
