"""Pass@(K,T) sweep throughput with scripted agents, per executor, and the saving of the
single-run shortcut under reveal="none", measured in one run; prints JSON.

The workload: a sweep of about 5,000 episodes of the noisy oracle on FunctionCalling-v0 (the
README's grid, K = 1, 2, 4, 8 and T = 25/50/75/100% of each task's budget, one run per T), run as
cells, one ``run_sweep`` per T, as a sweep over several envs, agents or reveal modes runs. Each
executor runs the whole sweep twice:

* cold: a fresh executor, so its start-up is on the clock (processes spawned, envs made; for Ray
  the workers' first tasks: the cluster itself is started before the clock, as a cluster would be,
  and its start-up is reported apart);
* warm: the same executor again, its workers and envs kept from the cold pass, as the later cells
  of a long sweep see it.

Threads are measured too, though they are meant for agents that wait on a model server (scripted
agents hold the GIL, so threads cannot beat serial here). The load average of the machine is
printed beside the figures: on a shared machine other processes take cores from the workers.

    python benchmarks/bench_eval.py [--env ID] [--episodes N] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import budgetgym
from budgetgym.eval._extras import MissingExtraError
from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.executors import ProcessExecutor, RayExecutor, SerialExecutor, ThreadExecutor
from budgetgym.eval.sweep import DEFAULT_BUDGETS, DEFAULT_KS, run_sweep

TOY_ID = "budgetgym-test/Counter-v0"
DEFAULT_ENV = "budgetgym/FunctionCalling-v0"


def register_toy_env() -> None:
    """The toy env of tests/, for a benchmark of the runner itself (``--env budgetgym-test/Counter-v0``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    if TOY_ID not in gym.registry:
        gym.register(TOY_ID, entry_point="toy_env:CounterEnv")


def timed_sweep(env_ids: list[str], executor, tasks: int, shortcut: bool) -> tuple[int, float]:
    """Episodes run and seconds taken by one sweep (a cell per env and T; a fresh file: nothing resumed)."""
    episodes = 0
    budgets = [None] if shortcut else list(DEFAULT_BUDGETS)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for env_id in env_ids:
            for budget in budgets:
                result = run_sweep(env_id, NoisyOracleAgent(0.25), tasks=tasks, k=DEFAULT_KS,
                                   budgets=DEFAULT_BUDGETS if budget is None else (budget,),
                                   reveal="none", executor=executor, out=Path(folder) / "episodes.jsonl",
                                   shortcut=shortcut)
                episodes += result.ran
    return episodes, time.perf_counter() - start


def _close(executor) -> None:
    close = getattr(executor, "close", None)  # executors before keeping their workers had none
    if close is not None:
        close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=None, help=f"env ids (default: {DEFAULT_ENV})")
    parser.add_argument("--episodes", type=int, default=5000, help="episodes of the sweep (about)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executors", default="serial,threads,processes,ray",
                        help="comma-separated, of serial (always run: the reference), threads, processes, ray")
    args = parser.parse_args()
    chosen = {"serial", *args.executors.split(",")}
    register_toy_env()
    env_ids = args.env or [DEFAULT_ENV]
    per_task = max(DEFAULT_KS) * len(DEFAULT_BUDGETS) * len(env_ids)
    tasks = max(1, math.ceil(args.episodes / per_task))

    makers = {"serial": SerialExecutor, "threads": lambda: ThreadExecutor(args.workers),
              "processes": lambda: ProcessExecutor(args.workers)}
    makers = {name: make for name, make in makers.items() if name in chosen}
    ray_start: float | str | None = None
    if "ray" in chosen:
        try:
            started = time.perf_counter()
            RayExecutor(args.workers).start()
            ray_start = time.perf_counter() - started
            makers["ray"] = lambda: RayExecutor(args.workers)
        except MissingExtraError:
            pass  # reported as absent below
        except Exception as err:  # a local cluster that does not come up (an overloaded machine): say so
            ray_start = f"failed to start: {type(err).__name__}: {err}"

    throughput = {}
    for name, make in makers.items():
        executor = make()
        row = {}
        for phase in ("cold", "warm"):
            episodes, seconds = timed_sweep(env_ids, executor, tasks, shortcut=False)
            row[phase] = {"episodes": episodes, "seconds": round(seconds, 3), "episodes_per_s": round(episodes / seconds, 1)}
        _close(executor)
        throughput[name] = row
    serial = SerialExecutor()
    shortcut_episodes, shortcut_seconds = timed_sweep(env_ids, serial, tasks, shortcut=True)
    _close(serial)
    separate = throughput["serial"]["warm"]

    def speedup(name: str, phase: str) -> float | None:
        if name not in throughput:
            return None
        return round(throughput["serial"][phase]["seconds"] / throughput[name][phase]["seconds"], 2)

    print(json.dumps({
        "envs": env_ids, "tasks_per_env": tasks, "ks": list(DEFAULT_KS), "budgets": list(DEFAULT_BUDGETS),
        "cells": len(env_ids) * len(DEFAULT_BUDGETS), "agent": NoisyOracleAgent(0.25).name, "workers": args.workers,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "sweep_throughput": throughput,
        "speedup_over_serial": {name: {"cold": speedup(name, "cold"), "warm": speedup(name, "warm")}
                                for name in throughput if name != "serial"},
        "ray": ({"measured": True, "cluster_start_seconds": round(ray_start, 2)} if isinstance(ray_start, float)
                else ray_start or ("not installed (pip install 'budgetgym[ray]')" if "ray" in chosen else "not asked for")),
        "single_run_shortcut": {
            "episodes_with": shortcut_episodes, "episodes_without": separate["episodes"],
            "episode_ratio": round(separate["episodes"] / shortcut_episodes, 2),
            "seconds_with": round(shortcut_seconds, 3), "seconds_without": separate["seconds"],
            "time_ratio": round(separate["seconds"] / shortcut_seconds, 2),
        },
        "targets": {"processes_over_serial_at_least": {"target": 1.6, "measured_cold": speedup("processes", "cold"),
                                                         "measured_warm": speedup("processes", "warm")}},
    }, indent=2))


if __name__ == "__main__":
    main()
