"""Helpers of the evaluation tests (a module of its own: test files import it, never a conftest)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import gymnasium as gym

from budgetgym.eval.agents import NoisyOracleAgent
from registered import TOY_ID  # registers the toy env

TESTS_DIR = Path(__file__).resolve().parent.parent


def failure_state(state_id: str, task_id: str, kind: str, actions: list[str], seed: int = 7) -> dict:
    """A failure state of the toy env: the snapshot after ``actions`` (the mistake last)."""
    env = gym.make(TOY_ID)
    env.reset(seed=seed, options={"task_id": task_id})
    for action in actions:
        env.step(action)
    return {"id": state_id, "task_id": task_id, "kind": kind, "description": f"{kind} on {task_id}",
            "error_step": len(actions) - 1, "snapshot": env.unwrapped.snapshot()}


def where(worker, job: dict) -> dict:
    """A job's record naming the process and the env object that ran it (executor tests)."""
    time.sleep(0.01)  # long enough that every worker of a pool gets some of the jobs
    return {"i": job["i"], "pid": os.getpid(), "env": id(worker.env.unwrapped)}


#: Set at run time by a test in the parent: a forked worker sees its value, a spawned one this.
MARKER = "imported"


def marker(worker, job: dict) -> dict:
    """A job's record with the worker's ``MARKER`` (executor tests: was the worker forked?), and
    whether a bounded call that runs past its limit is stopped in the worker."""
    from budgetgym.core import Limits, TimeLimitExceeded

    def spin() -> None:
        while True:
            pass

    try:
        Limits(seconds=0.05).run(spin)
        stopped = False
    except TimeLimitExceeded:
        stopped = True
    return {"i": job["i"], "marker": MARKER, "overrun_stopped": stopped}


def toy_tasks(n: int) -> list[str]:
    """The first ``n`` toy task ids of both splits (a sweep's default is the test split only)."""
    return [f"toy-{i:02d}" for i in range(n)]


class SlowAgent(NoisyOracleAgent):
    """A noisy oracle slowed down so that a kill lands mid-sweep (same name and configuration, so
    its episodes resume with the plain one; importable by worker processes)."""

    def __init__(self, p: float, delay: float = 0.05) -> None:
        super().__init__(p)
        self.delay = delay

    def act(self, observation, info):
        time.sleep(self.delay)
        return super().act(observation, info)


class DyingAgent(NoisyOracleAgent):
    """A noisy oracle whose worker process dies once, mid-sweep: the first time any worker resets
    on ``task`` (claimed by creating the file ``flag``, which only one process can), it ends its own
    process without clean-up (same name and configuration as the plain one; importable by workers)."""

    def __init__(self, p: float, flag: str, task: str) -> None:
        super().__init__(p)
        self.flag, self.task = flag, task

    def reset(self, env, observation, info, seed):
        if info.get("task_id") == self.task:
            try:
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass
            else:
                os._exit(1)
        super().reset(env, observation, info, seed)
