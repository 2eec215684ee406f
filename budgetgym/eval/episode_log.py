"""The JSON-lines file of a sweep: one episode a line, appended as episodes finish, so a sweep that
is interrupted (killed, out of time, a server gone) resumes from it without repeating or losing one.

What the file promises:

* **No episode twice.** ``open()`` keeps the first line of each episode key (env, task, reveal,
  budget, attempt) and drops the rest, saying how many (``duplicates_dropped``).
* **One writer.** ``open()`` takes an OS lock (``fcntl.flock``) on ``<file>.lock`` for as long
  as the sweep runs; a second sweep into the same file is refused with :class:`SweepLockedError`.
  The kernel releases the lock when its holder dies, so a killed run leaves no stale lock.
* **Any text.** Lines are written with JSON's ASCII escapes, so every Python ``str`` (lone
  surrogates included, which a server's ``\\ud800`` escape decodes to) round-trips.
* **Nothing lost.** The log holds every record of the run; if the file is removed or replaced
  while the sweep runs, the next append rewrites it from them, and ``finalize()`` writes them all.
* **Clear errors.** Every malformed line is reported by its line number, in one message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from budgetgym.core.jsonl import Record

Key = tuple[Any, ...]

#: What every episode record holds (readers rely on these; the rest is informative).
REQUIRED_FIELDS = ("env", "agent", "task", "reveal", "budget", "attempt", "max_turns", "turns", "success")


class SweepLockedError(RuntimeError):
    """Another sweep is writing the same episodes file."""


class MalformedRecordsError(ValueError):
    """An episodes file holds lines that are not episode records (the message lists them all)."""


def episode_key(record: Mapping[str, Any]) -> Key:
    """What identifies an episode within a sweep file (a job of the sweep's plan)."""
    return (record["env"], record["task"], record["reveal"], budget_key(record["budget"]), record["attempt"])


def budget_key(budget: Any) -> tuple[Any, ...]:
    """An orderable key for a budget: 1 (one turn), 1.0 (the full budget) and "1x" (the shortest
    solution) are three different budgets."""
    if budget is None:
        return (0, 0.0, 0)
    if isinstance(budget, str):
        return (3, float(budget.rstrip("x")), 0)
    return (1 if isinstance(budget, int) else 2, float(budget), 0)


def sort_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    """Canonical order (the key itself): env, task, reveal; full-budget runs first, then turns,
    shares, multiples; attempts."""
    return episode_key(record)


def _problem(line: str, required: Sequence[str] = REQUIRED_FIELDS) -> str | None:
    """Why a line is not an episode record, or None when it is one."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return f"not JSON ({err.msg})"
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    missing = [name for name in required if name not in record]
    if missing:
        return f"lacks {', '.join(missing)}"
    budget = record.get("budget")
    if not (budget is None or isinstance(budget, (int, float, str))) or isinstance(budget, bool):
        return f"budget {budget!r} is not a budget"
    return None


def read_records(path: str | Path, required: Sequence[str] = REQUIRED_FIELDS) -> list[Record]:
    """Every episode record of ``path``. An unfinished last line (a kill mid-write) is ignored;
    any other line that is not a record raises :class:`MalformedRecordsError` naming every such
    line by number."""
    records, problems = [], []
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            problem = _problem(line, required)
            if problem is not None and not line.endswith("\n"):
                break  # the partial line a killed writer left behind
            if problem is not None:
                problems.append(f"line {number}: {problem}")
                continue
            records.append(json.loads(line))
    if problems:
        shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise MalformedRecordsError(f"{path}: {len(problems)} malformed line{'s' if len(problems) > 1 else ''} "
                                    f"({shown})")
    return records


def dumps(record: Mapping[str, Any]) -> str:
    """One record as one line: ASCII escapes (any str round-trips), sorted keys (stable bytes)."""
    return json.dumps(record, ensure_ascii=True, sort_keys=True, allow_nan=False) + "\n"


class EpisodeLog:
    """The episodes file of a running sweep: locked, deduplicated, append-only, rewritten in
    canonical order by ``finalize()`` so an interrupted and resumed sweep ends byte for byte like an
    uninterrupted one, whatever the executor's completion order."""

    def __init__(self, path: str | Path, key: Callable[[Mapping[str, Any]], Key] = episode_key,
                 required: Sequence[str] = REQUIRED_FIELDS) -> None:
        """``key`` identifies a record (and orders the file); ``required`` are the fields every
        line must hold (the defaults are a sweep's; the probes log their own records)."""
        self.path = Path(path)
        self.key = key
        self.required = tuple(required)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.duplicates_dropped = 0
        self._handle: Any = None
        self._lock: Any = None
        self._held: dict[Key, Record] = {}

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> dict[Key, Record]:
        """Lock the file, open it for appending; return the episodes already in it, by key."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._acquire()
        try:
            existing: dict[Key, Record] = {}
            if self.path.exists():
                records = read_records(self.path, self.required)
                for record in records:
                    existing.setdefault(self.key(record), record)
                self.duplicates_dropped = len(records) - len(existing)
                if self.duplicates_dropped or not self._ends_cleanly():
                    write_records(self.path, sorted(existing.values(), key=self.key))
            self._held = dict(existing)
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (held across appends)
        except BaseException:
            self._release()
            raise
        return existing

    def append(self, record: Mapping[str, Any]) -> None:
        """Add one finished episode: one write of one whole line, flushed at once (a kill loses at
        most the line being written)."""
        self._held[self.key(record)] = dict(record)
        if self._file_replaced():
            self._handle.close()
            write_records(self.path, sorted(self._held.values(), key=self.key))
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            return
        self._handle.write(dumps(record))
        self._handle.flush()

    def close(self) -> None:
        """Stop writing (the file keeps what was appended) and release the lock."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._release()

    def finalize(self) -> list[Record]:
        """Write every record this run holds in canonical order (atomically), release the lock, and
        return the records."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        records = sorted(self._held.values(), key=self.key)
        try:
            write_records(self.path, records)
        finally:
            self._release()
        return records

    # ------------------------------------------------------------------ internals

    def _acquire(self) -> None:
        import fcntl

        handle = open(self.lock_path, "a+", encoding="utf-8")  # noqa: SIM115  (held while the sweep runs)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            raise SweepLockedError(
                f"another sweep is writing {self.path} ({holder or 'a running process'} holds {self.lock_path}); "
                "wait for it to end, or write to another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        self._lock = handle

    def _release(self) -> None:
        if self._lock is not None:
            import fcntl

            fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _ends_cleanly(self) -> bool:
        with open(self.path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return True
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def _file_replaced(self) -> bool:
        """Whether the file this log appends to is no longer the one at ``path`` (removed, moved)."""
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            return True
        mine = os.fstat(self._handle.fileno())
        return (at_path.st_dev, at_path.st_ino) != (mine.st_dev, mine.st_ino)


def write_records(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write ``records`` to ``path`` atomically (a temporary file, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(dumps(record))
    os.replace(temporary, path)
