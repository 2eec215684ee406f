"""A long run on one instance, wrappers included: per-episode time and memory must stay flat.

For each registered default env: thousands of oracle episodes through ErrorInjection (p=0.5),
BudgetMix and TurnBudget on one instance; prints JSON with the mean episode time of the first and
the last tenth (their ratio should be ~1) and the memory traced after a third of the run and at its
end. The first third fills the per-task caches (a task's fingerprint, its tool set), which are
bounded by the number of tasks; growth after it would be a leak.

    python benchmarks/bench_long_run.py [--episodes 6000]
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc

import gymnasium as gym
import numpy as np

import budgetgym
from budgetgym.wrappers import BudgetMix, ErrorInjection, TurnBudget


def wrapped(env_id: str) -> gym.Env:
    env = gym.make(env_id)
    if env.unwrapped.failure_states():
        env = ErrorInjection(env, p=0.5)
    return TurnBudget(BudgetMix(env, budgets=(0.5, 0.75, 1.0)), 1.0, reveal="remaining")


def run(env_id: str, episodes: int) -> dict:
    env = wrapped(env_id)
    env.reset(seed=0)
    times = np.zeros(episodes)  # allocated before tracing, no float objects: not the env's memory
    gc.collect()
    tracemalloc.start()
    for episode in range(episodes):
        if episode == episodes // 3:
            gc.collect()
            after_warmup = tracemalloc.get_traced_memory()[0]
        start = time.perf_counter()
        env.reset()
        while True:
            _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action() or "Done.")
            if terminated or truncated:
                break
        times[episode] = time.perf_counter() - start
    gc.collect()
    final = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    tenth = max(1, episodes // 10)
    first, last = float(times[:tenth].mean()), float(times[-tenth:].mean())
    return {"episodes": episodes, "first_tenth_ms": round(first * 1e3, 3), "last_tenth_ms": round(last * 1e3, 3),
            "last_over_first": round(last / first, 3), "traced_kib_after_a_third": round(after_warmup / 1024, 1),
            "traced_kib_at_end": round(final / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=6000)
    args = parser.parse_args()
    result = {entry.id: run(entry.id, args.episodes) for entry in budgetgym.REGISTRY if not entry.adapter}
    print(json.dumps({"benchmark": "long run, one instance, wrappers included", "envs": result}, indent=2))


if __name__ == "__main__":
    main()
