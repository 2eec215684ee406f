"""The sandbox interface and what both backends share."""

from __future__ import annotations

import abc
import posixpath
from dataclasses import dataclass, field
from typing import Mapping

from budgetgym.core.env import BackendUnavailable

#: Where the repository lives, as the agent sees it, in both backends.
WORKDIR = "/workspace"


class SandboxUnavailable(BackendUnavailable):
    """The backend cannot run here (bubblewrap missing, no Docker engine); the message says how to fix it."""


class SandboxDied(RuntimeError):
    """The sandbox stopped working mid-episode (its container or workspace is gone)."""


class SandboxPathError(ValueError):
    """A path outside the workspace, or not a file where one is needed."""


@dataclass(frozen=True)
class Limits:
    """Per-command limits. Sizes in bytes, times in seconds."""

    wall_seconds: float = 30.0
    cpu_seconds: int = 30
    #: The wall limit of budgetgym's own runs (``run_isolated``: grading and its reference runs),
    #: when above ``wall_seconds``. The CPU limit stops a loop there as anywhere; the wall limit only
    #: stops a wait, and a loaded machine stretches a run's wall clock (a six grading run of 6-7 s
    #: stopped at 30 s in a full test run and failed a correct submission), so a verdict gets room.
    grading_wall_seconds: float = 120.0
    memory_bytes: int = 1 << 30
    processes: int = 64
    file_bytes: int = 16 << 20
    workspace_bytes: int = 64 << 20
    #: Each scratch file system a command can write (``/tmp``, ``/var/tmp``, ``/dev/shm``, ...): a
    #: tmpfs of this size, so no command puts more than this into host memory or disk through it.
    scratch_bytes: int = 64 << 20
    output_bytes: int = 16_384
    #: Past this much output the command is stopped: nobody reads a gigabyte of log.
    output_kill_bytes: int = 4 << 20

    def wall(self, timeout: float | None, grading: bool = False) -> float:
        """The wall limit of one run: ``wall_seconds`` (``grading``: the larger of it and
        ``grading_wall_seconds``), lowered to ``timeout`` when one is given."""
        limit = max(self.wall_seconds, self.grading_wall_seconds) if grading else self.wall_seconds
        return limit if timeout is None else min(timeout, limit)


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None
    output: str              # the whole output read (up to ``output_kill_bytes``), for parsing
    timed_out: bool = False
    output_limited: bool = False
    signal: str | None = None
    notes: tuple[str, ...] = field(default=())

    def shown(self, limit: int) -> str:
        """The output as the agent sees it: at most ``limit`` characters, head and tail kept, and why it ended."""
        text = self.output
        if len(text) > limit:
            head = limit // 4
            tail = limit - head
            cut = len(text) - head - tail
            text = f"{text[:head]}\n[... {cut} characters of output cut ...]\n{text[-tail:]}"
        lines = [text.rstrip("\n")] if text.strip() else []
        if self.timed_out:
            lines.append("[the command was stopped: it ran past the time limit]")
        if self.output_limited:
            lines.append("[the command was stopped: it wrote more output than the sandbox keeps]")
        if self.signal and not (self.timed_out or self.output_limited):
            lines.append(f"[the command was killed: {self.signal}]")
        lines.extend(f"[{note}]" for note in self.notes)
        if self.exit_code is not None and not (self.timed_out or self.output_limited):
            lines.append(f"[exit code {self.exit_code}]")
        return "\n".join(lines)


SIGNAL_REASONS = {9: "SIGKILL (memory or process limit, or stopped)", 24: "CPU time limit exceeded (SIGXCPU)",
                  25: "file size limit exceeded (SIGXFSZ)", 11: "segmentation fault (SIGSEGV)", 6: "aborted (SIGABRT)"}


#: The longest file name and workspace path the file tools take, in UTF-8 bytes (the file system's
#: own limits: NAME_MAX, and PATH_MAX less room for where the workspace lives on the host).
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 2048
_CONTROL = {chr(c) for c in range(32)} | {"\x7f"}


def text_problem(text: str, what: str, *, allow_controls: bool = True) -> str | None:
    """Why ``text`` cannot reach a shell or a file system, or None: a NUL (no C string holds one),
    a lone surrogate (not encodable as UTF-8), or, with ``allow_controls=False``, any other C0
    control character or DEL (file names)."""
    if "\x00" in text:
        return f"the {what} contains a NUL character"
    if not allow_controls:
        bad = next((c for c in text if c in _CONTROL), None)
        if bad is not None:
            return f"the {what} contains the control character {bad!r}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (f"the {what} contains a lone surrogate (U+{ord(text[err.start]):04X} at position {err.start}), "
                f"which is not valid UTF-8")
    return None


def relative_path(path: str, root: str = WORKDIR) -> str:
    """The workspace-relative POSIX path of ``path`` (relative, or absolute under ``root``), or a
    :class:`SandboxPathError` for anything that would leave the workspace or that no file system
    takes (control characters, lone surrogates, a name over 255 bytes, a path over 2,048)."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxPathError("the path is empty")
    problem = text_problem(path, "path", allow_controls=False)
    if problem:
        raise SandboxPathError(problem)
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise SandboxPathError(f"the path is longer than {MAX_PATH_BYTES} bytes")
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in path.split("/")):
        raise SandboxPathError(f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
    text = path.strip()
    if text.startswith("/"):
        normal = posixpath.normpath(text)
        if normal == root:
            return "."
        if not normal.startswith(root + "/"):
            raise SandboxPathError(f"{path!r} is outside the workspace {root}")
        text = normal[len(root) + 1:]
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise SandboxPathError(f"{path!r} is outside the workspace {root}")
    return normal


class Sandbox(abc.ABC):
    """One episode's isolated workspace and the means to run commands in it."""

    backend: str = ""
    #: The workspace's absolute path inside the sandbox (a backend may place it elsewhere).
    workdir: str = WORKDIR

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()

    @abc.abstractmethod
    def load(self, files: Mapping[str, str | bytes]) -> None:
        """Make the workspace hold exactly ``files`` (relative path -> content); a fresh episode."""

    @abc.abstractmethod
    def run(self, command: str, timeout: float | None = None) -> RunResult:
        """Run a shell command in the workspace under the limits."""

    @abc.abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """A workspace file's bytes; FileNotFoundError / SandboxPathError otherwise."""

    @abc.abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a workspace file, creating its folders."""

    @abc.abstractmethod
    def files(self) -> dict[str, bytes]:
        """Every regular file of the workspace (relative path -> bytes); symlinks, folders on their
        own and special files are not listed."""

    @abc.abstractmethod
    def run_isolated(self, files: Mapping[str, str | bytes], command: str, timeout: float | None = None) -> RunResult:
        """Run ``command`` on a fresh, read-only copy of ``files`` that nothing the agent started can
        touch (grading)."""

    def grading_identity(self) -> tuple:
        """What, besides the files and the command, decides what :meth:`run_isolated` gives: the
        backend and its limits (a backend adds its interpreter or image). Gradings of the same tree
        under equal identities may share a verdict (:func:`budgetgym.envs.coding.grading.run_grading`)."""
        return (self.backend, self.limits)

    @abc.abstractmethod
    def alive(self) -> bool:
        """Whether the sandbox still works."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release everything (idempotent)."""

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SandboxPathError(f"{path} is not a UTF-8 text file") from None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
