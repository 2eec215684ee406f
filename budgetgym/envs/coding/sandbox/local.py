"""The local backend: a private workspace folder, each command under bubblewrap.

Each sandbox owns a user id of its own (62000 and up, held with a lock file so no two sandboxes on
the machine share one) and a workspace folder owned by it with mode 0700, so neither another
episode's commands nor other users can read it. A command runs as

    prlimit --nproc --as --cpu --fsize --nofile  bwrap <root built from parts> -- setpriv --reuid=U ... sh -c CMD

bubblewrap (as root, building the mount namespace) gives a root file system assembled from
read-only binds of the system's parts (``/usr``, the Python in use, a few files of ``/etc``),
finished with ``--remount-ro /``, where budgetgym's own files inside those binds (its package,
where a ``pip install`` puts it beside the interpreter: the shipped libraries and every task's bug
and fix; the library set's cache) are covered by empty tmpfs folders (:func:`hidden_folders`); the
workspace bound read-write at ``/workspace`` (as root, a folder on a tmpfs of
``Limits.workspace_bytes`` mounted for this sandbox alone, so the cap holds while a command runs;
otherwise oversized files are removed when the command ends); a private ``/tmp`` and
``/dev/shm``, each a tmpfs of ``Limits.scratch_bytes`` (mounted before the interpreter's
folders are bound, so an interpreter under ``/tmp`` stays visible); new PID, network, IPC and UTS namespaces (no network at all) and ``--die-with-parent``.
``setpriv`` then drops to the sandbox's own uid with no capabilities and no new privileges:
``RLIMIT_NPROC`` counts a real uid's processes and does nothing for root, so the drop is what makes
the process cap hold. Not as root, the command runs under the invoking user in a user namespace
(``--unshare-all``), and the process cap counts that user's processes.

Without ``bwrap`` the sandbox refuses to start unless ``allow_unsandboxed=True`` (then commands run
directly under the same rlimits, in the workspace, with no isolation: for trusted code only).
"""

from __future__ import annotations

import fcntl
import glob
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping

from budgetgym.envs.coding.sandbox.base import (
    SIGNAL_REASONS, WORKDIR, Limits, RunResult, Sandbox, SandboxDied, SandboxPathError, SandboxUnavailable,
    relative_path,
)

UID_BASE = 62000
UID_SLOTS = 2000
#: The source name of a sized workspace's tmpfs, followed by ``-<pid>`` of the process that mounted it.
WORKSPACE_MOUNT = "budgetgym-workspace"
_REAPED = False  # whether this process has looked for orphaned workspace mounts


def reap_orphaned_workspaces(mounts: str = "/proc/self/mounts") -> list[str]:
    """Unmount and remove the sized workspaces whose process is gone.

    ``close()`` unmounts a workspace; a process killed before it (SIGKILL, a crash) leaves the tmpfs
    mounted, holding up to ``Limits.workspace_bytes`` of memory. The first sized sandbox of each
    process reaps them: a mount named ``budgetgym-workspace-<pid>`` whose pid no longer runs (a
    reused pid keeps its mount: the safe side). Returns the folders reaped."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return []
    reaped = []
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or not fields[0].startswith(WORKSPACE_MOUNT + "-"):
            continue
        pid = fields[0][len(WORKSPACE_MOUNT) + 1:]
        if not pid.isdigit() or _running(int(pid)):
            continue
        target = fields[1].encode().decode("unicode_escape")  # the kernel writes a space as \040
        subprocess.run(["umount", "-l", target], capture_output=True)
        root = Path(target).parent
        if root.name.startswith("budgetgym-ws-"):
            shutil.rmtree(root, ignore_errors=True)
        reaped.append(target)
    return reaped


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


_STATE_DIR = Path(os.environ.get("BUDGETGYM_SANDBOX_DIR", tempfile.gettempdir())) / "budgetgym-sandbox"
INSTALL_HINT = ("bubblewrap is not installed: install it (Debian/Ubuntu: `apt-get install -y bubblewrap`, "
                "Fedora: `dnf install bubblewrap`), or pass allow_unsandboxed=True to run commands "
                "without isolation (trusted code only)")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/hosts")
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _python_roots(python: str) -> list[str]:
    """The folders the sandbox's Python needs, symlinks resolved: its environment (the folder above
    its ``bin``: a virtual environment, a conda env) and the installation it runs on; none under
    ``/usr``, which is bound whole. A folder inside another is not bound twice."""
    roots: list[str] = []
    candidates = [os.path.dirname(_bin_folder(python)), os.path.dirname(os.path.dirname(os.path.realpath(python)))]
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        candidates += [sys.prefix, sys.base_prefix]
    for path in map(os.path.realpath, candidates):
        if path in ("/", "/usr") or path.startswith("/usr/") or path in roots:
            continue
        roots.append(path)
    return [p for p in roots if not any(p != q and p.startswith(q + "/") for q in roots)]


def hidden_folders(roots: list[str]) -> list[str]:
    """budgetgym's own folders inside what a sandbox binds (``/usr`` and the Python ``roots``),
    which its commands must not read: the package (wherever an install put it: the one running, and
    any in the roots' site- or dist-packages), whose data holds the shipped libraries (the fix of
    every task) and the task records (each bug's fixed line), and the library set's cache."""
    import budgetgym
    from budgetgym.envs.coding.libraries.fetch import cache_dir

    bound = ["/usr", *roots]
    candidates = {os.path.dirname(budgetgym.__file__), str(cache_dir())}
    for root in [*bound, "/usr/local"]:
        candidates.update(glob.glob(os.path.join(glob.escape(root), "lib", "python3*", "*-packages", "budgetgym")))
    found = {os.path.realpath(path) for path in candidates}
    return sorted(path for path in found
                  if os.path.isdir(path) and any(path == root or path.startswith(root + "/") for root in bound))


def _bin_folder(python: str) -> str:
    """The folder of ``python`` with symlinks in the folder's own path resolved (not the file's: a
    virtual environment's ``bin/python`` links to its base interpreter, and must be run from here)."""
    return os.path.realpath(os.path.dirname(os.path.abspath(python)))


class LocalSandbox(Sandbox):
    backend = "local"

    def __init__(self, limits: Limits | None = None, allow_unsandboxed: bool = False,
                 python: str | None = None) -> None:
        super().__init__(limits)
        self.bwrap = shutil.which("bwrap")
        if self.bwrap is None and not allow_unsandboxed:
            raise SandboxUnavailable(INSTALL_HINT)
        self.isolated = self.bwrap is not None
        self.python = python or sys.executable
        self.as_root = os.geteuid() == 0
        self._lock_fd: int | None = None
        self.uid = self._claim_uid() if self.as_root and self.isolated else os.getuid()
        self.gid = self.uid if self.as_root and self.isolated else os.getgid()
        self.root = Path(tempfile.mkdtemp(prefix="budgetgym-ws-"))
        os.chmod(self.root, 0o711)
        #: As root, the workspace lives on a tmpfs of ``Limits.workspace_bytes`` of its own, so a
        #: command cannot grow it past the cap while it runs (writes fail: no space left on
        #: device); otherwise it is a host folder held to the cap when each command ends.
        self.sized = self.as_root and self.isolated and self._mount_sized(self.root / "fs")
        self.workspace = self.root / "fs" / "workspace" if self.sized else self.root / "workspace"
        self._grade_count = 0
        self._closed = False
        self._bind_args = self._system_binds()
        self._make_workspace()

    # ------------------------------------------------------------------ setup

    def _claim_uid(self) -> int:
        lock_dir = _STATE_DIR / "uids"
        lock_dir.mkdir(parents=True, exist_ok=True)
        start = os.getpid() % UID_SLOTS
        for offset in range(UID_SLOTS):
            uid = UID_BASE + (start + offset) % UID_SLOTS
            fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self._lock_fd = fd
            return uid
        raise SandboxUnavailable(f"all {UID_SLOTS} sandbox user ids are in use")

    def _system_binds(self) -> list[str]:
        args: list[str] = ["--ro-bind", "/usr", "/usr"]
        made: set[str] = {"/", "/usr"}

        def parents(path: str) -> None:
            parts = Path(path).parts[1:-1]
            current = ""
            for part in parts:
                current += "/" + part
                if current not in made:
                    args.extend(["--perms", "0755", "--dir", current])
                    made.add(current)

        for top in _TOP_LINKS:
            if os.path.islink(top):
                args.extend(["--symlink", os.readlink(top), top])
            elif os.path.isdir(top):
                args.extend(["--ro-bind", top, top])
        for path in _ETC_FILES:
            if os.path.exists(path):
                parents(path)
                args.extend(["--ro-bind", path, path])
        # The scratch file systems first, sized: an interpreter that lives under /tmp (a checkout's
        # virtual environment) is bound into the new /tmp after it is mounted, not hidden by it.
        scratch = str(self.limits.scratch_bytes)
        args.extend(["--dev", "/dev", "--proc", "/proc"])
        for folder in ("/tmp", "/dev/shm"):
            args.extend(["--perms", "1777", "--size", scratch, "--tmpfs", folder])
            made.add(folder)
        roots = _python_roots(self.python)
        for path in roots:
            parents(path + "/x")
            args.extend(["--ro-bind", path, path])
            made.add(path)
        for path in hidden_folders(roots):  # mounted over the binds above: nothing of them shows there
            args.extend(["--tmpfs", path])
        return args

    def _mount_sized(self, folder: Path) -> bool:
        global _REAPED
        if not _REAPED:
            _REAPED = True
            reap_orphaned_workspaces()
        folder.mkdir(mode=0o711)
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.limits.workspace_bytes},mode=0711,nosuid,nodev",
                               f"{WORKSPACE_MOUNT}-{os.getpid()}", str(folder)], capture_output=True)
        if done.returncode != 0:
            folder.rmdir()
            return False
        return True

    def _make_workspace(self) -> None:
        self.workspace.mkdir(mode=0o700)
        if self.as_root and self.isolated:
            os.chown(self.workspace, self.uid, self.gid)

    # ------------------------------------------------------------------ files

    def _host_path(self, path: str, *, must_exist: bool) -> Path:
        """The host path of a workspace path, symlinks resolved, refused when it leaves the workspace."""
        rel = relative_path(path)
        root = os.path.realpath(self.workspace)
        resolved = os.path.realpath(os.path.join(root, rel))
        if resolved != root and not resolved.startswith(root + os.sep):
            raise SandboxPathError(f"{path!r} resolves outside the workspace {WORKDIR}")
        if must_exist and not os.path.exists(resolved):
            raise FileNotFoundError(f"{path}: no such file")
        return Path(resolved)

    def read_bytes(self, path: str) -> bytes:
        self._check_alive()
        target = self._host_path(path, must_exist=True)
        if not target.is_file():
            raise SandboxPathError(f"{path} is not a file")
        if target.stat().st_size > self.limits.file_bytes:
            raise SandboxPathError(f"{path} is larger than {self.limits.file_bytes} bytes")
        return target.read_bytes()

    def write_bytes(self, path: str, data: bytes) -> None:
        self._check_alive()
        if len(data) > self.limits.file_bytes:
            raise SandboxPathError(f"the content is larger than {self.limits.file_bytes} bytes")
        target = self._host_path(path, must_exist=False)
        if target == Path(os.path.realpath(self.workspace)) or target.is_dir():
            raise SandboxPathError(f"{path} is a folder")
        # create parents one by one, refusing any that is (or resolves) outside
        missing = []
        parent = target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        if not parent.is_dir():
            raise SandboxPathError(f"{path}: a part of the path is a file, not a folder")
        for folder in reversed(missing):
            folder.mkdir()
            self._own(folder)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self._own(target)

    def _own(self, path: Path | str) -> None:
        if self.as_root and self.isolated:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)

    def files(self) -> dict[str, bytes]:
        self._check_alive()
        found: dict[str, bytes] = {}
        for rel, full, info in self._entries():
            if stat.S_ISREG(info.st_mode) and info.st_size <= self.limits.file_bytes:
                with open(full, "rb") as handle:
                    found[rel] = handle.read()
        return found

    def _entries(self) -> Iterator[tuple[str, str, os.stat_result]]:
        """(workspace path, host path, lstat) of everything in the workspace but its folders: each
        folder's entries by name, then its subfolders' in turn (symlinked ones not entered), as
        ``os.walk`` orders them. One scandir walk with an explicit stack: it runs after every command
        (the size check, then the read back), and a tree deeper than the interpreter's recursion
        limit, which ``mkdir`` in a loop makes, must not stop it (``os.walk`` recursed)."""
        stack = [("", str(self.workspace))]
        while stack:
            prefix, folder = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError:  # unreadable or gone: os.walk skipped it too
                continue
            folders = []
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append((prefix + entry.name + "/", entry.path))
                    else:
                        yield prefix + entry.name, entry.path, entry.stat(follow_symlinks=False)
                except OSError:
                    continue
            stack.extend(reversed(folders))

    def load(self, files: Mapping[str, str | bytes]) -> None:
        self._check_alive()
        _remove_tree(str(self.workspace))
        self._make_workspace()
        self._write_tree(self.workspace, files, own=True)

    def _write_tree(self, root: Path, files: Mapping[str, str | bytes], *, own: bool) -> None:
        # os.path, not pathlib: pathlib interns every path part, which grows the interpreter's
        # table of interned strings with every episode's paths.
        base = str(root)
        made: set[str] = {base}
        for path, content in files.items():
            target = os.path.join(base, relative_path(path))
            folder = os.path.dirname(target)
            if folder not in made:
                missing = []
                current = folder
                while current not in made and not os.path.isdir(current):
                    missing.append(current)
                    current = os.path.dirname(current)
                for sub in reversed(missing):
                    os.mkdir(sub)
                    if own:
                        self._own(sub)
                    made.add(sub)
                made.add(folder)
            with open(target, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            if own:
                self._own(target)

    # ------------------------------------------------------------------ commands

    def command_line(self, bind: list[str], command: str) -> list[str]:
        """The argv that runs ``command`` in the sandbox with ``bind`` (bwrap's bind arguments): the line
        every run spawns, limits and namespaces included, so it can also be run (and timed) bare."""
        limits = self.limits
        rlimits = [f"--as={limits.memory_bytes}", f"--cpu={limits.cpu_seconds}", f"--fsize={limits.file_bytes}",
                   "--nofile=256", "--core=0"]
        env = {"PATH": f"{_bin_folder(self.python)}:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
               "PYTHONHASHSEED": "0", "TERM": "dumb"}
        if not self.isolated:
            return ["prlimit", *rlimits, "--", "/bin/sh", "-c", command]
        setenv: list[str] = ["--clearenv"]
        for key, value in env.items():
            setenv.extend(["--setenv", key, value])
        if self.as_root:
            namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
            nproc = limits.processes
            drop = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--no-new-privs",
                    "--inh-caps=-all", "--bounding-set=-all"]
        else:
            namespaces = ["--unshare-all"]
            nproc = _user_process_count() + limits.processes
            drop = []
        return ["prlimit", f"--nproc={nproc}", *rlimits, "--", self.bwrap, *namespaces, "--die-with-parent",
                "--new-session", *self._bind_args, *bind, "--chdir", WORKDIR, "--remount-ro", "/", *setenv, "--",
                *drop, "/bin/sh", "-c", command]

    def run(self, command: str, timeout: float | None = None) -> RunResult:
        self._check_alive()
        bind = ["--bind", str(self.workspace), WORKDIR] if self.isolated else []
        cwd = str(self.workspace)
        result = self._spawn(self.command_line(bind, command), cwd, self.limits.wall(timeout))
        over = self._workspace_size() - self.limits.workspace_bytes
        if over > 0:
            removed = self._trim_workspace(over)
            result = RunResult(result.exit_code, result.output, result.timed_out, result.output_limited, result.signal,
                               result.notes + (f"the workspace grew past {self.limits.workspace_bytes} bytes: removed "
                                               f"{', '.join(removed)}",))
        return result

    def run_isolated(self, files: Mapping[str, str | bytes], command: str, timeout: float | None = None) -> RunResult:
        self._check_alive()
        self._grade_count += 1
        grade = self.root / f"grade-{self._grade_count}"
        grade.mkdir(mode=0o755)
        try:
            self._write_tree(grade, files, own=False)  # owned by this process's user: read-only to the sandbox
            bind = ["--ro-bind", str(grade), WORKDIR] if self.isolated else []
            return self._spawn(self.command_line(bind, command), str(grade), self.limits.wall(timeout, grading=True))
        finally:
            shutil.rmtree(grade, ignore_errors=True)

    def grading_identity(self) -> tuple:
        return (*super().grading_identity(), self.python, self.isolated, self.as_root)

    def _spawn(self, argv: list[str], cwd: str, wall: float) -> RunResult:
        limits = self.limits
        # Unsandboxed, the command gets a session of its own: off any terminal, and killed as a group.
        # Under bubblewrap it needs neither: bwrap's --new-session detaches the command, and killing
        # bwrap ends its PID namespace (--die-with-parent), every process in it; a session per
        # command costs a scheduler autogroup each time (about 4 ms a command on a loaded machine).
        process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, start_new_session=not self.isolated)
        chunks: list[bytes] = []
        size = 0
        timed_out = limited = False
        deadline = time.monotonic() + wall
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                if not selector.select(remaining):
                    continue
                data = os.read(process.stdout.fileno(), 65536)
                if not data:
                    break
                chunks.append(data)
                size += len(data)
                if size > limits.output_kill_bytes:
                    limited = True
                    break
        if timed_out or limited:
            self._stop(process)
        try:
            code = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._stop(process)
            code = process.wait()
        process.stdout.close()
        output = b"".join(chunks)[: limits.output_kill_bytes].decode("utf-8", errors="replace")
        signal_reason = None
        number = -code if code < 0 else (code - 128 if code > 128 else 0)
        if number in SIGNAL_REASONS and not (timed_out or limited):
            signal_reason = SIGNAL_REASONS[number]
        return RunResult(None if (timed_out or limited) else code, output, timed_out, limited, signal_reason)

    def _stop(self, process: subprocess.Popen) -> None:
        """Kill a command and every process it started: under bubblewrap, bwrap itself (its PID
        namespace, and all in it, dies with it); unsandboxed, the command's session's group."""
        if self.isolated:
            process.kill()
            return
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _workspace_size(self) -> int:
        return sum(info.st_size for _, _, info in self._entries())

    def _trim_workspace(self, over: int) -> list[str]:
        removed = []
        for size, rel, full in sorted(((info.st_size, rel, full) for rel, full, info in self._entries()), reverse=True):
            if over <= 0:
                break
            os.unlink(full)
            over -= size
            removed.append(rel)
        return removed

    # ------------------------------------------------------------------ lifecycle

    def alive(self) -> bool:
        return not self._closed and self.workspace.is_dir()

    def _check_alive(self) -> None:
        if self._closed:
            raise SandboxDied("the sandbox is closed")
        if not self.workspace.is_dir():
            raise SandboxDied(f"the sandbox's workspace {self.workspace} is gone")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if getattr(self, "sized", False):
            subprocess.run(["umount", "-l", str(self.root / "fs")], capture_output=True)
        try:
            _remove_tree(str(self.root))
        except OSError:
            pass
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def revive(self) -> None:
        """Make a dead sandbox usable again with an empty workspace (the caller reloads the files)."""
        if self._closed:
            raise SandboxDied("the sandbox is closed")
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o711)
        self.workspace.parent.mkdir(parents=True, exist_ok=True)
        if not self.workspace.is_dir():
            self._make_workspace()


def _remove_tree(path: str) -> None:
    """Remove the folder ``path`` and everything in it, however deep: a command can nest folders
    past the interpreter's recursion limit (``mkdir d && cd d`` in a loop), past which
    ``shutil.rmtree`` (one call per level) fails, and past ``PATH_MAX``, which no path reaches. One
    folder is held open at a time, entered by name and left by ``..``; symlinks are removed, never
    followed. Nothing may run in the tree meanwhile (between commands nothing does)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return
    inside: list[str] = []  # the folders entered, outermost first
    try:
        while True:
            folder = None
            with os.scandir(fd) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        folder = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if folder is not None:
                child = os.open(folder, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                inside.append(folder)
            elif inside:
                parent = os.open("..", flags, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(inside.pop(), dir_fd=fd)
            else:
                break
    finally:
        os.close(fd)
    os.rmdir(path)


def _user_process_count() -> int:
    uid = os.getuid()
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count
