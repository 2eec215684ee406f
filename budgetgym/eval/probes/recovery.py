"""The recovery probe: does an agent still solve a task after a known mistake?

Each curated failure state (``ErrorInjection``) is paired with its matched clean state: the same
task, reached by the oracle with the same seed, at the same turn, so both arms have the same turns
left and differ only by the mistake. The agent runs ``attempts`` episodes from each, with the same
seeds in both arms (common random numbers); the report gives both success rates per failure kind.
A failure state whose task the oracle solves before that turn has no clean twin and is skipped
(and counted as such).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

import gymnasium as gym
import numpy as np

from budgetgym.core import rollout, text_env
from budgetgym.eval.agents.base import Agent
from budgetgym.eval.episodes import continue_episode
from budgetgym.eval.executors import Job, Record, Worker, WorkerSetup, run_jobs
from budgetgym.eval.metrics import bootstrap_ci
from budgetgym.eval.progress import progress_bar
from budgetgym.eval.sweep import derive_seed
from budgetgym.wrappers import ErrorInjection

ARMS = ("failure", "clean")


def matched_clean_snapshot(env: gym.Env[str, str], failure_state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The oracle's state on the failure state's task and seed at the same turn, or None when the
    oracle's episode ends before that turn."""
    snapshot = failure_state["snapshot"]
    base = text_env(env)
    played = rollout(base, "oracle", seed=snapshot["seed"], options={"task_id": failure_state["task_id"]},
                     max_steps=snapshot["turn"])
    if played.turns < snapshot["turn"] or played.ended:
        return None
    return base.snapshot()


def run_recovery_episode(worker: Worker, job: Job) -> Record:
    agent = worker.agents["agent"]
    if job["arm"] == "failure":
        # Through the wrapper, so the agent gets info["injected_error"] and info["history"] as in training.
        env: gym.Env[str, str] = ErrorInjection(worker.env, states=[job["failure_state"]])
        observation, info = env.reset(seed=job["seed"], options={"task_id": job["task"]})
    else:
        env = worker.env
        observation, info = env.reset(seed=job["seed"], options={"snapshot": job["snapshot"]})
    result = continue_episode(env, agent, observation, info, seed=job["seed"])
    return {"arm": job["arm"], "state": job["state"], "kind": job["kind"], "task": job["task"],
            "attempt": job["attempt"], "seed": job["seed"], "success": result.success, "turns": result.turns,
            "actions": result.actions}


def run_recovery_probe(
    env_id: str,
    agent: Agent,
    *,
    kinds: Iterable[str] | None = None,
    states: Sequence[Mapping[str, Any]] | None = None,
    attempts: int = 4,
    seed: int = 0,
    executor: Any = "serial",
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
    bootstrap: int = 1000,
) -> dict[str, Any]:
    """Recovery rates from failure states and from their matched clean states, per failure kind.

    ``states`` defaults to the env's curated failure states (filtered by ``kinds``).
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    env = gym.make(env_id, **(env_kwargs or {}))
    try:
        chosen = ErrorInjection(env, kinds=kinds, states=states).states  # validates kinds and records
        jobs: list[Job] = []
        skipped = []
        for record in chosen:
            clean = matched_clean_snapshot(env, record)
            if clean is None:
                skipped.append(record["id"])
                continue
            for attempt in range(attempts):
                common = {"state": record["id"], "kind": record["kind"], "task": record["task_id"],
                          "attempt": attempt, "seed": derive_seed(seed, env_id, record["id"], attempt)}
                jobs.append({**common, "arm": "failure", "failure_state": dict(record)})
                jobs.append({**common, "arm": "clean", "snapshot": clean})
    finally:
        env.close()
    if not jobs:
        raise ValueError(f"no failure state has a matched clean state (skipped: {skipped})")
    setup = WorkerSetup.create(env_id, {"agent": agent}, env_kwargs)
    episodes = []
    with progress_bar(len(jobs), f"recovery {env_id} {agent.name}", enabled=progress) as advance:
        for record in run_jobs(executor, run_recovery_episode, setup, jobs):
            episodes.append(record)
            advance(1)
    episodes.sort(key=lambda r: (r["state"], r["arm"], r["attempt"]))
    return {"env": env_id, "agent": agent.name, "attempts": attempts, "seed": seed, "skipped_states": skipped,
            "kinds": summarize_recovery(episodes, bootstrap=bootstrap, seed=seed), "episodes": episodes}


def summarize_recovery(episodes: Sequence[Mapping[str, Any]], *, bootstrap: int = 1000,
                       seed: int = 0) -> list[dict[str, Any]]:
    """Per failure kind (and "all"): success from the failure states and from the clean ones, and the
    gap, with a bootstrap CI over states (a state's rate is the mean over its attempts)."""
    per_state: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {arm: [] for arm in ARMS})
    kind_of: dict[str, str] = {}
    for episode in episodes:
        per_state[episode["state"]][episode["arm"]].append(bool(episode["success"]))
        kind_of[episode["state"]] = episode["kind"]
    rows = []
    for kind in [*sorted(set(kind_of.values())), "all"]:
        ids = [s for s in per_state if kind in ("all", kind_of[s])]
        failure = np.array([np.mean(per_state[s]["failure"]) for s in ids])
        clean = np.array([np.mean(per_state[s]["clean"]) for s in ids])
        low, high = bootstrap_ci(failure - clean, bootstrap=bootstrap, seed=seed)
        rows.append({"kind": kind, "states": len(ids), "failure_recovery": float(failure.mean()),
                     "clean_success": float(clean.mean()), "gap": float((failure - clean).mean()),
                     "gap_ci_low": low, "gap_ci_high": high})
    return rows
