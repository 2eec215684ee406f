"""Helpers of the evaluation tests (a module of its own: test files import it, never a conftest)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

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
    import os
    import time

    time.sleep(0.01)  # long enough that every worker of a pool gets some of the jobs
    return {"i": job["i"], "pid": os.getpid(), "env": id(worker.env.unwrapped)}
