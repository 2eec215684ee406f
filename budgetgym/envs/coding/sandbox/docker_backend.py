"""The Docker backend: each episode in its own container, taken from a pool of warm ones.

Containers run the image (default: :data:`IMAGE`, built locally by :mod:`budgetgym.envs.coding.image`)
with no network, a memory cap (swap included), one CPU, a process cap, file-size and CPU-time
rlimits, every capability dropped and ``no-new-privileges``. Commands run as uid 1000 in
``/workspace`` under ``timeout -s KILL``; after each command every process of that user is killed,
so nothing the agent starts outlives its command (as in the local backend's PID namespace). File
tools check, inside the container, that a path resolves inside ``/workspace`` before touching it.
Every place the sandbox user can write is a sized tmpfs: ``/tmp``, ``/var/tmp``, ``/run/lock`` and
``/dev/shm`` (``Limits.scratch_bytes`` each) and the workspace (a tmpfs volume of
``Limits.workspace_bytes``); grading runs in a fresh container, so none of them reaches it.

The pool keeps ``pool_size`` started containers per (engine, image, limits); taking one starts a
replacement in a background thread, so a reset costs one archive upload. A used container is
removed when the episode ends (``close()``, the env's teardown) or when the next episode takes a
fresh one. ``DOCKER_HOST`` (and the other variables of ``docker.from_env``) choose the engine.
"""

from __future__ import annotations

import atexit
import io
import os
import socket
import tarfile
import threading
import time
import weakref
from typing import Mapping

from budgetgym.envs.coding.sandbox.base import (
    SIGNAL_REASONS, WORKDIR, Limits, RunResult, Sandbox, SandboxDied, SandboxPathError, SandboxUnavailable,
    relative_path,
)

#: The image episodes run in by default, built by ``python -m budgetgym.envs.coding.image``
#: (named here, where the backend and the builder both read it).
IMAGE = "budgetgym/coding-python:bookworm-1"
USER = "1000:1000"
LABEL = "budgetgym.coding"
OWNER = f"{socket.gethostname()}:{os.getpid()}"
#: The environment of every command run in a container (a benchmark's bare ``docker exec`` uses it too).
COMMAND_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": "0",
               "TERM": "dumb"}
# Runs inside the container: resolve a workspace path and refuse one that leaves the workspace.
_RESOLVE = r"""
import os, sys
root = os.path.realpath(sys.argv[1]); target = os.path.realpath(os.path.join(root, sys.argv[2]))
if target != root and not target.startswith(root + "/"):
    sys.stderr.write("outside"); sys.exit(2)
if sys.argv[3] == "read":
    if not os.path.exists(target): sys.stderr.write("missing"); sys.exit(3)
    if not os.path.isfile(target): sys.stderr.write("notfile"); sys.exit(4)
    if os.path.getsize(target) > int(sys.argv[4]): sys.stderr.write("large"); sys.exit(5)
    sys.stdout.buffer.write(open(target, "rb").read())
else:
    if os.path.isdir(target): sys.stderr.write("isdir"); sys.exit(4)
    parent = os.path.dirname(target)
    while not os.path.lexists(parent): parent = os.path.dirname(parent)
    if not os.path.isdir(parent): sys.stderr.write("notdir"); sys.exit(6)
    sys.stdout.write(os.path.relpath(target, root))
"""


# One exec per command for a non-root user: the command under `timeout -s KILL` (its stderr into
# its stdout), then every process of the user ended (`kill -1` spares the caller), then the
# workspace's manifest on stderr: "sha1  ./path" for each regular file within the size limit,
# closed by an end mark that carries the command's exit status (the step needs no exec_inspect
# round trip to learn it). The end mark is written only when find and sha1sum succeeded: a file or
# folder the user made unreadable (chmod 000) is missing from their output, and a manifest without
# it could match the last read and hide the file; without the end mark the workspace is read back.
# find runs sha1sum itself (-exec ... +: no run when nothing matched), one process fewer than a
# pipe into xargs: every process started in the container is a fork and exec on the step's clock.
# The command can write into that stderr too (the user's processes may open /proc/<this shell>/fd/*),
# so the manifest is what follows the last _MANIFEST_MARK, written once every other thread of the
# user ($4) is dead (a zombie at most: one killed mid-write could still add bytes); a user thread
# still alive after 200 looks leaves the mark out, and the workspace is read back instead. Each
# status file is read up to its Uid line (State comes before it): dash reads a byte a system call.
_MANIFEST_MARK = b"\0budgetgym-manifest\0"
_END_MARK = b"\0budgetgym-exit "
_RUN_AND_CLEAN = r"""timeout -s KILL "$1" /bin/sh -c "$2" 2>&1
code=$?
kill -9 -1 2>/dev/null
looks=0
while [ $looks -lt 200 ]; do
  alive=
  for status in /proc/[0-9]*/task/[0-9]*/status; do
    case $status in /proc/$$/*) continue ;; esac
    uid= state=
    while read -r key first rest; do
      case $key in State:) state=$first ;; Uid:) uid=$first; break ;; esac
    done 2>/dev/null < "$status"
    if [ "$uid" = "$4" ] && [ "$state" != Z ] && [ "$state" != X ]; then alive=1; break; fi
  done
  [ -z "$alive" ] && break
  looks=$((looks + 1))
done
if [ -z "$alive" ]; then
  printf '\000budgetgym-manifest\000' >&2
  find . -type f -size -"$3"c -exec sha1sum -z -- {} + >&2 2>/dev/null && printf '\000budgetgym-exit %d\000' $code >&2
fi
exit $code"""


def _parse_manifest(data: bytes) -> tuple[dict[str, str], int] | None:
    """The manifest after the last mark (what the command wrote before it is not the manifest's) and
    the command's exit status from its end mark; None without both marks (a user process outlived
    the kill, or find or sha1sum failed on a file: the workspace must be read back)."""
    cut = data.rfind(_MANIFEST_MARK)
    if cut < 0:
        return None
    body, end, status = data[cut + len(_MANIFEST_MARK):].rpartition(_END_MARK)
    if not end or not status.endswith(b"\0") or not status[:-1].isdigit():
        return None
    manifest = {}
    for entry in body.split(b"\0"):
        digest, _, path = entry.partition(b"  ")
        if path.startswith(b"./"):
            manifest[path[2:].decode("utf-8", errors="surrogateescape")] = digest.decode("ascii", errors="replace")
    return manifest, int(status[:-1])


def _manifest_of(files: Mapping[str, bytes]) -> dict[str, str]:
    import hashlib

    return {path: hashlib.sha1(data).hexdigest() for path, data in files.items()}


def docker_client():
    """A client of the engine ``DOCKER_HOST`` names (default: the local socket), checked with a ping."""
    try:
        import docker
        import docker.errors
    except ImportError:
        raise SandboxUnavailable("the docker backend needs the Docker SDK: pip install 'budgetgym[docker]'") from None
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as err:
        raise SandboxUnavailable(
            f"no Docker engine reachable at {where} ({err}); start one (Debian: `apt-get install -y docker.io` "
            f"then `dockerd &`) or point DOCKER_HOST at a running engine") from None
    _clients.add(client)
    return client


def _tar(files: Mapping[str, str | bytes], *, uid: int, prefix: str = "", dir_mode: int = 0o755,
         file_mode: int = 0o644, top: str | None = None) -> bytes:
    buffer = io.BytesIO()
    now = time.time()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        made: set[str] = set()

        def folder(name: str) -> None:
            if not name or name in made:
                return
            folder(os.path.dirname(name))
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.uid, info.gid, info.mtime = tarfile.DIRTYPE, dir_mode, uid, uid, now
            archive.addfile(info)
            made.add(name)

        if top:
            folder(top)
        for path, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            name = f"{prefix}{relative_path(path)}"
            folder(os.path.dirname(name))
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), file_mode, uid, uid, now
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ContainerPool:
    """Started, empty containers ready to take, per (engine, image, limits)."""

    _pools: dict[tuple, "ContainerPool"] = {}
    _lock = threading.Lock()

    def __init__(self, client, image: str, limits: Limits, size: int, make_workspace: bool = True) -> None:
        self.client, self.image, self.limits, self.size = client, image, limits, size
        self.make_workspace = make_workspace
        self._idle: list = []
        self._mutex = threading.Lock()
        self._filling: threading.Thread | None = None

    @classmethod
    def get(cls, client, image: str, limits: Limits, size: int, make_workspace: bool = True) -> "ContainerPool":
        key = (client.api.base_url, image, limits, make_workspace)
        with cls._lock:
            pool = cls._pools.get(key)
            if pool is None:
                pool = cls._pools[key] = ContainerPool(client, image, limits, size, make_workspace)
            if len(cls._pools) == 1:
                reap(client)
            pool.size = max(pool.size, size)
            return pool

    def start(self):
        """A new started container with an empty /workspace owned by the sandbox user (for pools that
        make one), its scratch folders and workspace sized tmpfs file systems."""
        import docker.errors
        from docker.types import DriverConfig, Mount, Ulimit

        limits = self.limits
        # Every place the sandbox user can write is a sized tmpfs: the scratch folders, and the
        # workspace as a tmpfs volume (a volume, unlike a tmpfs mount, takes archive uploads).
        scratch = f"size={limits.scratch_bytes}"
        mounts = []
        if self.make_workspace:
            uid = USER.split(":")[0]
            mounts.append(Mount(target=WORKDIR, source=None, type="volume", driver_config=DriverConfig(
                "local", options={"type": "tmpfs", "device": "tmpfs",
                                  "o": f"size={limits.workspace_bytes},uid={uid},gid={uid},mode=0700"})))
        try:
            container = self.client.containers.run(
                self.image, ["sleep", "infinity"], detach=True, network_mode="none",
                labels={LABEL: "1", f"{LABEL}.owner": OWNER},
                mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes, nano_cpus=1_000_000_000,
                pids_limit=limits.processes + 8, cap_drop=["ALL"], security_opt=["no-new-privileges"],
                tmpfs={"/tmp": scratch, "/var/tmp": scratch, "/run/lock": scratch}, shm_size=limits.scratch_bytes,
                mounts=mounts, init=True, auto_remove=False,
                ulimits=[Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
                         Ulimit(name="cpu", soft=limits.cpu_seconds, hard=limits.cpu_seconds),
                         Ulimit(name="nofile", soft=256, hard=256), Ulimit(name="core", soft=0, hard=0)])
        except docker.errors.ImageNotFound:
            raise SandboxUnavailable(f"the image {self.image} is not on the engine; build it with "
                                     f"`python -m budgetgym.envs.coding.image` (as root)") from None
        except docker.errors.APIError as err:
            raise SandboxUnavailable(f"could not start a container of {self.image}: {err}") from None
        return container

    def take(self, refill: bool = True):
        """An idle container (a new one when none is idle); ``refill=False`` leaves the refill to the
        caller, who starts it once the container is ready (the engine is not kept busy meanwhile)."""
        with self._mutex:
            container = self._idle.pop() if self._idle else None
        if container is None:
            container = self.start()
        if refill:
            self.refill()
        return container

    def refill(self) -> None:
        with self._mutex:
            if self._filling is not None and self._filling.is_alive():
                return
            self._filling = threading.Thread(target=self._fill, daemon=True)
            self._filling.start()

    def _fill(self) -> None:
        while True:
            with self._mutex:
                if len(self._idle) >= self.size:
                    return
            try:
                container = self.start()
            except Exception:
                return
            with self._mutex:
                self._idle.append(container)

    def wait_full(self, timeout: float = 60.0) -> None:
        """Block until the pool holds ``size`` idle containers (benchmarks and tests)."""
        self.refill()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._mutex:
                if len(self._idle) >= self.size:
                    return
            time.sleep(0.02)

    def drain(self) -> None:
        if self._filling is not None:
            self._filling.join(timeout=60)
        with self._mutex:
            idle, self._idle = self._idle, []
        for container in idle:
            _remove(container)

    @classmethod
    def drain_all(cls) -> None:
        with cls._lock:
            pools = list(cls._pools.values())
        for pool in pools:
            pool.drain()


atexit.register(ContainerPool.drain_all)


def reap(client) -> int:
    """Remove the containers that processes of this machine left behind when they died (killed
    before their teardown ran); returns how many."""
    host = socket.gethostname()
    removed = 0
    try:  # one listing call (no per-container inspection, which races with removals elsewhere)
        listed = client.api.containers(all=True, filters={"label": LABEL})
    except Exception:
        return 0
    for entry in listed:
        owner = (entry.get("Labels") or {}).get(f"{LABEL}.owner", "")
        name, _, pid = owner.rpartition(":")
        if name != host or not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its process still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            client.api.remove_container(entry["Id"], force=True, v=True)
            removed += 1
        except Exception:
            pass
    return removed


_clients: "weakref.WeakSet" = weakref.WeakSet()  # every client docker_client made in this process
_sandboxes: "weakref.WeakSet[DockerSandbox]" = weakref.WeakSet()


def _forget_in_child() -> None:
    """A forked child (a vector env's or an executor's worker) holds copies of this process's pools,
    sandboxes and client connections. Used there, they would take containers the parent still
    counts as idle (and remove them when done: the parent's next episode finds its container gone)
    and interleave requests on the parent's sockets. The child forgets them: its own pools, its own
    connections (closing a copied socket closes only the child's descriptor), and the sandboxes it
    inherited hold no container (their next load takes one of the child's) and never remove the
    parent's."""
    global OWNER
    OWNER = f"{socket.gethostname()}:{os.getpid()}"
    ContainerPool._pools = {}
    ContainerPool._lock = threading.Lock()
    for client in list(_clients):
        try:
            client.close()
        except Exception:
            pass
    for sandbox in list(_sandboxes):
        if sandbox._finalizer is not None:
            sandbox._finalizer.detach()
            sandbox._finalizer = None
        sandbox.container = None
        sandbox.pool = None


os.register_at_fork(after_in_child=_forget_in_child)


def _remove_soon(container) -> None:
    """Remove in a (non-daemon) thread: dropping a sandbox does not wait for the engine."""
    threading.Thread(target=_remove, args=(container,)).start()


def _remove(container) -> None:
    try:
        container.remove(force=True, v=True)  # v: the workspace volume goes with it
    except Exception:
        pass


class DockerSandbox(Sandbox):
    backend = "docker"

    def __init__(self, limits: Limits | None = None, image: str | None = None, pool_size: int = 2,
                 client=None, workdir: str = WORKDIR, user: str = USER) -> None:
        """``workdir``/``user``: where the repository is and who runs commands; the defaults make an
        empty ``/workspace`` for uid 1000. An image that brings its repository (SWE-bench's
        ``/testbed``) names its folder and usually runs as root; then no processes are ended between
        commands (ending root's would stop the container)."""
        super().__init__(limits)
        self.client = client or docker_client()
        self.image = image or IMAGE
        self.workdir = workdir
        self.user = user
        self.pool_size = pool_size
        self.pool: ContainerPool | None = ContainerPool.get(self.client, self.image, self.limits, pool_size,
                                                            make_workspace=workdir == WORKDIR)
        self.container = None
        self._finalizer: weakref.finalize | None = None
        self._grade_count = 0
        self._closed = False
        #: The last command's manifest (path -> sha1 of each workspace file), and the files last read
        #: back with theirs: :meth:`files` skips the read when they agree.
        self._manifest: dict[str, str] | None = None
        self._read: tuple[dict[str, str], dict[str, bytes]] | None = None
        _sandboxes.add(self)

    # ------------------------------------------------------------------ lifecycle

    def load(self, files: Mapping[str, str | bytes]) -> None:
        if self._closed:
            raise SandboxDied("the sandbox is closed")
        old, self.container = self.container, None
        self._adopt(self._pool().take(refill=False))
        try:
            if files:
                self.put_archive(self.workdir, _tar(files, uid=self._uid))
        finally:
            # the engine's slow work (removing the old container, starting a spare) after the reset
            if old is not None:
                threading.Thread(target=_remove, args=(old,), daemon=True).start()
            if self.pool is not None:
                self.pool.refill()

    def _adopt(self, container) -> None:
        """Hold ``container`` for this episode; it is removed at close, or at exit if close never comes."""
        if self._finalizer is not None:
            self._finalizer.detach()
        self.container = container
        self._manifest = self._read = None
        self._finalizer = weakref.finalize(self, _remove_soon, container)

    def alive(self) -> bool:
        if self._closed or self.container is None:
            return False
        try:
            self.container.reload()
        except Exception:
            return False
        return self.container.status == "running"

    def close(self, wait: bool = True) -> None:
        """Remove the container; ``wait=False`` removes it in a thread of its own (the process still
        waits for that thread at exit), for a container nothing will use again."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        if self.container is not None:
            (_remove if wait else _remove_soon)(self.container)
            self.container = None

    def revive(self) -> None:
        """Replace a dead container with a fresh one (the caller reloads the files)."""
        if self._closed:
            raise SandboxDied("the sandbox is closed")
        if self.container is not None:
            threading.Thread(target=_remove, args=(self.container,), daemon=True).start()
        self._adopt(self._pool().take())

    def sibling(self) -> "DockerSandbox":
        """A new sandbox like this one (engine, image, limits, folder, user), holding no container yet."""
        return DockerSandbox(limits=self.limits, image=self.image, pool_size=self.pool_size, client=self.client,
                             workdir=self.workdir, user=self.user)

    def _pool(self) -> ContainerPool:
        """This process's pool for the sandbox (after a fork, the child's own: see ``_forget_in_child``)."""
        if self.pool is None:
            self.pool = ContainerPool.get(self.client, self.image, self.limits, self.pool_size,
                                          make_workspace=self.workdir == WORKDIR)
        return self.pool

    # ------------------------------------------------------------------ engine calls

    def _engine(self, call, *args, **kwargs):
        import docker.errors
        import requests

        if self.container is None:
            raise SandboxDied("the sandbox has no container: call load() first")
        try:
            return call(*args, **kwargs)
        except docker.errors.NotFound:
            raise SandboxDied("the sandbox's container is gone") from None
        except (docker.errors.APIError, requests.exceptions.ConnectionError) as err:
            if isinstance(err, docker.errors.APIError) and "is not running" in str(err):
                raise SandboxDied("the sandbox's container stopped") from None
            if not isinstance(err, docker.errors.APIError):
                raise SandboxUnavailable(f"the Docker engine is gone ({err.__class__.__name__}); is dockerd running?") from None
            raise SandboxDied(f"the Docker engine refused: {err}") from None

    def put_archive(self, path: str, data: bytes) -> None:
        """Unpack a tar archive (bytes) at ``path`` in the container, as the engine does (as root)."""
        self._manifest = self._read = None
        self._engine(self.container.put_archive, path, data)

    @property
    def _uid(self) -> int:
        return int(self.user.split(":")[0]) if self.user.split(":")[0].isdigit() else 0

    def _exec(self, argv: list[str], *, user: str | None = None, workdir: str | None = None) -> tuple[int, bytes, bytes]:
        api = self.client.api
        user, workdir = user or self.user, workdir or self.workdir
        exec_id = self._engine(api.exec_create, self.container.id, argv, user=user, workdir=workdir,
                               environment=COMMAND_ENV)["Id"]
        out, err = self._engine(api.exec_start, exec_id, demux=True)
        code = self._engine(api.exec_inspect, exec_id)["ExitCode"]
        return code, out or b"", err or b""

    def _kill_user(self) -> None:
        if self._uid != 0:
            self._exec(["/bin/sh", "-c", "kill -9 -1 2>/dev/null; true"])

    # ------------------------------------------------------------------ commands

    def run(self, command: str, timeout: float | None = None) -> RunResult:
        return self._run(command, self.workdir, self.limits.wall(timeout))

    def _run(self, command: str, workdir: str, wall: float) -> RunResult:
        """One exec: the command under ``timeout -s KILL``; for a non-root user the same exec then
        ends every process of that user and writes the workspace's manifest (content hashes) and the
        command's exit status on its stderr, so that :meth:`files` reads the workspace back only when
        something changed, and no exec_inspect call is needed."""
        limits = self.limits
        api = self.client.api
        cleans = self._uid != 0
        if cleans:
            argv = ["/bin/sh", "-c", _RUN_AND_CLEAN, "sh", f"{wall:g}", command, str(limits.file_bytes + 1),
                    str(self._uid)]
        else:
            argv = ["timeout", "-s", "KILL", f"{wall:g}", "/bin/sh", "-c", command]
        exec_id = self._engine(api.exec_create, self.container.id, argv, user=self.user, workdir=workdir,
                               environment=COMMAND_ENV)["Id"]
        from docker.utils.socket import frames_iter

        started = time.monotonic()
        sock = self._engine(api.exec_start, exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        raw.settimeout(wall + 10)
        chunks, manifest, size, limited, ended = [], [], 0, False, False
        try:
            for stream, chunk in frames_iter(sock, tty=False):
                if cleans and stream == 2:
                    manifest.append(chunk)
                    continue
                chunks.append(chunk)
                size += len(chunk)
                if size > limits.output_kill_bytes:
                    limited = True
                    break
            ended = not limited
        except OSError:
            pass  # the socket timed out or closed: the checks below say what happened
        finally:
            try:
                sock.close()
                raw.close()
            except OSError:
                pass
        if not (cleans and ended):
            self._kill_user()  # the exec did not get to end the command's processes itself
        # The end mark carries the exit status; without it (no clean-up ran, or it failed) the engine says.
        parsed = _parse_manifest(b"".join(manifest)) if cleans and ended else None
        if parsed is not None:
            self._manifest, code = parsed
        else:
            self._manifest, code = None, self._exit_code(exec_id)
        output = b"".join(chunks)[: limits.output_kill_bytes].decode("utf-8", errors="replace")
        # `timeout -s KILL` exits 137 after killing; an out-of-memory kill does too, so the clock decides.
        timed_out = code == 137 and not limited and time.monotonic() - started >= wall * 0.95
        signal_reason = None
        if code is not None and code > 128 and not (timed_out or limited):
            signal_reason = SIGNAL_REASONS.get(code - 128)
        # A command that ended normally left a running container; any other end is checked.
        if (self._manifest is None or code is None or code > 128) and not self.alive():
            raise SandboxDied("the sandbox's container stopped during the command")
        return RunResult(None if (timed_out or limited) else code, output, timed_out, limited, signal_reason)

    def _exit_code(self, exec_id: str) -> int | None:
        """The exit status of an exec the engine reports ended (None if it still runs after a second)."""
        for _ in range(50):
            info = self._engine(self.client.api.exec_inspect, exec_id)
            if not info["Running"]:
                return info["ExitCode"]
            time.sleep(0.02)
        return None

    def run_isolated(self, files: Mapping[str, str | bytes], command: str, timeout: float | None = None) -> RunResult:
        """Grading: a fresh container of the same image and limits (none of the agent's processes,
        ``/tmp``, ``/var/tmp`` or user site), the files owned by root and read-only to the command's
        user at ``/grade``; the container is removed afterwards."""
        grader = self.sibling()
        try:
            grader.load({})
            grader.put_archive("/", _tar(files, uid=0, prefix="grade/", top="grade"))
            return grader._run(command, "/grade", self.limits.wall(timeout, grading=True))
        finally:
            # Never used again: the verdict need not wait for the engine to remove it (0.1-0.6 s loaded).
            grader.close(wait=False)

    def grading_identity(self) -> tuple:
        return (*super().grading_identity(), self.client.api.base_url, self.image, self.user)

    # ------------------------------------------------------------------ files

    def _resolve(self, path: str, mode: str) -> tuple[int, bytes, bytes]:
        rel = relative_path(path, self.workdir)
        return self._exec(["python3", "-I", "-c", _RESOLVE, self.workdir, rel, mode, str(self.limits.file_bytes)])

    def read_bytes(self, path: str) -> bytes:
        code, out, err = self._resolve(path, "read")
        if code == 0:
            return out
        reason = err.decode(errors="replace").strip()
        if reason == "missing":
            raise FileNotFoundError(f"{path}: no such file")
        if reason == "outside":
            raise SandboxPathError(f"{path!r} resolves outside the workspace {self.workdir}")
        if reason == "large":
            raise SandboxPathError(f"{path} is larger than {self.limits.file_bytes} bytes")
        raise SandboxPathError(f"{path} is not a file")

    def write_bytes(self, path: str, data: bytes) -> None:
        if len(data) > self.limits.file_bytes:
            raise SandboxPathError(f"the content is larger than {self.limits.file_bytes} bytes")
        code, out, err = self._resolve(path, "write")
        reason = err.decode(errors="replace").strip()
        if code != 0:
            if reason == "outside":
                raise SandboxPathError(f"{path!r} resolves outside the workspace {self.workdir}")
            if reason == "notdir":
                raise SandboxPathError(f"{path}: a part of the path is a file, not a folder")
            raise SandboxPathError(f"{path} is a folder")
        self.put_archive(self.workdir, _tar({out.decode(): data}, uid=self._uid))

    def files(self) -> dict[str, bytes]:
        """The workspace's files: read back as an archive, unless the last command's manifest shows
        exactly the files last read (nothing else writes between commands: the user's processes
        end with each one, and the sandbox's own writes forget what was read)."""
        if self._manifest is not None and self._read is not None and self._read[0] == self._manifest:
            return dict(self._read[1])
        found = self._read_files()
        self._read = (_manifest_of(found), found)
        return dict(found)

    def _read_files(self) -> dict[str, bytes]:
        stream, _ = self._engine(self.container.get_archive, self.workdir)
        buffer = io.BytesIO(b"".join(stream))
        found: dict[str, bytes] = {}
        with tarfile.open(fileobj=buffer) as archive:
            for member in archive.getmembers():
                if member.isfile() and member.size <= self.limits.file_bytes:
                    name = member.name.split("/", 1)[1] if "/" in member.name else None
                    if name:
                        found[name] = archive.extractfile(member).read()
        return dict(sorted(found.items()))
