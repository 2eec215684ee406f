"""Speed of budgetgym/Coding-v0 on both sandbox backends.

Prints one JSON object; every figure comes from one run in one process, rounds interleaved:

* reset: a fresh episode (the task's repository copied into the sandbox); for Docker, from the
  warm pool (the pool is refilled between rounds, as it is between episodes);
* test_run: the task's test suite through the sandbox (``run_tests``'s command) beside bare
  ``python -m pytest`` with the same flags on the same files, on the host, no sandbox;
* snapshot and restore (the fast path: the files themselves) after an edit;
* for Docker, the engine's floor in the same run (one ``exec`` of ``true``): a reset is one archive
  upload into a warm container, so on a loaded engine it cannot beat that floor;
* steps: a ``run_command`` step (``ls -la``) and a ``run_tests`` step through the env beside the
  same command bare in the same sandbox (Docker: one ``docker exec`` in the episode's container,
  with the environment every sandboxed command gets, ``COMMAND_ENV``: no bytecode written;
  local: the sandbox's own bubblewrap command line), rounds interleaved, as wall-clock ratios of
  medians and of means (the work is in other processes), with the load beside them. ``run_tests``
  also measures progress on the grading tree (a second run, in a fresh container on Docker), once
  per tree: these rounds repeat it on an unchanged tree, so they time the remembered grading run,
  not a new one. The bare side is a floor, not what a sandbox may do: the Docker exec has no time
  limit, leaves the user's processes running and says nothing of what changed (a step's exec runs
  the command under ``timeout``, then kills them and writes the workspace's manifest: ``timeout``,
  a second shell, ``find`` and ``sha1sum`` more in the container); the local line is spawned with
  ``subprocess.run``, the parent's stdin and its output read whole, where a step gives it
  ``/dev/null``, reads under a deadline and an output cap, and walks the workspace twice after (the
  size cap, the read back);
* targets beside the measured values.

    python benchmarks/bench_coding.py [--rounds 10] [--backends local docker]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import gymnasium as gym
from timing import target

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_tasks
from budgetgym.envs.coding.testlog import PYTEST_ENV
from budgetgym.envs.coding.workspace import TEST_COMMAND

TARGETS = {"local_reset_ms": 30, "sandboxed_test_run_ratio_to_bare": 1.2, "docker_reset_from_pool_ms": 100,
           "docker_run_command_ratio_to_exec": 1.3, "docker_run_tests_ratio_to_exec": 1.15,
           "local_run_command_ratio_to_bwrap": 1.1}
COMMAND = "ls -la"


def bench_steps(backend: str, rounds: int) -> dict:
    """A run_command and a run_tests step beside the same command run bare in the same sandbox."""
    env = gym.make("budgetgym/Coding-v0", backend=backend)
    base = env.unwrapped
    env.reset(options={"task_id": list(load_tasks("coding"))[0].id})
    sandbox = base.sandbox

    def bare(command: str):
        if backend == "docker":
            from budgetgym.envs.coding.sandbox.docker_backend import COMMAND_ENV

            return lambda: sandbox.container.exec_run(["/bin/sh", "-c", command], user=sandbox.user,
                                                      workdir=sandbox.workdir, environment=COMMAND_ENV)
        argv = sandbox.command_line(["--bind", str(sandbox.workspace), sandbox.workdir], command)
        return lambda: subprocess.run(argv, cwd=str(sandbox.workspace), capture_output=True)

    def timed(fn) -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    def step(tool: str, **arguments):
        action = json.dumps({"name": tool, "arguments": arguments})
        return lambda: env.step(action)

    measures = {"run_command_step": step("run_command", command=COMMAND), "run_command_bare": bare(COMMAND),
                "run_tests_step": step("run_tests"), "run_tests_bare": bare(TEST_COMMAND)}
    values = {name: [] for name in measures}
    try:
        for number in range(rounds):
            if base.turn >= base.task.max_turns - 2:
                env.reset(options={"task_id": base.task.id})
            names = list(measures) if number % 2 else list(measures)[::-1]
            for name in names:
                values[name].append(timed(measures[name]))
    finally:
        env.close()
    median = {name: statistics.median(series) for name, series in values.items()}
    return {**{name: _ms(series) for name, series in values.items()},
            "run_command_ratio_to_bare": round(median["run_command_step"] / median["run_command_bare"], 3),
            "run_tests_ratio_to_bare": round(median["run_tests_step"] / median["run_tests_bare"], 3),
            "run_command_ratio_to_bare_of_means": round(statistics.fmean(values["run_command_step"])
                                                        / statistics.fmean(values["run_command_bare"]), 3),
            "run_tests_ratio_to_bare_of_means": round(statistics.fmean(values["run_tests_step"])
                                                      / statistics.fmean(values["run_tests_bare"]), 3),
            "load_average_1min": round(os.getloadavg()[0], 2), "rounds": rounds}


def _ms(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(samples) * 1000, 2), "mean_ms": round(statistics.fmean(samples) * 1000, 2)}


def bench_backend(backend: str, rounds: int) -> dict:
    env = gym.make("budgetgym/Coding-v0", backend=backend)
    base = env.unwrapped
    tasks = list(load_tasks("coding"))[:rounds]
    resets, sandboxed, bare, snapshots, restores = [], [], [], [], []
    try:
        for task in tasks:
            pool = getattr(base.sandbox, "pool", None)
            if pool is not None:
                pool.wait_full()
            started = time.perf_counter()
            env.reset(options={"task_id": task.id})
            resets.append(time.perf_counter() - started)
            # the same files, once through the sandbox and once bare, alternating which goes first
            files = base.ws.files
            scratch = _write(files)
            runs = [lambda: base.sandbox.run(TEST_COMMAND), lambda: _bare(scratch)]
            order = runs if len(resets) % 2 else runs[::-1]
            timings = []
            for run in order:
                started = time.perf_counter()
                run()
                timings.append(time.perf_counter() - started)
            if len(resets) % 2:
                sandboxed.append(timings[0])
                bare.append(timings[1])
            else:
                bare.append(timings[0])
                sandboxed.append(timings[1])
            shutil.rmtree(scratch)
            bug = task["bug"]
            env.step(json.dumps({"name": "replace_in_file", "arguments": {"path": bug["path"], "old": bug["buggy"],
                                                                          "new": bug["fixed"]}}))
            started = time.perf_counter()
            snap = base.snapshot()
            snapshots.append(time.perf_counter() - started)
            if pool is not None:
                pool.wait_full()
            started = time.perf_counter()
            env.reset(options={"snapshot": snap})
            restores.append(time.perf_counter() - started)
    finally:
        env.close()
    ratio = statistics.median(sandboxed) / statistics.median(bare)
    extra = {}
    if backend == "docker":
        # The engine's own floor in the same run: one `exec` of `true` in a running container.
        sandbox = gym.make("budgetgym/Coding-v0", backend="docker").unwrapped.sandbox
        sandbox.load({})
        floor = []
        for _ in range(len(tasks)):
            started = time.perf_counter()
            sandbox.container.exec_run(["true"])
            floor.append(time.perf_counter() - started)
        sandbox.close()
        extra = {"engine_floor_exec_true": _ms(floor),
                 "reset_ratio_to_engine_floor": round(statistics.median(resets) / statistics.median(floor), 2)}
    return {**extra, "reset": _ms(resets), "test_run_sandboxed": _ms(sandboxed), "test_run_bare": _ms(bare),
            "test_run_ratio_to_bare": round(ratio, 3), "snapshot": _ms(snapshots), "restore_fast": _ms(restores),
            "rounds": len(tasks)}


def _write(files) -> str:
    import tempfile

    root = tempfile.mkdtemp(prefix="budgetgym-bare-")
    for path, data in files.items():
        target = os.path.join(root, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
    return root


def _bare(folder: str) -> None:
    subprocess.run(["sh", "-c", TEST_COMMAND], cwd=folder, env={**os.environ, **PYTEST_ENV}, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    args = parser.parse_args()
    result = {"python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(), "backends": {}}
    for backend in args.backends:
        try:
            result["backends"][backend] = {**bench_backend(backend, args.rounds),
                                           "steps": bench_steps(backend, args.rounds)}
        except Exception as err:  # a backend that cannot run here is reported, not fatal
            result["backends"][backend] = {"unavailable": f"{type(err).__name__}: {err}"}
    local = result["backends"].get("local", {})
    docker = result["backends"].get("docker", {})
    # Each target beside its measured value (None, and met None, where the backend could not run).
    result["targets"] = {
        "local_reset_ms_under": target(TARGETS["local_reset_ms"], local.get("reset", {}).get("median_ms")),
        "sandboxed_test_run_ratio_to_bare_at_most": target(TARGETS["sandboxed_test_run_ratio_to_bare"],
                                                           local.get("test_run_ratio_to_bare")),
        "docker_reset_from_pool_ms_under": target(TARGETS["docker_reset_from_pool_ms"], docker.get("reset", {}).get("median_ms"),
                                                  engine_floor_exec_ms=docker.get("engine_floor_exec_true", {}).get("median_ms")),
    }
    steps = {name: result["backends"].get(name, {}).get("steps", {}) for name in ("local", "docker")}
    result["targets"].update({
        "docker_run_command_ratio_to_exec_at_most": target(TARGETS["docker_run_command_ratio_to_exec"],
                                                           steps["docker"].get("run_command_ratio_to_bare")),
        "docker_run_tests_ratio_to_exec_at_most": target(TARGETS["docker_run_tests_ratio_to_exec"],
                                                         steps["docker"].get("run_tests_ratio_to_bare")),
        "local_run_command_ratio_to_bwrap_at_most": target(TARGETS["local_run_command_ratio_to_bwrap"],
                                                           steps["local"].get("run_command_ratio_to_bare")),
    })
    result["docker_test_run_ratio_to_bare"] = docker.get("test_run_ratio_to_bare")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
