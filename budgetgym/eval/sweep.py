"""Pass@(K,T) sweeps: n >= K attempts per task per turn budget T, one JSON line per episode.

Under ``reveal="none"`` the agent is never told its cap, so up to turn T an episode capped at T is
the same episode as one run at the full budget: the runner runs each attempt once at the full budget
and reads "solved within T" from the turn it succeeded at (``budget`` is None in those records).
This single-run shortcut saves a factor of about the number of budgets; it holds for any agent
that does not read ``info["budget"]``, which none of budgetgym's agents does. Announced caps
(``"total"``, ``"remaining"``) change what the agent sees, so they get one run per T.

Budgets are in one unit a sweep (``turns``, ``calls`` or ``tokens``, see
:mod:`budgetgym.core.budgets`): absolute (``8``), shares of a task's full budget (``0.5``, turns
only) or multiples of its shortest solution (``"1.5x"``: ``oracle_turns``, or for calls and tokens
the oracle's solution measured once per task when the sweep is planned, at its first attempt's seed).
The default grid is in solution lengths, so every cell is feasible: the oracle scores 1.00 in each.
Every record holds the episode's use in every unit (``turns``, ``calls``, ``tokens``; tokens of the
agent's outputs by the default regex tokenizer, so records compare across runs). The single-run
shortcut holds in every unit: an unannounced cap in calls or tokens, like one in turns, changes
nothing before it binds. By default a sweep runs the env's ``test`` split (where
it has one) and every record says which split its task is from.

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

from budgetgym.core.budgets import REVEAL_MODES, budget_grid, check_unit, count_tokens, resolve_cap
from budgetgym.core.env import text_env
from budgetgym.core.jsonl import EpisodeRecord, dumps_ascii
from budgetgym.eval.agents.base import Agent
from budgetgym.eval.agents.base import agent_config, prepare_agent, reads_budget
from budgetgym.eval.episode_log import EpisodeLog, Record, episode_key
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.executors import Job, Worker, WorkerSetup, run_job_batches, start_executor
from budgetgym.eval.progress import progress_bar
from budgetgym.wrappers import TurnBudget, solution_cost

DEFAULT_KS = (1, 2, 4, 8)
#: In units of each task's shortest solution, and the full budget: feasible in every cell.
DEFAULT_BUDGETS: tuple[int | float | str, ...] = ("1x", "1.25x", "1.5x", "2x", 1.0)
#: The default grid in calls and tokens (neither has a full budget of its own).
DEFAULT_BUDGETS_BY_UNIT: dict[str, tuple[int | float | str, ...]] = {
    "turns": DEFAULT_BUDGETS, "calls": ("1x", "1.25x", "1.5x", "2x"), "tokens": ("1x", "1.25x", "1.5x", "2x")}
#: The split a sweep runs when none is named, where the env has it.
DEFAULT_SPLIT = "test"


@dataclass(frozen=True)
class SweepResult:
    records: list[Record]  # every episode of this sweep, in canonical order
    ran: int  # episodes run by this call (the rest came from the file)
    planned: int
    path: Path | None
    duplicates_dropped: int = 0  # duplicate lines of the file that resume dropped
    splits: tuple[str, ...] = ()  # the splits of the tasks this sweep ran


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from any JSON-able parts: stable across processes, platforms and Python runs."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def select_tasks(env: gym.Env[str, str], tasks: Any) -> list[str]:
    """Task ids from ``tasks``: None (the ``test`` split where the env has one, else all of its
    tasks), ``"all"``, a split name or one task id, an int (the first n of the default; more than
    the default holds is refused, not cut), or a list of ids."""
    selected = text_env(env).tasks
    default = selected.select(DEFAULT_SPLIT) if DEFAULT_SPLIT in selected.splits else selected
    if tasks is None:
        return list(default.ids)
    if tasks == "all":
        return list(selected.ids)
    if isinstance(tasks, str):
        return [tasks] if tasks in text_env(env).all_tasks else list(selected.select(tasks).ids)
    if isinstance(tasks, int) and not isinstance(tasks, bool):
        if tasks < 1:
            raise ValueError(f"tasks as a count must be >= 1, got {tasks}")
        if tasks > len(default.ids):
            # Never fewer episodes than asked for, silently: say what there is to choose from.
            where = f"the env's {DEFAULT_SPLIT} split" if default is not selected else "the env"
            others = f"a split ({', '.join(selected.splits)}), " if selected.splits else ""
            raise ValueError(f"{tasks} tasks asked for, but {where} has {len(default.ids)}: ask for at most "
                             f"{len(default.ids)}, or name the tasks, {others}or 'all' ({len(selected.ids)} tasks)")
        return list(default.ids[:tasks])
    ids = list(tasks)
    for task_id in ids:
        text_env(env).all_tasks.get(task_id)  # raises a KeyError that lists some valid ids
    return ids


def task_facts(env: gym.Env[str, str], task_ids: Sequence[str], unit: str = "turns",
               seeds: dict[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Per task: its full budget, its shortest solution in turns (None where the env does not say),
    its split, and for calls and tokens the oracle's solution in that unit (``shortest``), played
    at ``seeds[task]``."""
    facts = {}
    for task_id in task_ids:
        task = text_env(env).all_tasks.get(task_id)
        oracle_turns = getattr(task, "oracle_turns", None)
        facts[task_id] = {"full_budget": task.max_turns, "split": task.split,
                          "oracle_turns": oracle_turns if isinstance(oracle_turns, int) else None}
        if unit != "turns":
            env.reset(seed=(seeds or {}).get(task_id, 0), options={"task_id": task_id})
            facts[task_id]["shortest"] = solution_cost(env)[unit]
    return facts


def plan_sweep(env_id: str, agent_name: str, tasks: dict[str, dict[str, Any]], attempts: int,
               budgets: Sequence[int | float | str], reveals: Sequence[str], seed: int,
               shortcut: bool = True, unit: str = "turns") -> list[Job]:
    """The episodes of a sweep, in canonical order. ``tasks`` maps task id to :func:`task_facts`."""
    jobs = []
    for task_id, facts in tasks.items():
        full_budget, oracle_turns = facts["full_budget"], facts["oracle_turns"]
        shortest = oracle_turns if unit == "turns" else facts["shortest"]
        for reveal in reveals:
            caps: Sequence[int | float | None] = [None] if (reveal == "none" and shortcut) else budgets
            for budget in caps:
                for attempt in range(attempts):
                    job = {
                        "env": env_id, "agent": agent_name, "task": task_id, "reveal": reveal, "unit": unit,
                        "budget": budget, "attempt": attempt, "seed": derive_seed(seed, env_id, task_id, attempt),
                        "full_budget": full_budget, "oracle_turns": oracle_turns, "split": facts["split"],
                        "cap": resolve_cap(budget, full_budget, shortest, unit) if budget is not None else
                        full_budget if unit == "turns" else None,
                    }
                    if unit != "turns":
                        job["shortest"] = shortest
                    jobs.append(job)
    jobs.sort(key=episode_key)
    return jobs


def run_sweep_episode(worker: Worker, job: Job) -> EpisodeRecord:
    """One sweep episode: the job's task under its cap and reveal mode (or the full budget)."""
    agent = worker.agents["agent"]
    env = worker.env
    if job["budget"] is not None:
        # A fresh wrapper around the worker's one env: wrapping is cheap, building an env is not. The
        # cap planned for the task (resolved once, so every attempt meets the same one).
        env = TurnBudget(env, job["cap"], reveal=job["reveal"], unit=job.get("unit", "turns"))
    result = play_episode(env, agent, seed=job["seed"], options={"task_id": job["task"]})
    return {**job, "agent_config": agent_config(agent), "reads_budget": reads_budget(agent), "turns": result.turns,
            "calls": result.calls, "tokens": sum(count_tokens(action) for action in result.actions),
            "success": result.success, "truncated": result.truncated, "reward": result.reward,
            "actions": result.actions, "steps": result.steps}


def run_sweep(
    env_id: str,
    agent: Agent,
    tasks: Any = None,
    k: int | Sequence[int] = DEFAULT_KS,
    budgets: Sequence[int | float | str] | None = None,
    reveal: str | Sequence[str] = "none",
    seed: int = 0,
    executor: Any = "serial",
    out: str | Path | None = None,
    *,
    n: int | None = None,
    shortcut: bool = True,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
    unit: str = "turns",
) -> SweepResult:
    """Run a Pass@(K,T) sweep of ``agent`` on ``env_id``.

    Args:
        tasks: None (the ``test`` split where the env has one, else all), ``"all"``, a split, an int
            (the first n tasks of the default) or a list of task ids.
        k: the K of the grid; each task gets ``n`` attempts per budget (default ``max(k)``).
        budgets: the T of the grid, in ``unit``: ints, floats in (0, 1] (shares of each task's full
            budget, turns only) or ``"1.5x"`` (multiples of each task's shortest solution), or the
            same as text; None: ``DEFAULT_BUDGETS_BY_UNIT[unit]``.
        reveal: one mode or several of ``"none"``, ``"total"``, ``"remaining"``.
        executor: ``"serial"``, ``"threads"``, ``"processes"``, ``"ray"``, or an executor object.
        out: the JSON-lines file; episodes already in it are kept and not run again (resume, which
            refuses a file written by another agent configuration). The file is locked while the
            sweep runs (see :mod:`budgetgym.eval.episode_log`).
        shortcut: under ``reveal="none"``, one full-budget run serves every T (see the module doc).
        env_kwargs: passed to ``gym.make`` (e.g. ``split``).
        unit: ``"turns"``, ``"calls"`` or ``"tokens"``: what the budgets count.

    Returns the sweep's records; with ``out`` the file holds them in canonical order.
    """
    ks = sorted({int(v) for v in _as_tuple(k)})
    if not ks or ks[0] < 1:
        raise ValueError(f"every K must be >= 1, got {k!r}")
    attempts = n if n is not None else ks[-1]
    if attempts < ks[-1]:
        raise ValueError(f"n={attempts} attempts per task cannot estimate pass@{ks[-1]}: n must be >= max(K)")
    check_unit(unit)
    budgets = budget_grid(_as_tuple(DEFAULT_BUDGETS_BY_UNIT[unit] if budgets is None else budgets), unit)
    reveals = tuple(dict.fromkeys(_as_tuple(reveal)))
    for mode in reveals:
        if mode not in REVEAL_MODES:
            raise ValueError(f"reveal must be among {REVEAL_MODES}, got {mode!r}")

    probe_env = gym.make(env_id, **(env_kwargs or {}))
    try:
        task_ids = select_tasks(probe_env, tasks)
        facts = task_facts(probe_env, task_ids, unit, {t: derive_seed(seed, env_id, t, 0) for t in task_ids})
    finally:
        probe_env.close()
    unknown = sorted(t for t, f in facts.items() if f["oracle_turns"] is None)
    multiples = [b for b in budgets if isinstance(b, str)]
    if multiples and unknown:
        raise ValueError(f"budgets {', '.join(multiples)} are in solution lengths, but {len(unknown)} tasks of {env_id} "
                         f"record no oracle_turns (e.g. {unknown[0]}): give --budgets as turns or shares (0.5)")
    jobs = plan_sweep(env_id, agent.name, facts, attempts, budgets, reveals, seed, shortcut, unit)
    config = agent_config(agent)
    prepare_agent(agent)
    setup = WorkerSetup.create(env_id, {"agent": agent}, env_kwargs)
    records, ran, dropped = run_logged(
        executor, run_sweep_episode, setup, jobs, out, key=episode_key,
        check=lambda job, record: _already_done(job, config, record),
        description=f"{env_id.rsplit('/', 1)[-1]} {agent.name}", progress=progress)
    return SweepResult(records, ran, len(jobs), Path(out) if out is not None else None, dropped,
                       tuple(sorted({f["split"] for f in facts.values()})))


def run_logged(executor: Any, work: Any, setup: WorkerSetup, jobs: Sequence[Job], out: str | Path | None, *,
               key: Any, check: Any, description: str, progress: bool, unit: str = "ep",
               required: Sequence[str] | None = None) -> tuple[list[Record], int, int]:
    """Run the ``jobs`` whose records are not in ``out`` yet (``check(job, record)`` vets a record
    found there, raising when it is from another run), appending each record as it arrives.

    Returns the records of every job (in ``key`` order), how many ran now, and how many duplicate
    lines the file held (dropped)."""
    log = EpisodeLog(out, key, *(() if required is None else (required,))) if out is not None else None
    done = log.open() if log is not None else {}
    fresh: list[Record] = []
    try:
        kept, todo = [], []  # the jobs' records found in the file, and the jobs to run
        for job in jobs:
            found = done.get(key(job))
            if found is not None and check(job, found):
                kept.append(found)
            else:
                todo.append(job)
        if todo:
            executor = start_executor(executor)  # its workers before the progress bar's thread
        with progress_bar(len(todo), description, enabled=progress and bool(todo), unit=unit) as advance:
            if log is None:
                for batch in run_job_batches(executor, work, setup, todo):
                    fresh.extend(batch)
                    advance(len(batch))
            else:
                for pairs in run_job_batches(executor, WithLine(work), setup, todo):
                    batch = [record for record, _ in pairs]
                    log.extend(batch, [line for _, line in pairs])
                    fresh.extend(batch)
                    advance(len(batch))
    except BaseException:
        if log is not None:
            log.close()
        raise
    if log is not None:
        log.finalize()
    records = sorted(kept + fresh, key=key)
    return records, len(fresh), log.duplicates_dropped if log is not None else 0


class WithLine:
    """A work function whose records come with their line of the episodes file, encoded where the
    episode ran: in a worker process, not in the parent that writes the file (picklable)."""

    def __init__(self, work: Any) -> None:
        self.work = work

    def __call__(self, worker: Worker, job: Job) -> tuple[Record, str]:
        record = self.work(worker, job)
        return record, dumps_ascii(record)


def config_difference(old: Any, new: Any) -> str:
    """The fields in which two agent configurations differ, as ``name: old -> new``."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return f"{old!r} -> {new!r}"
    names = sorted(set(old) | set(new))
    return ", ".join(f"{name}: {old.get(name)!r} -> {new.get(name)!r}" for name in names
                     if old.get(name) != new.get(name))


def _already_done(job: Job, config: dict[str, Any], record: Record) -> bool:
    """Whether ``record`` (from the file) is ``job`` done by this agent; raises when it is another run's."""
    if record.get("unit", "turns") != job["unit"]:
        raise ValueError(f"the episode file holds a sweep with budgets in {record.get('unit', 'turns')}, this one is "
                         f"in {job['unit']}: write to another --out")
    if record.get("agent") != job["agent"] or record.get("seed") != job["seed"]:
        raise ValueError(
            f"the episode file already holds {job['task']} from another sweep (agent "
            f"{record.get('agent')!r}, seed {record.get('seed')!r}); resume only with the same agent and seed, "
            "or write to another --out")
    recorded = record.get("agent_config")
    if recorded is not None and recorded != config:
        raise ValueError(f"the episode file was written by another configuration of {job['agent']} "
                         f"({config_difference(recorded, config)}); resume only with the same options, "
                         "or write to another --out")
    return True
