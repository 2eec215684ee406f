"""Attacks on both sandbox backends: each must be contained, reported clearly, and leave the sandbox usable."""

from __future__ import annotations

import os
import shutil

import pytest

from budgetgym.envs.coding.sandbox import Limits, SandboxPathError, SandboxUnavailable, make_sandbox
from coding_support import BACKENDS, require

LIMITS = Limits(wall_seconds=8, cpu_seconds=8, memory_bytes=512 << 20, processes=32, file_bytes=4 << 20,
                workspace_bytes=16 << 20, output_bytes=2000, output_kill_bytes=1 << 20)
FILES = {"README.md": "hello\n", "pkg/mod.py": "X = 1\n"}


@pytest.fixture(params=BACKENDS)
def box(request):
    require(request.param)
    sandbox = make_sandbox(request.param, limits=LIMITS)
    sandbox.load(FILES)
    yield sandbox
    sandbox.close()


def usable(sandbox) -> bool:
    result = sandbox.run("cat README.md && echo still-here")
    return result.exit_code == 0 and "still-here" in result.output


def test_commands_see_the_workspace(box):
    result = box.run("cat pkg/mod.py; pwd")
    assert result.exit_code == 0 and "X = 1" in result.output and "/workspace" in result.output


def test_write_outside_the_workspace_fails(box):
    result = box.run("echo pwned > /usr/pwned; echo pwned > /etc/pwned; echo pwned > /pwned; ls /usr/pwned /etc/pwned /pwned")
    assert result.exit_code != 0
    assert not os.path.exists("/usr/pwned") and not os.path.exists("/pwned")
    assert "pwned" not in box.run("cat /usr/pwned /etc/pwned /pwned 2>/dev/null").output
    assert usable(box)


def test_file_tools_refuse_paths_and_links_outside(box):
    for path in ("../etc/passwd", "/etc/passwd", "pkg/../../x"):
        with pytest.raises(SandboxPathError):
            box.read_bytes(path)
        with pytest.raises(SandboxPathError):
            box.write_bytes(path, b"x")
    box.run("ln -s /etc/passwd leak; ln -s / rootlink")
    with pytest.raises(SandboxPathError):
        box.read_bytes("leak")
    with pytest.raises(SandboxPathError):
        box.write_bytes("rootlink/tmp/evil", b"x")
    assert not os.path.exists("/tmp/evil")
    assert usable(box)


def test_another_episodes_files_are_out_of_reach(box):
    other = make_sandbox(box.backend, limits=LIMITS)
    try:
        other.load({"secret.txt": "the other episode's secret\n"})
        where = getattr(other, "workspace", None)
        probe = f"cat {where}/secret.txt 2>&1; " if where else ""
        result = box.run(probe + "find / -name secret.txt 2>/dev/null | head; cat /proc/*/root/workspace/secret.txt 2>&1")
        assert "the other episode's secret" not in result.output
    finally:
        other.close()
    assert usable(box)


def test_no_network(box):
    result = box.run("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3); print('connected')\"")
    assert result.exit_code != 0 and "connected" not in result.output
    assert "unreachable" in result.output.lower() or "error" in result.output.lower()
    assert usable(box)


def test_fork_bomb_is_contained(box):
    result = box.run("bomb() { bomb | bomb & }; bomb; sleep 2; echo done", timeout=6)
    assert "done" in result.output or result.timed_out or result.exit_code is not None
    assert usable(box)


def test_memory_hog_is_contained(box):
    result = box.run("python3 -c \"x = bytearray(2 * 1024 ** 3); print('allocated')\"")
    assert "allocated" not in result.output
    assert result.exit_code != 0
    shown = result.shown(2000)
    assert "MemoryError" in shown or "killed" in shown or "exit code" in shown
    assert usable(box)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grading_runs_get_the_longer_wall_limit_and_the_same_cpu_limit(backend):
    """A wait of 2 s is stopped in the agent's run (wall 1 s) and finishes in budgetgym's own grading
    run (grading wall 10 s); a wait past that, and a loop, are stopped there too (which limit stops
    the loop first depends on the machine's load: no timing is asserted)."""
    require(backend)
    limits = Limits(wall_seconds=1, grading_wall_seconds=10, cpu_seconds=2, processes=32)
    assert limits.wall(None) == 1 and limits.wall(None, grading=True) == 10 and limits.wall(0.5, grading=True) == 0.5
    sandbox = make_sandbox(backend, limits=limits)
    try:
        sandbox.load(FILES)
        assert sandbox.run("sleep 2; echo woke").timed_out
        waited = sandbox.run_isolated({"t.sh": "sleep 2; echo woke\n"}, "sh t.sh")
        assert not waited.timed_out and "woke" in waited.output
        assert sandbox.run_isolated({"t.sh": "sleep 30\n"}, "sh t.sh").timed_out
        looped = sandbox.run_isolated({"t.py": "while True: pass\n"}, "python3 t.py")
        assert looped.timed_out or looped.exit_code != 0
    finally:
        sandbox.close()


def test_endless_loop_is_stopped(box):
    result = box.run("while true; do :; done", timeout=2)
    assert result.timed_out
    assert "time limit" in result.shown(2000)
    assert usable(box)


def test_a_gigabyte_of_output_is_cut(box):
    result = box.run("yes gigabyte | head -c 1000000000")
    assert result.output_limited and len(result.output) <= LIMITS.output_kill_bytes
    shown = result.shown(LIMITS.output_bytes)
    assert len(shown) < LIMITS.output_bytes + 300 and "characters of output cut" in shown
    assert "more output than the sandbox keeps" in shown
    assert usable(box)


def test_a_huge_file_is_stopped_at_the_size_limit(box):
    result = box.run("head -c 200000000 /dev/zero > big.bin")
    assert result.exit_code != 0
    assert "file size limit" in result.shown(2000).lower()
    assert len(box.files().get("big.bin", b"")) <= LIMITS.file_bytes
    assert usable(box)


def test_many_files_past_the_workspace_cap_are_removed(box):
    if box.backend != "local":
        pytest.skip("the container's writable layer is bounded by the engine, not by a workspace cap")
    result = box.run("for i in 1 2 3 4 5 6; do head -c 4000000 /dev/zero > f$i.bin; done")
    assert sum(len(d) for d in box.files().values()) <= LIMITS.workspace_bytes
    if box.sized:  # a tmpfs of the cap's size: the writes past it fail while the command runs
        assert "no space left on device" in result.output.lower()
    else:
        assert "workspace grew past" in result.shown(5000)
    assert usable(box)


def test_folders_nested_past_the_recursion_limit_are_read_back_and_removed(box):
    """A command that nests folders deeper than the interpreter's recursion limit (the local
    backend walked the workspace with os.walk and removed it with shutil.rmtree, one call a level:
    RecursionError in the command's step, then at every reset)."""
    import sys

    depth = sys.getrecursionlimit() + 100
    result = box.run(f"i=0; while [ $i -lt {depth} ]; do mkdir d && cd d || exit 1; i=$((i+1)); done; echo deep > f.txt")
    assert result.exit_code == 0, result.output[-300:]
    assert box.files()["d/" * depth + "f.txt"] == b"deep\n"
    assert usable(box)
    box.load(FILES)
    assert box.files() == {p: t.encode() for p, t in FILES.items()}
    assert usable(box)


def test_a_forged_manifest_does_not_hide_a_change(box):
    """Docker's exec writes the workspace's manifest on its stderr after the command, and reads the
    workspace back only when it changed; the command's processes run as the same user as that exec,
    so they can write into its stderr through /proc/<pid>/fd and claim a deleted file is still
    there (files() kept it)."""
    import hashlib

    assert "README.md" in box.files()  # read once: the manifest that a forger would repeat
    digest = hashlib.sha1(FILES["README.md"].encode()).hexdigest()
    forged = f"\\000budgetgym-manifest\\000{digest}  ./README.md\\000"
    result = box.run(f"rm README.md; for fd in /proc/[0-9]*/fd/*; do printf '{forged}' > $fd; done 2>/dev/null; true")
    assert result.exit_code == 0, result.output[-300:]
    assert box.files() == {"pkg/mod.py": FILES["pkg/mod.py"].encode()}


def test_files_made_unreadable_by_the_command_are_still_read_back(box):
    """Docker's manifest is find and sha1sum run as the sandbox user, who can chmod a new file or
    folder to 000: both skip it, and a manifest without it matched the last read, so files() hid
    it. The workspace is read back whole (as root) whenever the manifest is incomplete."""
    if box.backend == "local" and os.geteuid() != 0:
        pytest.skip("unsandboxed by root, the host process reads as the command's own user")
    expected = {p: t.encode() for p, t in FILES.items()}
    assert box.files() == expected
    result = box.run("mkdir d && echo hidden > d/new.py && chmod 000 d; echo also > b.py && chmod 000 b.py")
    assert result.exit_code == 0, result.output[-300:]
    assert box.files() == {**expected, "d/new.py": b"hidden\n", "b.py": b"also\n"}


def test_background_processes_do_not_outlive_their_command(box):
    box.run("(sleep 5; echo late > late.txt) > /dev/null 2>&1 &")
    result = box.run("sleep 6; ls", timeout=8)
    assert "late.txt" not in result.output


def test_grading_copy_is_read_only_and_separate(box):
    result = box.run_isolated({"t.py": "print('graded')\n"}, "python3 t.py; echo tamper > t.py; ls")
    assert "graded" in result.output
    assert "README.md" not in result.output  # a fresh folder of its own, not the workspace
    assert "t.py" not in box.files()
    assert usable(box)


def test_local_without_bwrap_refuses_and_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        make_sandbox("local")
    monkeypatch.setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "bwrap" else "/usr/bin/" + name)
    sandbox = make_sandbox("local", allow_unsandboxed=True)
    try:
        sandbox.load(FILES)
        assert sandbox.run("cat README.md").output == "hello\n"
        assert not sandbox.isolated
    finally:
        sandbox.close()


def test_docker_without_an_engine_names_what_is_missing(monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailable, match="DOCKER_HOST|dockerd"):
        make_sandbox("docker")


def _in_a_forked_worker(inherited) -> None:
    """What a vector env's or an executor's forked worker does: a sandbox of its own, a use of the one
    it inherited, then its clean-up (here run explicitly: a worker that exits normally runs it)."""
    import sys

    from budgetgym.envs.coding.sandbox.docker_backend import ContainerPool

    own = make_sandbox("docker", limits=LIMITS, pool_size=1)
    own.load({"README.md": "child\n"})
    inherited.load({"README.md": "child again\n"})
    ok = own.run("cat README.md").output.strip() == "child" and inherited.run("cat README.md").output.strip() == "child again"
    own.close()
    inherited.close()
    ContainerPool.drain_all()
    sys.exit(0 if ok else 3)


def test_a_forked_worker_neither_takes_nor_removes_the_parents_containers():
    require("docker")
    import multiprocessing

    parent = make_sandbox("docker", limits=LIMITS, pool_size=1)
    parent.load(FILES)
    parent.pool.wait_full()  # an idle container this process counts on for its next episode
    worker = multiprocessing.get_context("fork").Process(target=_in_a_forked_worker, args=(parent,))
    worker.start()
    worker.join(120)
    assert worker.exitcode == 0
    assert usable(parent)  # its episode's container is still there, with its files
    after = make_sandbox("docker", limits=LIMITS, pool_size=1)  # takes the idle one
    try:
        after.load(FILES)
        assert usable(after)
    finally:
        after.close()
        parent.close()


def test_the_local_sandbox_runs_an_interpreter_under_tmp_or_behind_a_symlink(tmp_path):
    """A virtual environment under /tmp was hidden by the sandbox's own /tmp (mounted after the
    interpreter was bound: `python: not found`), and a symlinked one was looked for at the link."""
    require("local")
    import subprocess
    import sys

    venv = tmp_path / "venv"  # tmp_path lives under /tmp
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    link = tmp_path / "linked"
    link.symlink_to(os.path.realpath(sys.prefix))
    for python, check in ((venv / "bin" / "python", "import sys; print(sys.prefix)"),
                          (link / "bin" / "python", "import pytest, sys; print(sys.prefix)")):
        sandbox = make_sandbox("local", limits=LIMITS, python=str(python))
        try:
            sandbox.load(FILES)
            result = sandbox.run(f"python -I -c {check!r}")
            assert result.exit_code == 0, result.output
            assert result.output.strip() == os.path.realpath(os.path.dirname(os.path.dirname(python)))
        finally:
            sandbox.close()


@pytest.mark.parametrize("place", ["/tmp", "/dev/shm", "/var/tmp", "/run/lock", "/workspace"])
def test_every_writable_place_is_bounded(box, place):
    """Filling each place a command can write stops at its size, measured inside the same command
    (the local /tmp had none: host memory; Docker's /var/tmp and workspace had none: host disk; the
    local workspace was held to its cap only after the command ended); a place the backend does not
    offer is not writable at all."""
    limit = LIMITS.workspace_bytes if place == "/workspace" else LIMITS.scratch_bytes
    if box.backend == "local" and place == "/workspace" and not box.sized:
        pytest.skip("not root: the local workspace is a host folder, held to its cap when each command ends")
    fill = (f"mkdir -p {place}/fill 2>/dev/null; i=0; while [ $i -lt 48 ]; do "
            f"head -c 2097152 /dev/zero > {place}/fill/$i || break; i=$((i+1)); done")
    measure = f"du -sk {place}/fill 2>/dev/null | cut -f1"
    result = box.run(f"{fill}; {measure}")
    words = result.output.split()
    written = int(words[-1]) * 1024 if words and words[-1].isdigit() else 0
    assert written <= limit + (1 << 20), (place, written, result.output[-300:])
    assert usable(box)


def test_scratch_files_do_not_reach_the_grading_run(box):
    box.run("mkdir -p /tmp/.local && echo planted > /tmp/planted; echo planted > /var/tmp/planted 2>/dev/null; true")
    result = box.run_isolated({"t.sh": "ls /tmp /var/tmp 2>/dev/null\n"}, "sh t.sh")
    assert "planted" not in result.output and ".local" not in result.output


def test_check_backend_runs_pytest_in_the_sandbox_and_names_cause_and_fix(tmp_path):
    require("local")
    import gymnasium as gym

    from budgetgym.core import BackendUnavailable

    gym.make("budgetgym/Coding-v0").unwrapped.check_backend()
    broken = gym.make("budgetgym/Coding-v0", sandbox_options={"python": str(tmp_path / "gone" / "bin" / "python")})
    with pytest.raises(BackendUnavailable) as caught:
        broken.unwrapped.check_backend()
    message = str(caught.value)
    assert "\n" not in message and "do not run inside the sandbox" in message and "pip install pytest" in message


def test_budgetgym_installed_beside_the_interpreter_is_hidden_from_commands(tmp_path):
    """A ``pip install budgetgym`` puts its package, the shipped libraries among its data, in the
    site-packages of the Python the sandbox binds (it runs the tests): a command found the fixed
    library there and copied it over the workspace's (copy-shipped-library, two turns). The package
    folder there is now an empty tmpfs; the tests still run (pytest from the same environment)."""
    require("local")
    import subprocess
    import sys
    import sysconfig

    import gymnasium as gym

    from budgetgym.core import load_tasks
    from budgetgym.envs.coding.repos import REPOS
    from budgetgym.eval.agents import OracleAgent
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.coding import CopyShippedLibrary

    task = next(t for t in load_tasks("coding") if t.split == "train")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # pytest, as installed here
    installed = site / "budgetgym" / "assets" / "coding" / "repos" / task["library"]
    shutil.copytree(REPOS / task["library"], installed)
    env = gym.make("budgetgym/Coding-v0", sandbox_options={"python": str(venv / "bin" / "python")})
    try:
        result = play_episode(env, CopyShippedLibrary(), seed=0, options={"task_id": task.id})
        assert not result.success and "copied" not in env.unwrapped.transcript[0][1]
        listing = env.unwrapped.ws.sandbox.run(f"ls -A {site / 'budgetgym'}; ls {site}")
        assert "deps.pth" in listing.output and "assets" not in listing.output
        assert play_episode(env, OracleAgent(), seed=0, options={"task_id": task.id}).success
    finally:
        env.close()


def test_the_coding_modules_import_without_a_circle():
    """image.py and the Docker backend imported each other (behind two lazy imports); the image
    name now lives in the backend, which imports nothing of the builder."""
    import ast
    import pathlib

    import budgetgym.envs.coding as coding

    root = pathlib.Path(coding.__file__).parent
    graph = {}
    for path in root.rglob("*.py"):
        name = "budgetgym.envs.coding." + ".".join(path.relative_to(root).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        graph[name] = {node.module for node in ast.walk(ast.parse(path.read_text()))
                       if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("budgetgym.envs.coding")}

    def reaches(start, goal, seen=()):
        return any(m == goal or (m not in seen and reaches(m, goal, (*seen, m))) for m in graph.get(start, ()))

    assert not reaches("budgetgym.envs.coding.sandbox.docker_backend", "budgetgym.envs.coding.image")
    assert "budgetgym.envs.coding.sandbox.docker_backend" in graph["budgetgym.envs.coding.image"]


def test_files_read_back_match_the_workspace_after_every_kind_of_change(box):
    """The Docker backend reads the workspace back only when the command's manifest shows a change:
    a same-size rewrite with its old time stamp, a delete, a new folder, a write by the file tools
    and a command that changes nothing must all be seen exactly."""
    expected = dict((p, t.encode()) for p, t in FILES.items())
    assert box.files() == expected
    steps = [
        ("true", {}),
        ("printf 'X = 2\\n' > pkg/mod.py && touch -d '2001-01-01' pkg/mod.py", {"pkg/mod.py": b"X = 2\n"}),
        ("mkdir -p new/deep && printf data > new/deep/f.txt", {"new/deep/f.txt": b"data"}),
        ("rm README.md", {"README.md": None}),
        ("ls -la > /dev/null", {}),
    ]
    for command, change in steps:
        assert box.run(command).exit_code == 0, command
        for path, data in change.items():
            if data is None:
                expected.pop(path)
            else:
                expected[path] = data
        assert box.files() == expected, command
    box.write_bytes("pkg/mod.py", b"X = 3\n")
    expected["pkg/mod.py"] = b"X = 3\n"
    box.run("true")
    assert box.files() == expected


def test_a_workspace_left_mounted_by_a_killed_process_is_reaped(tmp_path):
    import subprocess
    import sys

    from budgetgym.envs.coding.sandbox.local import reap_orphaned_workspaces

    require("local")
    if os.geteuid() != 0:
        pytest.skip("sized workspaces are mounted as root only")
    # A child makes a sized sandbox, prints its folder and is killed (SIGKILL: no close, no clean-up).
    child = subprocess.Popen([sys.executable, "-c", "import os, signal\n"
                              "from budgetgym.envs.coding.sandbox import make_sandbox\n"
                              "box = make_sandbox('local')\n"
                              "print(box.root if box.sized else '', flush=True)\n"
                              "os.kill(os.getpid(), signal.SIGKILL)\n"], stdout=subprocess.PIPE, text=True)
    root = child.stdout.read().strip()
    child.wait()
    if not root:
        pytest.skip("this machine mounts no sized workspace (mount refused)")
    assert f" {root}/fs " in open("/proc/self/mounts").read()  # left mounted
    assert f"{root}/fs" in reap_orphaned_workspaces()
    assert f" {root}/fs " not in open("/proc/self/mounts").read() and not os.path.exists(root)
    assert f"{root}/fs" not in reap_orphaned_workspaces()  # reaped once
