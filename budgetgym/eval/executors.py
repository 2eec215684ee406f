"""Executors run independent jobs (episodes, probe rollouts) serially, in threads, in local
processes, or on Ray. Threads suit agents that wait on a model server (the GIL is released while a
request is in flight); processes and Ray suit CPU-bound envs and scripted agents.

A job is a small JSON-able dict; ``work(worker, job)`` turns it into a JSON-able record. Each worker
builds its env once from a :class:`WorkerSetup` (the resolved ``EnvSpec``, so ids registered only
in the parent, such as test envs, work too) and reuses it for every job. Results arrive in
completion order; callers that need an order sort them. Because every job carries its own seed,
the records do not depend on the executor, the number of workers or the order.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
import threading
import uuid
from concurrent import futures
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, Callable, Iterable, Iterator, Sequence

import gymnasium as gym

from budgetgym.core.jsonl import Record
from budgetgym.eval._extras import require
from budgetgym.eval.agents.base import Agent

EXECUTORS = ("serial", "threads", "processes", "ray")

Job = dict[str, Any]


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker needs: the env to build and the agent(s) to run (picklable)."""

    env_spec: gym.envs.registration.EnvSpec
    env_kwargs: dict[str, Any]
    agents: dict[str, Agent]
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @classmethod
    def create(cls, env_id: str, agents: dict[str, Agent], env_kwargs: dict[str, Any] | None = None) -> "WorkerSetup":
        return cls(gym.spec(env_id), dict(env_kwargs or {}), agents)


class Worker:
    """The per-process state: one env, built on first use, and the agents."""

    def __init__(self, setup: WorkerSetup) -> None:
        self.setup = setup
        self.agents = setup.agents
        self._env: gym.Env[str, str] | None = None

    @property
    def env(self) -> gym.Env[str, str]:
        if self._env is None:
            self._env = gym.make(self.setup.env_spec, **self.setup.env_kwargs)
        return self._env


Work = Callable[[Worker, Job], Record]


def run_chunk(worker: Worker, work: Work, chunk: Sequence[Job]) -> list[Record]:
    return [work(worker, job) for job in chunk]


def chunked(jobs: Sequence[Job], workers: int) -> list[Sequence[Job]]:
    """Chunks small enough to balance the load and to lose little on a kill, large enough that
    the per-task overhead of processes and Ray does not dominate millisecond episodes."""
    size = max(1, min(16, math.ceil(len(jobs) / (workers * 4))))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


class SerialExecutor:
    name = "serial"

    def map(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[Record]:
        worker = Worker(setup)
        for job in jobs:
            yield work(worker, job)


class ThreadExecutor:
    """A pool of threads, each with its own copy of the env and the agents (neither is thread-safe)."""

    name = "threads"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or 8

    def map(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[Record]:
        if not jobs:
            return
        local = threading.local()
        blueprint = pickle.dumps(setup)  # each thread unpickles its own agents, as a process would

        def run(chunk: Sequence[Job]) -> list[Record]:
            if not hasattr(local, "worker"):
                local.worker = Worker(pickle.loads(blueprint))
            return run_chunk(local.worker, work, chunk)

        with futures.ThreadPoolExecutor(self.workers) as pool:
            pending = [pool.submit(run, chunk) for chunk in chunked(jobs, self.workers)]
            try:
                for done in futures.as_completed(pending):
                    yield from done.result()
            finally:
                for future in pending:
                    future.cancel()


# ------------------------------------------------------------------ local processes

_PROCESS_WORKER: Worker | None = None


def _init_process(setup: WorkerSetup) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = Worker(setup)


def _process_chunk(work: Work, chunk: Sequence[Job]) -> list[Record]:
    assert _PROCESS_WORKER is not None, "worker process not initialised"
    return run_chunk(_PROCESS_WORKER, work, chunk)


class ProcessExecutor:
    """A pool of local processes. They are spawned, not forked: a fork of a process with threads
    (a progress bar, Ray, an HTTP client) can deadlock."""

    name = "processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or _cpu_count()

    def map(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[Record]:
        if not jobs:
            return
        pool = futures.ProcessPoolExecutor(self.workers, mp_context=get_context("spawn"),
                                           initializer=_init_process, initargs=(setup,))
        try:
            pending = [pool.submit(_process_chunk, work, chunk) for chunk in chunked(jobs, self.workers)]
            for done in futures.as_completed(pending):
                yield from done.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------ Ray

_RAY_WORKERS: dict[str, Worker] = {}


def _ray_chunk(setup: WorkerSetup, work: Work, chunk: Sequence[Job]) -> list[Record]:
    worker = _RAY_WORKERS.get(setup.token)
    if worker is None:
        # One env per sweep per Ray worker process, kept for the sweep's later chunks.
        _RAY_WORKERS.clear()
        worker = _RAY_WORKERS[setup.token] = Worker(setup)
    return run_chunk(worker, work, chunk)


class RayExecutor:
    """Ray tasks on the cluster ``ray.init`` connects to (``address``), or on a local one it starts.
    Code the workers import (an env's entry point) must be importable there."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        self.workers = workers
        self.address = address

    def start(self) -> Any:
        """Connect to the cluster, or start a local one; return the ``ray`` module."""
        ray = require("ray", "the Ray executor")
        if not ray.is_initialized():
            options: dict[str, Any] = {"address": self.address, "log_to_driver": False}
            if self.address is None:
                # A local cluster of our own: its workers get this process's import path, so an
                # env importable here (a project's own, a test's) is importable there.
                options.update(num_cpus=self.workers or _cpu_count(), include_dashboard=False,
                               runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
            ray.init(**options)
        return ray

    def map(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[Record]:
        ray = self.start()
        if not jobs:
            return
        remote = ray.remote(_ray_chunk)
        setup_ref = ray.put(setup)
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        pending = [remote.remote(setup_ref, work, chunk) for chunk in chunked(jobs, workers)]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield from ray.get(done[0])
        finally:
            for ref in pending:
                ray.cancel(ref)


def make_executor(name: str, workers: int | None = None, address: str | None = None) -> Any:
    if name == "serial":
        return SerialExecutor()
    if name == "threads":
        return ThreadExecutor(workers)
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, address)
    raise ValueError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")


def _cpu_count() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def run_jobs(executor: Any, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterable[Record]:
    """Run ``jobs`` with ``executor`` (an executor object or its name)."""
    if isinstance(executor, str):
        executor = make_executor(executor)
    return executor.map(work, setup, jobs)
