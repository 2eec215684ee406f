"""Pass@(K,T) sweep throughput with scripted agents, per executor, and the saving of the
single-run shortcut under reveal="none", measured in one run; prints JSON.

The workload is the README's grid (K = 1, 2, 4, 8; T = 25/50/75/100% of each task's budget) with
the noisy oracle, on the registered default envs (the toy env of tests/ when none is registered).
Threads are measured too, though they are meant for agents that wait on a model server (scripted
agents hold the GIL, so threads cannot beat serial here). Executor start-up is part of each
measurement (a process pool is spawned per sweep); the Ray cluster is started once, before the
clock, as a cluster would be.

    python benchmarks/bench_eval.py [--env ID] [--tasks N] [--workers N]
"""

from __future__ import annotations

import argparse
import json
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


def register_toy_env() -> None:
    """The toy env of tests/, for a benchmark of the runner itself (``--env budgetgym-test/Counter-v0``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    if TOY_ID not in gym.registry:
        gym.register(TOY_ID, entry_point="toy_env:CounterEnv")


def default_envs() -> list[str]:
    return [entry.id for entry in budgetgym.REGISTRY if not entry.adapter] or [TOY_ID]


def timed_sweeps(env_ids: list[str], executor, tasks: int, shortcut: bool) -> tuple[int, float]:
    """Episodes run and seconds taken by one sweep per env (to a fresh file: nothing resumed)."""
    episodes = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for env_id in env_ids:
            result = run_sweep(env_id, NoisyOracleAgent(0.25), tasks=tasks, k=DEFAULT_KS, budgets=DEFAULT_BUDGETS,
                               reveal="none", executor=executor, out=Path(folder) / "episodes.jsonl",
                               shortcut=shortcut)
            episodes += result.ran
    return episodes, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", default=None, help="env ids (default: the registered defaults)")
    parser.add_argument("--tasks", type=int, default=100, help="tasks per env (the first n)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    register_toy_env()
    env_ids = args.env or default_envs()

    executors = {"serial": SerialExecutor(), "threads": ThreadExecutor(args.workers),
                 "processes": ProcessExecutor(args.workers)}
    try:
        executors["ray"] = RayExecutor(args.workers)
        executors["ray"].start()
    except MissingExtraError:
        del executors["ray"]  # reported as absent below

    throughput = {}
    for name, executor in executors.items():
        # Separate runs per T: the larger workload, so start-up costs weigh less.
        episodes, seconds = timed_sweeps(env_ids, executor, args.tasks, shortcut=False)
        throughput[name] = {"episodes": episodes, "seconds": round(seconds, 3),
                            "episodes_per_s": round(episodes / seconds, 1)}
    shortcut_episodes, shortcut_seconds = timed_sweeps(env_ids, executors["serial"], args.tasks, shortcut=True)
    separate = throughput["serial"]
    print(json.dumps({
        "envs": env_ids, "tasks_per_env": args.tasks, "ks": list(DEFAULT_KS), "budgets": list(DEFAULT_BUDGETS),
        "agent": NoisyOracleAgent(0.25).name, "workers": args.workers,
        "sweep_throughput": throughput,
        "ray": "measured" if "ray" in executors else "not installed (pip install 'budgetgym[ray]')",
        "single_run_shortcut": {
            "episodes_with": shortcut_episodes, "episodes_without": separate["episodes"],
            "episode_ratio": round(separate["episodes"] / shortcut_episodes, 2),
            "seconds_with": round(shortcut_seconds, 3), "seconds_without": separate["seconds"],
            "time_ratio": round(separate["seconds"] / shortcut_seconds, 2),
        },
    }, indent=2))


if __name__ == "__main__":
    main()
