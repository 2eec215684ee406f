"""The action-quality probe: at the same states, whose next action leaves the better position?

For each state (a snapshot), agent A and agent B each choose one action (with the same seed); the
quality of an action is the success rate of ``rollouts`` Monte Carlo continuations by a reference
agent from the state after it, with the same rollout seeds after A's and B's action (common random
numbers), so the comparison is paired. An action that ends the episode has quality 1 or 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from budgetgym.core import agent_view, rollout, text_env
from budgetgym.eval.agents.base import Agent, agent_config, prepare_agent
from budgetgym.eval.episodes import continue_episode
from budgetgym.eval.executors import Job, Record, Worker, WorkerSetup
from budgetgym.eval.metrics import difference_ci
from budgetgym.eval.sweep import config_difference, derive_seed, run_logged, select_tasks


def oracle_path_states(env: gym.Env[str, str], tasks: Any = None, seed: int = 0) -> list[dict[str, Any]]:
    """States along the oracle's solution of each task, one per turn before the last: the states an
    agent that has done everything right so far is in. Each is ``{"id", "task_id", "snapshot"}``."""
    base = text_env(env)
    states: list[dict[str, Any]] = []

    def keep_and_follow(observation: str, info: dict[str, Any], env: gym.Env) -> str | None:
        action = base.oracle_action()
        if action is not None:
            states.append({"id": f"{base.task.id}@{base.turn}", "task_id": base.task.id, "snapshot": base.snapshot()})
        return action

    for task_id in select_tasks(env, tasks):
        rollout(base, keep_and_follow, seed=derive_seed(seed, task_id), options={"task_id": task_id})
    return states


def run_action_quality_job(worker: Worker, job: Job) -> Record:
    env = worker.env
    agent = worker.agents[job["agent"]]
    reference = worker.agents["reference"]
    observation, info = env.reset(seed=job["seed"], options={"snapshot": job["snapshot"]})
    view = agent_view(info)
    agent.reset(env, observation, view, job["seed"])
    action = agent.act(observation, view)
    _, _, terminated, truncated, info = env.step(action)
    if terminated or truncated:
        successes, rollouts = int(bool(info["success"])), 1
    else:
        after = text_env(env).snapshot()
        rollouts = job["rollouts"]
        successes = 0
        for index in range(rollouts):
            rollout_seed = derive_seed(job["seed"], "rollout", index)
            observation, info = env.reset(seed=rollout_seed, options={"snapshot": after})
            successes += continue_episode(env, reference, observation, info, seed=rollout_seed).success
    return {"state": job["state"], "agent": job["agent"], "seed": job["seed"], "config": job["config"],
            "action": action, "successes": successes, "rollouts": rollouts, "quality": successes / rollouts}


def quality_key(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record["state"], record["agent"])


def _check_resumed(job: Job, record: Record) -> bool:
    if record.get("seed") != job["seed"] or record.get("config") != job["config"] \
            or record.get("rollouts") not in (1, job["rollouts"]):
        raise ValueError(f"the probe's file holds {job['state']} from another run "
                         f"({config_difference(record.get('config'), job['config'])}); resume only with the same "
                         "options, or write to another --out")
    return True


def run_action_quality_probe(
    env_id: str,
    agent_a: Agent,
    agent_b: Agent,
    reference: Agent,
    *,
    states: Sequence[Mapping[str, Any]] | None = None,
    tasks: Any = None,
    rollouts: int = 8,
    seed: int = 0,
    executor: Any = "serial",
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
    bootstrap: int = 1000,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """Compare A's and B's next actions at matched states (default: the oracle's path on ``tasks``).
    With ``out`` (a JSON-lines file) each state's result is appended as it ends and a rerun resumes."""
    if rollouts < 1:
        raise ValueError(f"rollouts must be >= 1, got {rollouts}")
    if states is None:
        env = gym.make(env_id, **(env_kwargs or {}))
        try:
            states = oracle_path_states(env, tasks, seed)
        finally:
            env.close()
    if not states:
        raise ValueError("no states to probe")
    agents = {"a": agent_a, "b": agent_b}
    jobs = [{"state": s["id"], "agent": which, "snapshot": s["snapshot"], "rollouts": rollouts,
             "seed": derive_seed(seed, env_id, s["id"]),
             "config": {"agent": agent_config(agents[which]), "reference": agent_config(reference)}}
            for s in states for which in ("a", "b")]
    for agent in (agent_a, agent_b, reference):
        prepare_agent(agent)
    setup = WorkerSetup.create(env_id, {"a": agent_a, "b": agent_b, "reference": reference}, env_kwargs)
    records, _, _ = run_logged(executor, run_action_quality_job, setup, jobs, out, key=quality_key,
                               check=_check_resumed, description="action quality", progress=progress, unit="state",
                               required=("state", "agent", "seed", "quality"))
    results = {quality_key(record): record for record in records}
    rows = [{"state": s["id"], "a": results[(s["id"], "a")], "b": results[(s["id"], "b")]} for s in states]
    quality_a = np.array([row["a"]["quality"] for row in rows])
    quality_b = np.array([row["b"]["quality"] for row in rows])
    low, high = difference_ci(quality_a, quality_b, bootstrap=bootstrap, seed=seed)
    return {
        "env": env_id, "a": agent_a.name, "b": agent_b.name, "reference": reference.name, "rollouts": rollouts,
        "states": len(rows),
        "a_better": float(np.mean(quality_a > quality_b)), "b_better": float(np.mean(quality_b > quality_a)),
        "ties": float(np.mean(quality_a == quality_b)),
        "mean_quality_a": float(quality_a.mean()), "mean_quality_b": float(quality_b.mean()),
        "mean_difference": float((quality_b - quality_a).mean()), "difference_ci": [low, high],
        "per_state": rows,
    }
