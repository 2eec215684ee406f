"""Pass@(K,T) sweeps: n >= K attempts per task per turn budget T, one JSON line per episode.

Under ``reveal="none"`` the agent is never told its cap, so up to turn T an episode capped at T is
the same episode as one run at the full budget: the runner runs each attempt once at the full budget
and reads "solved within T" from the turn it succeeded at (``budget`` is None in those records).
This single-run shortcut saves a factor of about the number of budgets; it holds for any agent
that does not read ``info["budget"]``, which none of budgetgym's agents does. Announced caps
(``"total"``, ``"remaining"``) change what the agent sees, so they get one run per T.

Every episode's seed is derived from the sweep seed, the env, the task and the attempt, not from T
or the reveal mode: attempt i meets the same env and agent randomness under every budget (common
random numbers), which makes differences between budgets and reveal modes paired comparisons.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym

from budgetgym.core.env import text_env
from budgetgym.core.jsonl import EpisodeRecord
from budgetgym.eval.agents.base import Agent
from budgetgym.eval.episode_log import EpisodeLog, Record, episode_key, sort_key
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.executors import Job, Worker, WorkerSetup, run_jobs
from budgetgym.eval.progress import progress_bar
from budgetgym.wrappers import REVEAL_MODES, TurnBudget, cap_for, check_budget

DEFAULT_KS = (1, 2, 4, 8)
DEFAULT_BUDGETS = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class SweepResult:
    records: list[Record]  # every episode of this sweep, in canonical order
    ran: int  # episodes run by this call (the rest came from the file)
    planned: int
    path: Path | None


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from any JSON-able parts: stable across processes, platforms and Python runs."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def select_tasks(env: gym.Env[str, str], tasks: Any) -> list[str]:
    """Task ids from ``tasks``: None (all of the env's tasks), a split name or one task id, an int
    (the first n), or a list of ids."""
    selected = text_env(env).tasks
    if tasks is None:
        return list(selected.ids)
    if isinstance(tasks, str):
        return [tasks] if tasks in text_env(env).all_tasks else list(selected.select(tasks).ids)
    if isinstance(tasks, int) and not isinstance(tasks, bool):
        if tasks < 1:
            raise ValueError(f"tasks as a count must be >= 1, got {tasks}")
        return list(selected.ids[:tasks])
    ids = list(tasks)
    for task_id in ids:
        text_env(env).all_tasks.get(task_id)  # raises a KeyError that lists some valid ids
    return ids


def plan_sweep(env_id: str, agent_name: str, task_budgets: dict[str, int], attempts: int,
               budgets: Sequence[int | float], reveals: Sequence[str], seed: int, shortcut: bool = True) -> list[Job]:
    """The episodes of a sweep, in canonical order. ``task_budgets`` maps task id to its full budget."""
    jobs = []
    for task_id, full_budget in task_budgets.items():
        for reveal in reveals:
            caps: Sequence[int | float | None] = [None] if (reveal == "none" and shortcut) else budgets
            for budget in caps:
                for attempt in range(attempts):
                    jobs.append({
                        "env": env_id, "agent": agent_name, "task": task_id, "reveal": reveal, "budget": budget,
                        "attempt": attempt, "seed": derive_seed(seed, env_id, task_id, attempt),
                        "max_turns": full_budget,
                        "cap": full_budget if budget is None else cap_for(budget, full_budget),
                    })
    jobs.sort(key=sort_key)
    return jobs


def run_sweep_episode(worker: Worker, job: Job) -> EpisodeRecord:
    """One sweep episode: the job's task under its cap and reveal mode (or the full budget)."""
    agent = worker.agents["agent"]
    env = worker.env
    if job["budget"] is not None:
        # A fresh wrapper around the worker's one env: wrapping is cheap, building an env is not.
        env = TurnBudget(env, job["budget"], reveal=job["reveal"])
    result = play_episode(env, agent, seed=job["seed"], options={"task_id": job["task"]})
    return {**job, "turns": result.turns, "success": result.success, "reward": result.reward,
            "actions": result.actions}


def run_sweep(
    env_id: str,
    agent: Agent,
    tasks: Any = None,
    k: int | Sequence[int] = DEFAULT_KS,
    budgets: Sequence[int | float] = DEFAULT_BUDGETS,
    reveal: str | Sequence[str] = "none",
    seed: int = 0,
    executor: Any = "serial",
    out: str | Path | None = None,
    *,
    n: int | None = None,
    shortcut: bool = True,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
) -> SweepResult:
    """Run a Pass@(K,T) sweep of ``agent`` on ``env_id``.

    Args:
        tasks: None (all tasks), a split, an int (the first n tasks) or a list of task ids.
        k: the K of the grid; each task gets ``n`` attempts per budget (default ``max(k)``).
        budgets: the T of the grid: ints (turns) or floats in (0, 1] (shares of each task's budget).
        reveal: one mode or several of ``"none"``, ``"total"``, ``"remaining"``.
        executor: ``"serial"``, ``"threads"``, ``"processes"``, ``"ray"``, or an executor object.
        out: the JSON-lines file; episodes already in it are kept and not run again (resume).
        shortcut: under ``reveal="none"``, one full-budget run serves every T (see the module doc).
        env_kwargs: passed to ``gym.make`` (e.g. ``split``).

    Returns the sweep's records; with ``out`` the file holds them in canonical order.
    """
    ks = sorted({int(v) for v in _as_tuple(k)})
    if not ks or ks[0] < 1:
        raise ValueError(f"every K must be >= 1, got {k!r}")
    attempts = n if n is not None else ks[-1]
    if attempts < ks[-1]:
        raise ValueError(f"n={attempts} attempts per task cannot estimate pass@{ks[-1]}: n must be >= max(K)")
    budgets = tuple(_as_tuple(budgets))
    if not budgets:
        raise ValueError("budgets must not be empty")
    for budget in budgets:
        check_budget(budget)
    if len({float(b) for b in budgets}) != len(budgets):
        # Records, files and reports tell T apart by value: 1 (one turn) and 1.0 (the full budget)
        # would be the same key.
        raise ValueError(f"budgets must be distinct numbers, got {budgets!r} (1 is one turn, 1.0 the full budget: "
                         "use one of them)")
    reveals = tuple(dict.fromkeys(_as_tuple(reveal)))
    for mode in reveals:
        if mode not in REVEAL_MODES:
            raise ValueError(f"reveal must be among {REVEAL_MODES}, got {mode!r}")

    probe_env = gym.make(env_id, **(env_kwargs or {}))
    try:
        task_ids = select_tasks(probe_env, tasks)
        task_budgets = {t: text_env(probe_env).all_tasks.get(t).max_turns for t in task_ids}
    finally:
        probe_env.close()
    jobs = plan_sweep(env_id, agent.name, task_budgets, attempts, budgets, reveals, seed, shortcut)

    log = EpisodeLog(out) if out is not None else None
    done = log.open() if log is not None else {}
    try:
        todo = [job for job in jobs if not _already_done(job, done)]
        setup = WorkerSetup.create(env_id, {"agent": agent}, env_kwargs)
        fresh: list[Record] = []
        with progress_bar(len(todo), f"{env_id} {agent.name}", enabled=progress and bool(todo)) as advance:
            for record in run_jobs(executor, run_sweep_episode, setup, todo):
                if log is not None:
                    log.append(record)
                fresh.append(record)
                advance(1)
    finally:
        if log is not None:
            log.close()
    if log is not None:
        log.finalize()
    planned = {episode_key(job) for job in jobs}
    records = sorted([r for r in done.values() if episode_key(r) in planned] + fresh, key=sort_key)
    return SweepResult(records, len(fresh), len(jobs), Path(out) if out is not None else None)


def _already_done(job: Job, done: dict[tuple[Any, ...], Record]) -> bool:
    record = done.get(episode_key(job))
    if record is None:
        return False
    if record.get("agent") != job["agent"] or record.get("seed") != job["seed"]:
        raise ValueError(
            f"the episode file already holds {episode_key(job)} from another sweep (agent "
            f"{record.get('agent')!r}, seed {record.get('seed')!r}); resume only with the same agent and seed, "
            "or write to a new file")
    return True
