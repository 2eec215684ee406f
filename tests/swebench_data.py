"""A SWE-bench format instance for the tests, and its image, built here: Coding-v0's intervals task
(a shipped library with a bug) committed at /testbed in the coding image, its hidden test as the
instance's test patch, its fix as the gold patch. SWEBench-v0 ships no instances; the tests and the
contract suite run it on this one (``registered.make_or_skip`` points the env at it)."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

from budgetgym.core import load_tasks
from budgetgym.envs.coding.env import task_files

TASK_ID = "coding-intervals-000"
TRAIN_TASK_ID = "coding-intervals-004"
HIDDEN = "tests/test_hidden.py"


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(f"testbed/{path}")
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _diff(before: dict[str, bytes], after: dict[str, bytes], folder: Path) -> str:
    """A git patch from ``before`` to ``after``, made by git itself."""
    repo = folder / "diff"
    for files in (before, after):
        for path in set(before) | set(after):
            target = repo / path
            if path in files:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(files[path])
            elif target.exists():
                target.unlink()
        if files is before:
            subprocess.run(["git", "init", "-q", str(repo)], check=True)
            subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
            subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
                           check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    return subprocess.run(["git", "-C", str(repo), "diff", "--cached", "--binary", "HEAD"], check=True,
                          capture_output=True, text=True).stdout


def write_swebench_instances(folder: Path, train: bool = False) -> Path:
    """Build the instance's image (once: it is named by its content) and write the instance file
    into ``folder``; returns its path. Needs the Docker engine and the coding image. ``train``: a
    second instance on the train split (``TRAIN_TASK_ID``, a fix of two added lines), for what needs
    both splits."""
    chosen = [(TASK_ID, "budgetgym__intervals-1", "test")] + ([(TRAIN_TASK_ID, "budgetgym__intervals-2", "train")]
                                                              if train else [])
    path = folder / ("instances-both-splits.jsonl" if train else "instances.jsonl")
    path.write_text("".join(json.dumps(_instance(folder, *spec)) + "\n" for spec in chosen))
    return path


def _instance(folder: Path, task_id: str, instance_id: str, split: str) -> dict:
    from budgetgym.envs.coding.image import IMAGE as BASE
    from budgetgym.envs.coding.image import image_exists
    from budgetgym.envs.coding.sandbox.docker_backend import docker_client

    task = load_tasks("coding").get(task_id)
    initial, original = task_files(task.data)
    # the image is named by its content, so a changed task never meets a stale image
    digest = hashlib.sha256(json.dumps({p: d.decode() for p, d in sorted(initial.items())}).encode()).hexdigest()[:12]
    image = f"budgetgym/swebench-test-{task['library']}:{digest}"
    client = docker_client()
    container = client.containers.run(BASE, ["sleep", "infinity"], detach=True, network_mode="none")
    try:
        container.put_archive("/", _tar(initial))
        done = container.exec_run(["/bin/sh", "-c", "cd /testbed && git init -q && git add -A && git -c user.name=t "
                                   "-c user.email=t@t commit -qm base && git rev-parse HEAD"])
        if done.exit_code != 0:
            raise RuntimeError(f"could not commit the test repository: {done.output!r}")
        base_commit = done.output.decode().strip().splitlines()[-1]
        if not image_exists(client, image):
            container.commit(repository=image.split(":")[0], tag=image.split(":")[1])
        else:
            base_commit = client.containers.run(image, ["git", "-C", "/testbed", "rev-parse", "HEAD"], remove=True,
                                                network_mode="none").decode().strip()
    finally:
        container.remove(force=True)
    test_file = task["fail_to_pass"][0].split("::")[0]
    hidden = {**initial, HIDDEN: original[test_file]}
    test_patch = _diff(initial, hidden, folder / f"{instance_id}-t")
    gold = _diff(initial, original, folder / f"{instance_id}-g")
    names = [node.split("::")[1] for node in task["fail_to_pass"] if node.startswith(test_file)]
    eval_script = "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /testbed", f"git checkout {base_commit} -- tests",
        "git apply -v - <<'EOF_114329324912'", test_patch.rstrip("\n"), "EOF_114329324912",
        ": '>>>>> Start Test Output'", "python -m pytest -rA -p no:cacheprovider tests", ": '>>>>> End Test Output'",
        f"git checkout {base_commit} -- tests",
    ]) + "\n"
    instance = {
        "instance_id": instance_id, "split": split, "repo": f"budgetgym/{task['library']}", "version": "0.1",
        "base_commit": base_commit, "problem_statement": task.instruction, "image": image,
        "patch": gold, "test_patch": test_patch, "eval_script": eval_script, "log_parser": "parse_log_pytest",
        "eval_type": "pass_and_fail",
        "FAIL_TO_PASS": json.dumps([f"{HIDDEN}::{name}" for name in names]),
        "PASS_TO_PASS": json.dumps(task["pass_to_pass"]),
    }
    return instance
