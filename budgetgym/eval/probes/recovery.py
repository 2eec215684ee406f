"""The recovery probe: does an agent still solve a task after a known mistake?

Each curated failure state (``ErrorInjection``) is paired with its matched clean state: the same
task, reached by the oracle with the same seed, at the same turn, so both arms have the same turns
left and differ only by the mistake. Both arms start through :class:`ErrorInjection`, so the agent
sees each prefix alike (rendered in the first observation, listed in ``info["history"]``) and never
the mistake's description. The agent runs ``attempts`` episodes from each, with the same
seeds in both arms (common random numbers); the report gives both success rates per failure kind.
A failure state whose task the oracle solves before that turn has no clean twin and is skipped
(and counted as such).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import gymnasium as gym
import numpy as np

from budgetgym.core import rollout, text_env
from budgetgym.eval.agents.base import Agent, agent_config, prepare_agent
from budgetgym.eval.episodes import continue_episode
from budgetgym.eval.executors import Job, Record, Worker, WorkerSetup
from budgetgym.eval.metrics import difference_ci
from budgetgym.eval.sweep import config_difference, derive_seed, run_logged
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
    # Both arms through the wrapper, so the agent gets each prefix alike, as in training: in the
    # observation and in info["history"]; the arms differ by the mistake alone. info["injected_error"]
    # is the runner's (a description often names the fix): agents are handed agent_view(info).
    state = job["failure_state"] if job["arm"] == "failure" else \
        {"id": job["state"], "task_id": job["task"], "kind": job["kind"], "snapshot": job["snapshot"]}
    env: gym.Env[str, str] = ErrorInjection(worker.env, states=[state])
    observation, info = env.reset(seed=job["seed"], options={"task_id": job["task"]})
    result = continue_episode(env, agent, observation, info, seed=job["seed"])
    return {"arm": job["arm"], "state": job["state"], "kind": job["kind"], "task": job["task"],
            "attempt": job["attempt"], "seed": job["seed"], "agent": agent.name, "agent_config": agent_config(agent),
            "success": result.success, "turns": result.turns, "actions": result.actions, "steps": result.steps}


def recovery_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record["state"], record["arm"], record["attempt"])


RECOVERY_FIELDS = ("state", "arm", "attempt", "kind", "task", "seed", "agent", "success", "turns")


def _check_resumed(job: Job, record: Record, config: dict[str, Any]) -> bool:
    if record.get("seed") != job["seed"] or record.get("agent_config") != config:
        difference = config_difference(record.get("agent_config"), config) if record.get("seed") == job["seed"] \
            else f"seed {record.get('seed')} -> {job['seed']}"
        raise ValueError(f"the probe's episode file holds {job['state']} from another run ({difference}); "
                         "resume only with the same options, or write to another --out")
    return True


def run_recovery_probe(
    env_id: str,
    agent: Agent,
    *,
    kinds: Iterable[str] | None = None,
    states: Sequence[Mapping[str, Any]] | None = None,
    split: str | None = None,
    tasks: Sequence[str] | None = None,
    attempts: int = 4,
    seed: int = 0,
    executor: Any = "serial",
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
    bootstrap: int = 1000,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Recovery rates from failure states and from their matched clean states, per failure kind.

    ``states`` defaults to the env's curated failure states (filtered by ``kinds``, and to the tasks
    of ``split`` and ``tasks`` when given, as :class:`ErrorInjection` does). With ``out``
    (a JSON-lines file) every episode is appended as it ends and a rerun resumes from it, with the
    same guarantees as a sweep's file (:mod:`budgetgym.eval.episode_log`).
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    env = gym.make(env_id, **(env_kwargs or {}))
    try:
        chosen = ErrorInjection(env, kinds=kinds, states=states, split=split, tasks=tasks).states  # validates kinds and records
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
    prepare_agent(agent)
    setup = WorkerSetup.create(env_id, {"agent": agent}, env_kwargs)
    config = agent_config(agent)
    episodes, _, _ = run_logged(executor, run_recovery_episode, setup, jobs, out, key=recovery_key,
                                check=lambda job, record: _check_resumed(job, record, config),
                                description=f"recovery {agent.name}", progress=progress, required=RECOVERY_FIELDS)
    return {"env": env_id, "agent": agent.name, "attempts": attempts, "seed": seed, "split": split,
            "tasks": list(tasks) if tasks is not None else None, "skipped_states": skipped,
            "kinds": summarize_recovery(episodes, bootstrap=bootstrap, seed=seed), "episodes": episodes}


def summarize_recovery(episodes: Sequence[Mapping[str, Any]], *, bootstrap: int = 1000,
                       seed: int = 0) -> list[dict[str, Any]]:
    """Per failure kind (and "all"): success from the failure states and from the clean ones, and the
    gap, with an interval over states (a state's rate is the mean over its attempts): the paired
    bootstrap widened to Newcombe's score interval (see ``budgetgym.eval.metrics.INTERVAL_METHOD``)."""
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
        low, high = difference_ci(clean, failure, bootstrap=bootstrap, seed=seed)
        rows.append({"kind": kind, "states": len(ids), "failure_recovery": float(failure.mean()),
                     "clean_success": float(clean.mean()), "gap": float((failure - clean).mean()),
                     "gap_ci_low": low, "gap_ci_high": high})
    return rows
