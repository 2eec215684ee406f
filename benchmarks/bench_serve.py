"""Envs as a service: what a remote step costs, what a server sustains, what the Ray pool adds.

Prints JSON. The server is a ``budgetgym serve`` child process on loopback (as it would run beside
a trainer), so client and server each have their own interpreter.

* ``remote_step``: a FunctionCalling-v0 step through ``budgetgym/Remote-v0`` against the same
  step in process (the oracle's recorded actions of the same tasks, rounds interleaved, each step
  timed on its own; median and mean). Target: at most 1 ms added.
* ``aggregate``: 16 sessions at once (one client thread each, this process) stepping for
  ``--seconds``; steps per second summed over the sessions. Target: at least 1,000 on 2 cores.
* ``pool``: the same recorded episodes on ``--workers`` envs through the Ray ``EnvPool`` (batched
  steps) and through the ``ProcessExecutor`` (episodes in worker processes), and serially in
  process, in one run: wall time per env step of each, and the pool's overhead per step over the
  process executor's. ``--no-ray`` leaves it out (Ray's start takes seconds).

    python benchmarks/bench_serve.py [--tasks 40] [--rounds 3] [--seconds 5] [--workers 2] [--no-ray]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import gymnasium as gym
from timing import record_oracle, target, wall_stats_us

import budgetgym
from budgetgym.core import text_env

FC = "budgetgym/FunctionCalling-v0"
NOOP = '{"name": "nothing", "arguments": {}}'


def start_server(env_id: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "budgetgym.cli", "serve", env_id, "--port", str(port),
                                "--max-sessions", "64"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        if select.select([process.stdout], [], [], 1.0)[0]:
            match = re.search(r"on (http://127\.0\.0\.1:\d+)", process.stdout.readline())
            if match:
                return process, match.group(1)
    process.kill()
    raise SystemExit(f"the server did not start: {process.stdout.read()}")


def step_times(env: gym.Env, starts: list[dict], solutions: list[list[str]]) -> list[float]:
    times, clock = [], time.perf_counter
    for start, actions in zip(starts, solutions):
        env.reset(**start)
        for action in actions:
            begin = clock()
            env.step(action)
            times.append(clock() - begin)
    return times


def remote_step(url: str, tasks: int, rounds: int) -> dict:
    local = gym.make(FC)
    ids = list(text_env(local).tasks.ids)[:tasks]
    starts = [{"seed": i, "options": {"task_id": task_id}} for i, task_id in enumerate(ids)]
    solutions = record_oracle(text_env(local), starts)
    remote = gym.make("budgetgym/Remote-v0", url=url, env_id=FC)
    step_times(remote, starts[:2], solutions[:2])  # warm both ends
    series: dict[str, list[float]] = {"in_process": [], "remote": []}
    for _ in range(rounds):
        series["in_process"] += step_times(local, starts, solutions)
        series["remote"] += step_times(remote, starts, solutions)
    remote.close()
    local.close()
    stats = {name: wall_stats_us(times, p99=True) for name, times in series.items()}
    stats["added_median_us"] = round(stats["remote"]["median_us"] - stats["in_process"]["median_us"], 1)
    stats["added_mean_us"] = round(stats["remote"]["mean_us"] - stats["in_process"]["mean_us"], 1)
    return stats


def aggregate(url: str, sessions: int, seconds: float) -> dict:
    steps, errors = [0] * sessions, []
    envs = [gym.make("budgetgym/Remote-v0", url=url, env_id=FC) for _ in range(sessions)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    barrier = threading.Barrier(sessions + 1)
    stop = [0.0]

    def run(index: int) -> None:
        env = envs[index]
        barrier.wait()
        try:
            while time.perf_counter() < stop[0]:
                _, _, terminated, truncated, _ = env.step(NOOP)
                steps[index] += 1
                if terminated or truncated:
                    env.reset()
        except Exception as err:  # counted and printed: the figure is only good without errors
            errors.append(repr(err))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    stop[0] = time.perf_counter() + seconds
    begin = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begin
    for env in envs:
        env.close()
    return {"sessions": sessions, "seconds": round(elapsed, 2), "steps": sum(steps),
            "steps_per_s": round(sum(steps) / elapsed), "errors": errors[:5], "error_count": len(errors)}


def play_recorded(worker, job):
    """ProcessExecutor work: one recorded episode (its reset and actions); the steps taken."""
    env = worker.env
    env.reset(seed=job["seed"], options={"task_id": job["task_id"]})
    for action in job["actions"]:
        env.step(action)
    return {"steps": len(job["actions"])}


def pool(tasks: int, workers: int) -> dict:
    from budgetgym.eval.executors import ProcessExecutor, WorkerSetup
    from budgetgym.serve.ray_pool import EnvPool

    local = gym.make(FC)
    ids = list(text_env(local).tasks.ids)[:tasks]
    starts = [{"seed": i, "options": {"task_id": task_id}} for i, task_id in enumerate(ids)]
    solutions = record_oracle(text_env(local), starts)
    total = sum(map(len, solutions))
    begin = time.perf_counter()
    step_times(local, starts, solutions)
    serial = time.perf_counter() - begin

    jobs = [{"seed": s["seed"], "task_id": s["options"]["task_id"], "actions": a} for s, a in zip(starts, solutions)]
    with ProcessExecutor(workers) as executor:
        setup = WorkerSetup.create(FC, agents={})
        list(executor.map(play_recorded, setup, jobs[:workers]))  # workers started and envs made
        begin = time.perf_counter()
        assert sum(r["steps"] for r in executor.map(play_recorded, setup, jobs)) == total
        processes = time.perf_counter() - begin

    with EnvPool(FC, workers, cpus_per_env=max(0.01, (os.cpu_count() or 1) / workers / 2)) as envs:
        envs.reset(seeds=[0] * workers)
        begin = time.perf_counter()
        queue = list(range(len(jobs)))
        current: list[int | None] = [None] * workers
        position = [0] * workers
        while queue or any(c is not None for c in current):
            for slot in range(workers):
                if current[slot] is None and queue:
                    current[slot] = job = queue.pop(0)
                    envs.reset_at(slot, seed=jobs[job]["seed"], options={"task_id": jobs[job]["task_id"]})
                    position[slot] = 0
            actions = []
            for slot in range(workers):
                job = current[slot]
                actions.append(None if job is None else jobs[job]["actions"][position[slot]])
            envs.step(actions)
            for slot in range(workers):
                if current[slot] is not None:
                    position[slot] += 1
                    if position[slot] == len(jobs[current[slot]]["actions"]):
                        current[slot] = None
        ray_pool = time.perf_counter() - begin
    local.close()
    per_step = {name: round(value / total * 1e6, 1) for name, value in
                (("serial_in_process", serial), ("process_executor", processes), ("ray_pool", ray_pool))}
    return {"workers": workers, "episodes": len(jobs), "steps": total, "wall_us_per_step": per_step,
            "ray_pool_overhead_us_per_step": round(per_step["ray_pool"] - per_step["process_executor"], 1),
            "note": "wall time over every step of the same episodes; the executor runs whole episodes in a "
                    "worker, the pool one batched step per round trip"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()

    process, url = start_server(FC)
    try:
        step = remote_step(url, args.tasks, args.rounds)
        load = aggregate(url, args.sessions, args.seconds)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "cpus_usable": len(os.sched_getaffinity(0))},
              "remote_step": step, "aggregate": load}
    targets = {"remote_step_added_us": target(1000.0, step["added_median_us"], statistic="median"),
               "aggregate_steps_per_s": target(1000.0, load["steps_per_s"] if not load["error_count"] else 0.0,
                                               at_most=False, sessions=args.sessions)}
    if not args.no_ray:
        result["pool"] = pool(args.tasks, args.workers)
    result["targets"] = targets
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
