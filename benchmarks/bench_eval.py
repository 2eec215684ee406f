"""Pass@(K,T) sweep throughput with scripted agents, per executor, and the saving of the
single-run shortcut under reveal="none", measured in one run; prints JSON.

The workload: a sweep of 5,000 episodes of the noisy oracle on FunctionCalling-v0: the first 125
of its tasks (both splits: the test split alone has 52, and a count above what the default split
holds is refused), K = 1, 2, 4, 8 (8 attempts a task) and the default grid of budgets
(``1x, 1.25x, 1.5x, 2x`` of each task's shortest solution and its full budget), one run per T. It
runs as cells, one ``run_sweep`` per T into one episodes file, as a sweep over several envs,
agents or reveal modes runs from the command line. The benchmark stops with an error if any cell
runs fewer episodes than it plans.

Each executor runs the whole sweep cold, then warm in ``--rounds`` rounds (Ray after the others,
with serial passes of its own beside it: its daemons use CPU even when idle):

* cold: a fresh executor, so its start-up is on the clock (processes started, envs made; for Ray
  the workers' first tasks: the cluster itself is started before the clock, as a cluster would be,
  and its start-up is reported apart);
* warm: the same executor again, its workers and envs kept from the cold pass, as the later cells
  of a long sweep see it. The executors take turns round by round, so a shared machine's drift
  falls on all of them alike; a speed-up is serial's time over the executor's in the same round,
  and the median of the rounds is reported.

Every pass records its wall time, the CPU time of this process (the parent: planning, the file,
receiving records) and of the processes it started (pool workers; Ray's workers and daemons), and
the load average, since on a shared machine other processes take cores from the workers. From
these: ``cpu_bound_speedup``, the speed-up that the pass's CPU time allows on ``--workers`` idle
cores (serial's CPU over the executor's, spread over the workers), beside the measured one.

Ray's costs are measured in the same run: starting a local cluster, and the round trip of an empty
task, one at a time (latency) and many in flight (throughput), beside a process pool's.

Threads are measured too, though they are meant for agents that wait on a model server (scripted
agents hold the GIL, so threads cannot beat serial here).

    python benchmarks/bench_eval.py [--env ID] [--episodes N] [--workers N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core.env import text_env
from budgetgym.core.extras import MissingExtra
from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.executors import ProcessExecutor, RayExecutor, SerialExecutor, ThreadExecutor, WorkerSetup
from budgetgym.eval.sweep import DEFAULT_BUDGETS, DEFAULT_KS, run_sweep

TOY_ID = "budgetgym-test/Counter-v0"
DEFAULT_ENV = "budgetgym/FunctionCalling-v0"
TARGET_PROCESSES_OVER_SERIAL = 1.6
_TICKS = os.sysconf("SC_CLK_TCK")


def register_toy_env() -> None:
    """The toy env of tests/, for a benchmark of the runner itself (``--env budgetgym-test/Counter-v0``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    if TOY_ID not in gym.registry:
        gym.register(TOY_ID, entry_point="toy_env:CounterEnv")


def _descendants_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of every live process descended from this one, by pid."""
    parents, cpu = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        parents[int(name)] = int(fields[1])
        cpu[int(name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    mine, found = {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                found = True
    return {pid: cpu[pid] for pid in mine if pid != os.getpid()}


def sweep_tasks(env_id: str, episodes: int, per_task: int) -> list[str]:
    """The first tasks of ``env_id`` (every split) that make about ``episodes`` episodes."""
    env = gym.make(env_id)
    try:
        ids = list(text_env(env).all_tasks.ids)
    finally:
        env.close()
    return ids[:max(1, math.ceil(episodes / per_task))]


def timed_sweep(tasks: dict[str, list[str]], executor: Any, shortcut: bool) -> dict[str, Any]:
    """One sweep (a cell per env and T, into a fresh file: nothing resumed), timed in wall and CPU."""
    planned = ran = 0
    budgets = [None] if shortcut else list(DEFAULT_BUDGETS)
    load = os.getloadavg()[0]
    children = _descendants_cpu()
    cpu, start = time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for env_id, task_ids in tasks.items():
            for budget in budgets:
                result = run_sweep(env_id, NoisyOracleAgent(0.25), tasks=task_ids, k=DEFAULT_KS,
                                   budgets=DEFAULT_BUDGETS if budget is None else (budget,),
                                   reveal="none", executor=executor, out=Path(folder) / "episodes.jsonl",
                                   shortcut=shortcut)
                planned += result.planned
                ran += result.ran
    seconds, parent = time.perf_counter() - start, time.process_time() - cpu
    workers = sum(now - children.get(pid, 0.0) for pid, now in _descendants_cpu().items())
    if ran != planned:
        raise SystemExit(f"the sweep ran {ran} of the {planned} episodes it planned")
    return {"episodes": ran, "seconds": round(seconds, 3), "episodes_per_s": round(ran / seconds, 1),
            "parent_cpu_s": round(parent, 3), "workers_cpu_s": round(workers, 3),
            "parent_us_per_episode": round(parent / ran * 1e6), "load_1min_before": round(load, 2)}


def _empty(value: Any) -> Any:
    return value


def spin(worker: Any, job: dict[str, Any]) -> dict[str, Any]:
    """Pure Python arithmetic, nothing shared: the most parallel work there is."""
    total = 0
    for i in range(job["n"]):
        total += i * i
    return {"total": total}


def parallel_ceiling(executor: Any, workers: int, n: int = 6_000_000) -> float:
    """How much faster ``workers`` processes run ``workers`` equal pure-Python loops than this process
    runs them one after another, now: the most any executor can gain on this machine at this
    moment (the scheduler may give this session less than ``workers`` cores)."""
    jobs = [{"n": n} for _ in range(workers)]
    start = time.perf_counter()
    for job in jobs:
        spin(None, job)
    alone = time.perf_counter() - start
    start = time.perf_counter()
    list(executor.map(spin, WorkerSetup.create(DEFAULT_ENV, {}), jobs))
    return round(alone / (time.perf_counter() - start), 2)


def round_trips(submit: Any, get: Any, n: int) -> dict[str, float]:
    """Milliseconds per empty task: one at a time (latency), and ``n`` in flight (throughput)."""
    get(submit(0))  # warm
    start = time.perf_counter()
    for i in range(n // 10):
        get(submit(i))
    latency = (time.perf_counter() - start) / (n // 10)
    start = time.perf_counter()
    handles = [submit(i) for i in range(n)]
    for handle in handles:
        get(handle)
    return {"latency_ms": round(latency * 1e3, 3), "throughput_ms": round((time.perf_counter() - start) / n * 1e3, 3)}


def process_pool_costs(workers: int) -> dict[str, Any]:
    """Starting a pool of ``workers`` processes, forked and spawned (until one empty task has come
    back from each), and an empty task's round trip. Run before any thread starts."""
    costs: dict[str, Any] = {}
    for method in ("fork", "spawn"):
        try:
            executor = ProcessExecutor(workers, method)
        except TypeError:  # a revision whose pool always spawns (compare_revisions.py)
            costs["start_method"] = "spawn only"
            executor = ProcessExecutor(workers)
        with executor:
            started = time.perf_counter()
            pool = executor.start()
            for future in [pool.submit(_empty, i) for i in range(workers)]:
                future.result()
            costs[f"start_{method}_s"] = round(time.perf_counter() - started, 3)
            if method == "fork":
                costs["task"] = round_trips(lambda i: pool.submit(_empty, i), lambda future: future.result(), 500)
    return costs


def ray_costs(workers: int) -> dict[str, Any]:
    """Starting a local Ray cluster, and an empty task's round trip on it."""
    try:
        started = time.perf_counter()
        ray = RayExecutor(workers).start()
        start_s = time.perf_counter() - started
    except MissingExtra:
        return {"measured": False, "why": "not installed (pip install 'budgetgym[ray]')"}
    except Exception as err:  # a local cluster that does not come up (an overloaded machine): say so
        return {"measured": False, "why": f"failed to start: {type(err).__name__}: {err}"}
    remote = ray.remote(_empty)
    return {"measured": True, "cluster_start_s": round(start_s, 2),
            "task": round_trips(lambda i: remote.remote(i), ray.get, 500)}


def _autogroup() -> str:
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as handle:
            enabled = handle.read().strip() == "1"
    except OSError:
        return "unknown"
    return ("on: the scheduler shares the CPU between sessions, not processes, so a busy machine gives "
            "this run's processes one session's share however many there are") if enabled else "off"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=None, help=f"env ids (default: {DEFAULT_ENV})")
    parser.add_argument("--episodes", type=int, default=5000, help="episodes of the sweep (about)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="warm passes of each executor, taking turns")
    parser.add_argument("--executors", default="serial,threads,processes,ray",
                        help="comma-separated, of serial (always run: the reference), threads, processes, ray")
    args = parser.parse_args()
    chosen = {"serial", *args.executors.split(",")}
    register_toy_env()
    env_ids = args.env or [DEFAULT_ENV]
    per_task = max(DEFAULT_KS) * len(DEFAULT_BUDGETS)
    tasks = {env_id: sweep_tasks(env_id, args.episodes / len(env_ids), per_task) for env_id in env_ids}
    load_at_start = [round(v, 2) for v in os.getloadavg()]

    # Process pools first, while this process runs no other thread (a thread pool's or Ray's keep
    # a pool from forking its workers, as they would in a user's program).
    pool = process_pool_costs(args.workers) if "processes" in chosen else None
    makers = {"serial": SerialExecutor, "processes": lambda: ProcessExecutor(args.workers),
              "threads": lambda: ThreadExecutor(args.workers), "ray": lambda: RayExecutor(args.workers)}
    executors: dict[str, Any] = {}
    passes: dict[str, dict[str, Any]] = {}
    ray: dict[str, Any] = {"measured": False, "why": "not asked for"}
    ceilings: list[float] = []

    def measure(names: list[str], reference: str = "serial") -> None:
        """Cold passes of ``names``, then warm rounds of them and their ``reference`` in turn."""
        for name in names:
            executors[name] = makers[name]()
            passes[name] = {"cold": timed_sweep(tasks, executors[name], shortcut=False), "warm_rounds": []}
        for _ in range(args.rounds):
            if "processes" in names:
                ceilings.append(parallel_ceiling(executors["processes"], args.workers))
            for name in ([reference] if reference not in names else []) + names:
                passes[name]["warm_rounds" if name in names else "beside_ray"].append(
                    timed_sweep(tasks, executors[name], shortcut=False))

    try:
        # Without Ray first: its daemons use CPU even when idle, which would fall on the others.
        measure([name for name in makers if name in chosen and name != "ray"])
        if "ray" in chosen:
            ray = ray_costs(args.workers)
            if ray["measured"]:
                passes["serial"]["beside_ray"] = []
                measure(["ray"])
    finally:
        for executor in executors.values():
            executor.close()
    with SerialExecutor() as serial:
        shortcut = timed_sweep(tasks, serial, shortcut=True)
    if ray["measured"]:
        import ray as ray_module

        ray_module.shutdown()

    def serial_rounds(name: str) -> list[dict[str, Any]]:
        """Serial's passes taken in turn with ``name``'s."""
        return passes["serial"]["beside_ray" if name == "ray" else "warm_rounds"]

    def ratio(name: str, phase: str) -> float:
        if phase == "cold":
            return round(passes["serial"]["cold"]["seconds"] / passes[name]["cold"]["seconds"], 2)
        return round(statistics.median(s["seconds"] / p["seconds"] for s, p in
                                       zip(serial_rounds(name), passes[name]["warm_rounds"])), 2)

    def cores(row: dict[str, Any]) -> float:
        return (row["parent_cpu_s"] + row["workers_cpu_s"]) / row["seconds"]

    def cpu_bound(name: str) -> float:
        """Serial's CPU time over the executor's spread on its workers (the parent's share included)."""
        spread = 1 if name == "threads" else args.workers
        return round(statistics.median(
            (s["parent_cpu_s"] + s["workers_cpu_s"]) / ((p["parent_cpu_s"] + p["workers_cpu_s"]) / spread)
            for s, p in zip(serial_rounds(name), passes[name]["warm_rounds"])), 2)

    serial_warm = passes["serial"]["warm_rounds"]
    speedups = {name: {"cold": ratio(name, "cold"), "warm": ratio(name, "warm"),
                       "warm_rounds": [round(s["seconds"] / p["seconds"], 2)
                                       for s, p in zip(serial_rounds(name), passes[name]["warm_rounds"])],
                       "cores_used_warm": round(statistics.median(cores(p) for p in passes[name]["warm_rounds"]), 2),
                       "cpu_bound_speedup": cpu_bound(name)}
                for name in executors if name != "serial"}
    episodes = serial_warm[0]["episodes"]
    if ray["measured"] and "ray" in speedups:
        serial_s = statistics.median(s["seconds"] for s in serial_rounds("ray")) / episodes
        ray_s = statistics.median(p["seconds"] for p in passes["ray"]["warm_rounds"]) / episodes
        saving = serial_s - ray_s
        ray["pays_over_serial_after_episodes"] = (math.ceil(ray["cluster_start_s"] / saving) if saving > 0
                                                  else "never, at this run's pace")
        if "processes" in speedups:
            proc_s = statistics.median(p["seconds"] for p in passes["processes"]["warm_rounds"]) / episodes
            ray["over_processes_warm"] = round(proc_s / ray_s, 2)
        ray["when_it_pays"] = (
            "Ray costs a cluster start-up (cluster_start_s, seconds, against a process pool's start_fork_s) "
            "and a task round trip several times a pool's (task vs process_pool.task); chunks of about 0.2 s "
            "of work make either round trip a small share. On one machine a process pool does the same work "
            "for less, so Ray pays only when a sweep needs more cores than one machine has (a cluster, "
            "--address) or Ray's placement of envs (resources, nodes with a GPU or Docker), and the sweep is "
            "long enough to repay the start-up: pays_over_serial_after_episodes at this run's pace.")

    processes = speedups.get("processes", {})
    ceiling = statistics.median(ceilings) if ceilings else None
    print(json.dumps({
        "envs": env_ids, "tasks_per_env": {e: len(t) for e, t in tasks.items()}, "ks": list(DEFAULT_KS),
        "budgets": list(DEFAULT_BUDGETS), "cells": len(env_ids) * len(DEFAULT_BUDGETS),
        "agent": NoisyOracleAgent(0.25).name, "workers": args.workers,
        "machine": {
            "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "load_average_at_start": load_at_start, "load_average_at_end": [round(v, 2) for v in os.getloadavg()],
            "autogroup_scheduling": _autogroup(),
            "parallel_ceiling": ceiling, "parallel_ceiling_rounds": ceilings,
            "serial_cores_used_warm": round(statistics.median(cores(s) for s in serial_warm), 2)},
        "sweep_throughput": passes,
        "speedup_over_serial": speedups,
        "process_pool": pool,
        "ray": ray,
        "single_run_shortcut": {
            "episodes_with": shortcut["episodes"], "episodes_without": episodes,
            "episode_ratio": round(episodes / shortcut["episodes"], 2),
            "seconds_with": shortcut["seconds"], "seconds_without": serial_warm[0]["seconds"],
            "time_ratio": round(serial_warm[0]["seconds"] / shortcut["seconds"], 2),
        },
        "targets": {"processes_over_serial_at_least": {
            "target": TARGET_PROCESSES_OVER_SERIAL, "measured_warm": processes.get("warm"),
            "measured_cold": processes.get("cold"), "cpu_bound_speedup": processes.get("cpu_bound_speedup"),
            "parallel_ceiling_now": ceiling,
            "met": processes.get("warm") is not None and processes["warm"] >= TARGET_PROCESSES_OVER_SERIAL}},
    }, indent=2))


if __name__ == "__main__":
    main()
