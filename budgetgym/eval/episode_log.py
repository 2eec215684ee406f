"""The JSON-lines file of a sweep: one episode a line, appended as episodes finish, so a sweep that
is interrupted (killed, out of time, a server gone) resumes from it without repeating or losing one.

What the file promises:

* **No episode twice.** ``open()`` keeps the first line of each episode key (env, task, reveal,
  budget, attempt) and drops the rest, saying how many (``duplicates_dropped``).
* **One writer.** ``open()`` takes an OS lock (``fcntl.flock``) on ``<file>.lock`` for as long
  as the sweep runs; a second sweep into the same file is refused with :class:`SweepLockedError`.
  The kernel releases the lock when its holder dies, so a killed run leaves no stale lock.
* **Any text.** Lines are written with JSON's ASCII escapes (``core.jsonl.dumps_ascii``), so every Python ``str`` (lone surrogates included, which a server's ``\\ud800``
  escape decodes to) round-trips.
* **Nothing lost.** The log holds every record of the run; if the file is removed or replaced
  while the sweep runs, the next append rewrites it from them, and ``finalize()`` writes them all.
* **Clear errors.** Every malformed line is reported by its line number, in one message.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from budgetgym.core.jsonl import Record, dumps_ascii, write_jsonl, write_lines

Key = tuple[Any, ...]

#: What every episode record holds (readers rely on these; the rest is informative).
REQUIRED_FIELDS = ("env", "agent", "task", "reveal", "budget", "attempt", "full_budget", "turns", "success")


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


def _parse(line: str, required: Sequence[str] = REQUIRED_FIELDS) -> tuple[Record | None, str | None]:
    """A line as ``(record, None)``, or ``(None, why it is not an episode record)``."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        return None, f"not JSON ({err.msg})"
    if not isinstance(record, dict):
        return None, f"a JSON {type(record).__name__}, not an object"
    missing = [name for name in required if name not in record]
    if missing:
        return None, f"lacks {', '.join(missing)}"
    budget = record.get("budget")
    if not (budget is None or isinstance(budget, (int, float, str))) or isinstance(budget, bool):
        return None, f"budget {budget!r} is not a budget"
    return record, None


def read_records(path: str | Path, required: Sequence[str] = REQUIRED_FIELDS) -> list[Record]:
    """Every episode record of ``path``. An unfinished last line (a kill mid-write) is ignored;
    any other line that is not a record raises :class:`MalformedRecordsError` naming every such
    line by number."""
    return [record for record, _ in _read_lines(path, required)]


def _read_lines(path: str | Path, required: Sequence[str]) -> list[tuple[Record, str]]:
    """Every record of ``path`` with its line (each line parsed once), as :func:`read_records`."""
    records, problems = [], []
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record, problem = _parse(line, required)
            if problem is not None and not line.endswith("\n"):
                break  # the partial line a killed writer left behind
            if problem is not None:
                problems.append(f"line {number}: {problem}")
                continue
            records.append((record, line if line.endswith("\n") else line + "\n"))
    if problems:
        shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise MalformedRecordsError(f"{path}: {len(problems)} malformed line{'s' if len(problems) > 1 else ''} "
                                    f"({shown})")
    return records


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
        self._lines: dict[Key, str] = {}  # each record's line, by key, encoded once

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> Mapping[Key, Record]:
        """Lock the file, open it for appending; return the episodes already in it, by key.

        A file this process finalized last, unchanged since (the same bytes: size and SHA-256), is
        not decoded again: its lines are known, and a record is decoded when asked for. The cells
        of a sweep (one ``run_sweep`` each, into one file) so decode the file once, not once a
        cell."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._acquire()
        try:
            existing: Mapping[Key, Record] = {}
            lines: dict[Key, str] = {}
            known = _known_lines(self.path, self.key, self.required)
            if known is not None:
                lines = dict(known)
                existing = _LazyRecords(known)
            elif self.path.exists():
                read = _read_lines(self.path, self.required)
                found: dict[Key, Record] = {}
                for record, line in read:
                    key = self.key(record)
                    if key not in found:
                        found[key] = record
                        # A line this module wrote is kept as it is (ASCII); any other is encoded anew.
                        lines[key] = line if line.isascii() else dumps_ascii(record)
                self.duplicates_dropped = len(read) - len(found)
                existing = found
                if self.duplicates_dropped or not self._ends_cleanly():
                    self._rewrite()
            self._lines = lines
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (held across appends)
        except BaseException:
            self._release()
            raise
        return existing

    def append(self, record: Mapping[str, Any]) -> None:
        """Add one finished episode: one write of one whole line, flushed at once (a kill loses at
        most the line being written)."""
        self.extend([record])

    def extend(self, records: Sequence[Mapping[str, Any]], lines: Sequence[str] | None = None) -> None:
        """Add finished episodes that arrived together (a chunk from a worker): one write of whole
        lines, flushed at once (a kill loses at most the lines being written). ``lines`` are the
        records' :func:`~budgetgym.core.jsonl.dumps_ascii`, where the caller has them already (encoded where the episodes ran)."""
        if lines is None:
            lines = [dumps_ascii(record) for record in records]
        for record, line in zip(records, lines, strict=True):
            self._lines[self.key(record)] = line
        if self._file_replaced():
            self._handle.close()
            self._rewrite()
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            return
        self._handle.write("".join(lines))
        self._handle.flush()

    def close(self) -> None:
        """Stop writing (the file keeps what was appended) and release the lock."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._release()

    def finalize(self) -> None:
        """Write every record this run holds in canonical order (atomically) and release the lock."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        try:
            signature = self._rewrite()
            _remember(self.path, signature, self.key, self.required, self._lines)
        finally:
            self._release()

    # ------------------------------------------------------------------ internals

    def _rewrite(self) -> tuple[int, str]:
        """Write the held records in canonical order, atomically, from their encoded lines (no record
        is encoded twice); return the written file's signature."""
        return write_lines(self.path, (self._lines[key] for key in sorted(self._lines)))

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
    """Write ``records`` to ``path`` as an episodes file (atomically), creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, records, ascii=True)


def _signature(path: Path) -> tuple[int, str] | None:
    """The size and SHA-256 of a file (None when there is none): hashing is about twenty times
    cheaper than decoding its records, and no edit escapes it (a modification time can stay the
    same across an edit made within the file system's clock tick)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    return len(data), hashlib.sha256(data).hexdigest()


#: The files this process finalized last: path -> (signature, key function, required fields, lines
#: by key). Lines are strings, so nothing a caller does to its records can change them.
_FINALIZED: dict[str, tuple[tuple[int, str], Any, tuple[str, ...], dict[Key, str]]] = {}
_FINALIZED_KEPT = 4


def _remember(path: Path, signature: tuple[int, str], key: Any, required: tuple[str, ...],
              lines: dict[Key, str]) -> None:
    name = os.path.abspath(path)
    _FINALIZED.pop(name, None)
    _FINALIZED[name] = (signature, key, required, lines)
    while len(_FINALIZED) > _FINALIZED_KEPT:
        del _FINALIZED[next(iter(_FINALIZED))]


def _known_lines(path: Path, key: Any, required: tuple[str, ...]) -> dict[Key, str] | None:
    """The lines of ``path`` by key, when this process finalized it last (with the same key
    function and fields) and its bytes are the ones written then; else None (it must be read)."""
    entry = _FINALIZED.get(os.path.abspath(path))
    if entry is None or entry[1] is not key or entry[2] != required:
        return None
    try:
        if os.stat(path).st_size != entry[0][0]:
            return None
    except FileNotFoundError:
        return None
    return entry[3] if _signature(path) == entry[0] else None


class _LazyRecords(Mapping[Key, Record]):
    """Records by key, decoded from their lines when asked for (once each)."""

    def __init__(self, lines: Mapping[Key, str]) -> None:
        self._lines = lines
        self._decoded: dict[Key, Record] = {}

    def __getitem__(self, key: Key) -> Record:
        record = self._decoded.get(key)
        if record is None:
            record = self._decoded[key] = json.loads(self._lines[key])
        return record

    def __iter__(self) -> Iterator[Key]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)
