"""Wrapper overhead per step: TurnBudget, BudgetMix and ErrorInjection over a bare env.

Prints JSON. The overhead is measured over a stub env whose step costs almost nothing, so the
figure is the wrappers' own cost (Gymnasium's TimeLimit is measured beside them for scale), and
then as a ratio over each registered default env's real step. All figures come from one run, in
the thread's CPU time per step (the best of five).

    python benchmarks/bench_wrappers.py [--steps 200000]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import gymnasium as gym
from gymnasium.wrappers import TimeLimit
from timing import target

import budgetgym
from budgetgym.core import Outcome, TaskSet, TextEnv
from budgetgym.wrappers import BudgetMix, ErrorInjection, HorizonSchedule, TurnBudget


class StubEnv(TextEnv):
    """The cheapest text env that reports what the budget wrappers read (turn, full_budget): a
    ``TextEnv`` (ErrorInjection reads its failure states through ``text_env``) whose reset and step
    do nothing else."""

    def __init__(self):
        super().__init__(tasks=TaskSet([{"id": "t", "split": "test", "max_turns": 10**9, "instruction": ""}]))

    def _load_task(self, task, seed):
        return "obs"

    def _execute(self, action):
        return Outcome("obs")

    def failure_states(self):
        return ({"id": "f", "task_id": "t", "kind": "k", "description": "", "error_step": 0,
                 "snapshot": {"transcript": []}},)

    def reset(self, *, seed=None, options=None):
        gym.Env.reset(self, seed=seed)
        self._turn = 0
        return "obs", {"turn": 0, "full_budget": 10**9}

    def step(self, action):
        self._turn += 1
        return "obs", 0.0, False, False, {"turn": self._turn, "full_budget": 10**9}


def per_step_ns(env, steps: int, action: str, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        env.reset(seed=0)
        step = env.step
        # The thread's CPU time, not the wall clock: on a shared machine the wall clock counts the
        # time other processes ran, which swamps a sub-microsecond difference.
        start = time.thread_time_ns()
        for _ in range(steps):
            _, _, terminated, truncated, _ = step(action)
            if terminated or truncated:
                env.reset()
        best = min(best, (time.thread_time_ns() - start) / steps)
    return best


def stub_configs():
    cap = 10**9
    return {
        "bare": StubEnv(),
        "gymnasium.TimeLimit": TimeLimit(StubEnv(), max_episode_steps=cap),
        "TurnBudget(reveal=none)": TurnBudget(StubEnv(), cap),
        "TurnBudget(reveal=remaining)": TurnBudget(StubEnv(), cap, reveal="remaining"),
        "BudgetMix": BudgetMix(StubEnv(), budgets=(0.5, 1.0)),
        "TurnBudget(unit=tokens)": TurnBudget(StubEnv(), cap, unit="tokens"),
        "HorizonSchedule": HorizonSchedule(StubEnv(), stages=((0, 0.5), (10, 1.0))),
        "all three": TurnBudget(BudgetMix(ErrorInjection(StubEnv()), budgets=(0.5, 1.0)), cap),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    args = parser.parse_args()

    stub = {name: per_step_ns(env, args.steps, "a") for name, env in stub_configs().items()}
    bare = stub["bare"]
    result = {
        "benchmark": "wrapper overhead per step",
        "python": platform.python_version(),
        "stub_env": {name: {"ns_per_step": round(ns, 1), "overhead_us": round((ns - bare) / 1000, 3)}
                     for name, ns in stub.items()},
        "real_envs": {},
        "targets": {"all_three_wrappers_add_us_under": target(5, round((stub["all three"] - bare) / 1000, 3)),
                    "each_wrapper_adds_us_under": target(2, round(max(stub[name] - bare for name in stub
                                                                      if name not in ("bare", "all three")) / 1000, 3))},
        "ratio_to_timelimit": {name: round((ns - bare) / max(1.0, stub["gymnasium.TimeLimit"] - bare), 1)
                               for name, ns in stub.items() if name not in ("bare", "gymnasium.TimeLimit")},
    }
    for entry in budgetgym.REGISTRY:
        if entry.adapter:
            continue
        plain = gym.make(entry.id).unwrapped
        inner = BudgetMix(ErrorInjection(gym.make(entry.id).unwrapped, p=0.0), budgets=(1.0,), reveal="none")
        wrapped = TurnBudget(inner, 10**6, reveal="remaining")
        steps = max(1000, args.steps // 20)
        a, b = per_step_ns(plain, steps, "hello"), per_step_ns(wrapped, steps, "hello")
        result["real_envs"][entry.id] = {"bare_us": round(a / 1000, 2), "wrapped_us": round(b / 1000, 2),
                                         "ratio": round(b / a, 3)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
