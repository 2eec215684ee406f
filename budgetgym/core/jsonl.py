"""The one JSON-lines module: tasks, failure states, episodes and exports are all read and written here.

Writes go through :func:`write_text`: over a regular file (or where none is) they are atomic (a
temporary file in the same folder, then ``os.replace``), so a killed writer leaves either the old
file or the new one, never half of one; to a device or a pipe (``/dev/stdout``, ``/dev/null``) the
text is streamed, and the node is never replaced; a folder or any other kind of node is refused.
Text is UTF-8. Two line forms: :func:`dumps_line` keeps non-ASCII text readable (assets, exports);
:func:`dumps_ascii` writes JSON's ASCII escapes with sorted keys, so every Python ``str`` (lone
surrogates included) round-trips and equal records give equal bytes (episode files).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
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
    """One record as one line, newline included, non-ASCII text as it is."""
    return json.dumps(record, ensure_ascii=False, sort_keys=sort_keys) + "\n"


#: One encoder for every ASCII line (``json.dumps`` with options builds an encoder per call).
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, sort_keys=True, allow_nan=False)


def dumps_ascii(record: Mapping[str, Any]) -> str:
    """One record as one line: ASCII escapes (any str round-trips), sorted keys (stable bytes), no NaN."""
    return _ASCII_ENCODER.encode(record) + "\n"


def write_text(path: str | Path, text: str) -> tuple[int, str]:
    """Write ``text`` (UTF-8) to ``path`` with :func:`write_bytes`."""
    return write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> tuple[int, str]:
    """Write ``data`` to ``path``; return its size and SHA-256.

    A regular file, or a path where nothing is, is written atomically (a temporary file beside it,
    then a rename); a symbolic link's target is written so. A character device or a pipe is written
    to as it is (streamed), never replaced.
    A folder, or any other kind of node, raises ``IsADirectoryError`` or ``OSError`` and nothing is
    written. A missing parent folder raises ``FileNotFoundError``."""
    path = Path(path)
    if path.is_symlink():  # write the file the link names; the link stays a link
        path = Path(os.path.realpath(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "is a folder, not a file", str(path))
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        with open(path, "wb") as handle:
            handle.write(data)
        return len(data), hashlib.sha256(data).hexdigest()
    if mode is not None and not stat.S_ISREG(mode):
        raise OSError(22, "is neither a regular file nor a device: not replaced", str(path))
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError as err:  # name the file asked for, not the temporary one
        raise type(err)(err.errno, err.strerror, str(path)) from None
    finally:
        if temporary.exists():
            temporary.unlink()
    return len(data), hashlib.sha256(data).hexdigest()


def write_lines(path: str | Path, lines: Iterable[str]) -> tuple[int, str]:
    """Write already encoded lines (each ending in a newline) with :func:`write_text`."""
    return write_text(path, "".join(lines))


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]], *, sort_keys: bool = False,
                ascii: bool = False) -> int:
    """Write ``records`` one a line with :func:`write_text`; return how many were written.
    ``ascii=True`` writes :func:`dumps_ascii` lines (the episode files' form)."""
    if ascii:
        lines = [dumps_ascii(record) for record in records]
    else:
        lines = [dumps_line(record, sort_keys=sort_keys) for record in records]
    write_lines(path, lines)
    return len(lines)


class EpisodeRecord(TypedDict, total=False):
    """One episode of a sweep, as a line of ``episodes.jsonl`` (the evaluation adds fields of its own).

    ``budget`` is the cap as asked, in ``unit`` (None: the full budget; see
    :mod:`budgetgym.core.budgets`), ``cap`` what it came to for the task (None at the full budget);
    ``turns``, ``calls`` and ``tokens`` count what the episode used, and ``success`` whether the task
    was solved.
    """

    env: str
    agent: str
    task: str
    reveal: str
    unit: str
    budget: int | float | str | None
    attempt: int
    seed: int
    full_budget: int
    cap: int | None
    turns: int
    calls: int
    tokens: int
    success: bool
    reward: float
    actions: list[str]
