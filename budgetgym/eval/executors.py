"""Executors run independent jobs (episodes, probe rollouts) serially, in threads, in local
processes, or on Ray. Threads suit agents that wait on a model server (the GIL is released while a
request is in flight); processes and Ray suit CPU-bound envs and scripted agents.

A job is a small JSON-able dict; ``work(worker, job)`` turns it into a JSON-able record. Each worker
builds its env from a :class:`WorkerSetup` (the resolved ``EnvSpec``, so ids registered only in the
parent, such as test envs, work too) and reuses it for every job. Results arrive in completion
order, in batches (``map_chunks``); callers that need an order sort them. Because every job carries
its own seed, the records do not depend on the executor, the number of workers or the order.

Processes and Ray get their jobs in chunks sized by time (:class:`Chunker`: about ``CHUNK_SECONDS``
of work each, at the pace measured so far in the map), so the cost of a round trip is a small share
of a chunk whether an episode takes a millisecond or a minute, and the parent, which plans, writes
the file and receives records, stays a small share of the work (benchmarks/bench_eval.py measures
it).

Executors keep their workers and envs from one ``map`` to the next, so the cells of a sweep (one
``run_sweep`` per env, agent or reveal mode) pay for starting processes and making envs once: a
process pool lives as long as its executor (``close()``, a ``with`` block, or garbage collection
ends it), and every worker keeps the envs it made, by what they are made from (spec and
keyword arguments), for later cells. Executors named by a string (``run_jobs("processes", ...)``)
are made once per process and kept likewise.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import math
import os
import pickle
import sys
import threading
import time
import uuid
import warnings
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from concurrent import futures
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, Callable, Iterable, Iterator, Sequence

import gymnasium as gym

from budgetgym.core.env import TextEnv, check_backend
from budgetgym.core.extras import require
from budgetgym.core.jsonl import Record
from budgetgym.core.limits import is_watchdog
from budgetgym.eval.agents.base import Agent

EXECUTORS = ("serial", "threads", "processes", "ray")

Job = dict[str, Any]


class ExecutorError(RuntimeError):
    """An executor could not start (a Ray cluster that does not come up, ...)."""


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

    @property
    def env_key(self) -> str:
        """What the env is made from, as a key: setups with equal keys can share a worker's env."""
        try:
            blob = pickle.dumps((self.env_spec, sorted(self.env_kwargs.items())), protocol=4)
        except Exception:  # an unpicklable argument: this setup's env is its own
            return self.token
        return hashlib.sha256(blob).hexdigest()


#: Envs a worker keeps for later cells (each is closed when it drops out): enough for the cells of
#: a sweep that come back to an env (agents or reveal modes in turn), few enough that envs holding
#: a browser or a container do not pile up.
MAX_KEPT_ENVS = 4


class EnvCache:
    """The envs of one worker (a process, a thread, a serial executor), by ``WorkerSetup.env_key``,
    the least recently used closed past ``MAX_KEPT_ENVS``. Not shared between threads."""

    def __init__(self) -> None:
        self._envs: OrderedDict[str, gym.Env[str, str]] = OrderedDict()

    def get(self, setup: WorkerSetup) -> gym.Env[str, str]:
        key = setup.env_key
        env = self._envs.pop(key, None)
        if env is None:
            env = gym.make(setup.env_spec, **setup.env_kwargs)
        self._envs[key] = env
        while len(self._envs) > MAX_KEPT_ENVS:
            self._envs.popitem(last=False)[1].close()
        return env

    def close(self) -> None:
        while self._envs:
            self._envs.popitem()[1].close()


class Worker:
    """The per-worker state of one map: the env (built on first use, or kept from an earlier cell
    through ``envs``) and the agents."""

    def __init__(self, setup: WorkerSetup, envs: EnvCache | None = None) -> None:
        self.setup = setup
        self.agents = setup.agents
        self._envs = envs
        self._env: gym.Env[str, str] | None = None

    @property
    def env(self) -> gym.Env[str, str]:
        if self._env is None:
            self._env = (self._envs.get(self.setup) if self._envs is not None
                         else gym.make(self.setup.env_spec, **self.setup.env_kwargs))
        return self._env


Work = Callable[[Worker, Job], Record]


def run_chunk(worker: Worker, work: Work, chunk: Sequence[Job]) -> list[Record]:
    return [work(worker, job) for job in chunk]


def chunked(jobs: Sequence[Job], workers: int) -> list[Sequence[Job]]:
    """Fixed chunks for threads (a chunk costs a thread next to nothing): small enough to balance
    the load and to lose little on a kill."""
    size = max(1, min(16, math.ceil(len(jobs) / (workers * 4))))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


#: The work a chunk of jobs should hold, in seconds, for processes and Ray: long enough that a
#: chunk's round trip (pickling, a pipe or Ray's scheduler, waking the parent: about a millisecond
#: of the parent's time) is a small share of it, short enough that records reach the file (and the
#: progress bar) several times a second and the last chunks of a map end together.
CHUNK_SECONDS = 0.2


class Chunker:
    """Hands out a map's jobs, in order, in chunks sized by time: each holds about
    ``CHUNK_SECONDS`` of work at the seconds per job measured so far (one job while nothing is
    known), and never more than ``1 / (2 * workers)`` of what is left (guided scheduling: chunks
    shrink towards the end, so the workers finish a map together). Millisecond episodes go out by
    the hundred, a minute-long episode alone, and neither needs a setting."""

    def __init__(self, jobs: Sequence[Job], workers: int, seconds_per_job: float | None = None,
                 target: float = CHUNK_SECONDS) -> None:
        self.jobs, self.workers, self.target = jobs, max(1, workers), target
        self.seconds_per_job = seconds_per_job
        self._next = 0
        self._measured = (0.0, 0)  # seconds and jobs of the chunks done in this map

    def __bool__(self) -> bool:
        return self._next < len(self.jobs)

    def next(self) -> Sequence[Job]:
        """The next chunk (empty when every job is handed out)."""
        left = len(self.jobs) - self._next
        size = 1 if not self.seconds_per_job else max(1, int(self.target / self.seconds_per_job))
        size = min(size, max(1, math.ceil(left / (2 * self.workers))))
        chunk = self.jobs[self._next:self._next + size]
        self._next += len(chunk)
        return chunk

    def done(self, jobs: int, seconds: float) -> None:
        """A chunk of ``jobs`` took ``seconds`` in its worker: the estimate follows this map's mean."""
        total, count = self._measured
        self._measured = (total + seconds, count + jobs)
        if count + jobs:
            self.seconds_per_job = (total + seconds) / (count + jobs)


class Executor(ABC):
    """What every executor offers: ``map_chunks`` yields the records of the jobs in the batches
    they arrive in (one record at a time serially, a chunk's records together from a pool), so a
    caller that saves them can save each batch in one write; ``map`` yields them one by one."""

    name = "executor"

    @abstractmethod
    def map_chunks(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[list[Record]]:
        """The records of ``jobs``, run by ``work`` on workers made from ``setup``, batch by batch."""

    def map(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[Record]:
        for records in self.map_chunks(work, setup, jobs):
            yield from records

    def close(self) -> None:
        """End the workers (and the envs they keep)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SerialExecutor(Executor):
    name = "serial"

    def __init__(self) -> None:
        self._envs = EnvCache()

    def map_chunks(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[list[Record]]:
        worker = Worker(setup, self._envs)
        for job in jobs:
            yield [work(worker, job)]

    def close(self) -> None:
        self._envs.close()


class ThreadExecutor(Executor):
    """A pool of threads, each with its own copy of the env and the agents (neither is thread-safe).
    The threads, and the envs each made, are kept for the next map."""

    name = "threads"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or 8
        self._pool: futures.ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._caches: list[EnvCache] = []
        self._lock = threading.Lock()

    def _thread_envs(self) -> EnvCache:
        envs = getattr(self._local, "envs", None)
        if envs is None:
            envs = self._local.envs = EnvCache()
            with self._lock:
                self._caches.append(envs)
        return envs

    def map_chunks(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[list[Record]]:
        if not jobs:
            return
        if self._pool is None:
            self._pool = futures.ThreadPoolExecutor(self.workers)
        local = threading.local()  # this map's workers (its agents), one per thread
        blueprint = pickle.dumps(setup)  # each thread unpickles its own agents, as a process would

        def run(chunk: Sequence[Job]) -> list[Record]:
            if not hasattr(local, "worker"):
                local.worker = Worker(pickle.loads(blueprint), self._thread_envs())
            return run_chunk(local.worker, work, chunk)

        pending = [self._pool.submit(run, chunk) for chunk in chunked(jobs, self.workers)]
        try:
            for done in futures.as_completed(pending):
                yield done.result()
        finally:
            for future in pending:
                future.cancel()
            futures.wait(pending)  # no thread still plays this map's jobs on a kept env

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with self._lock:
            caches, self._caches = self._caches, []
        for envs in caches:
            envs.close()


# ------------------------------------------------------------------ local processes and Ray workers

# In a worker process (a pool's or Ray's): the envs it made, kept across maps, and the workers of
# the latest setups (their agents, unpickled once per setup and process).
_WORKER_ENVS: EnvCache | None = None
_WORKERS: OrderedDict[str, Worker] = OrderedDict()
_KEPT_WORKERS = 4


def _worker_for(token: str, blob: bytes) -> Worker:
    """This process's worker for a setup (``blob``, pickled once by the parent), unpickled on the
    first chunk of that setup only."""
    global _WORKER_ENVS
    worker = _WORKERS.get(token)
    if worker is None:
        if _WORKER_ENVS is None:
            _WORKER_ENVS = EnvCache()
        worker = _WORKERS[token] = Worker(pickle.loads(blob), _WORKER_ENVS)
        while len(_WORKERS) > _KEPT_WORKERS:
            _WORKERS.popitem(last=False)
    return worker


def _init_process(parent: int) -> None:
    threading.Thread(target=_end_with_parent, args=(parent,), daemon=True, name="end-with-parent").start()


def _end_with_parent(parent: int, interval: float = 0.2) -> None:
    """A worker's watchdog: when the process that started it is gone (killed with SIGKILL, which
    runs no clean-up), the worker is re-parented and ends itself instead of living on as an orphan."""
    while True:
        if os.getppid() != parent:
            os._exit(1)
        time.sleep(interval)


def _process_chunk(token: str, blob: bytes, work: Work, chunk: Sequence[Job]) -> tuple[float, list[Record]]:
    """Run a chunk in a worker process; return the seconds it took (for the :class:`Chunker`) and
    its records."""
    started = time.perf_counter()
    records = run_chunk(_worker_for(token, blob), work, chunk)
    return time.perf_counter() - started, records


def _run_chunks(chunker: Chunker, submit: Callable[[Sequence[Job]], Any],
                wait: Callable[[list[Any]], tuple[Any, tuple[float, list[Record]]]],
                cancel: Callable[[Any], Any]) -> Iterator[list[Record]]:
    """Feed a map's jobs to the workers in ``chunker``'s chunks, two in flight per worker (one
    running, one queued behind it), and yield each chunk's records as it finishes. ``submit(chunk)``
    starts a chunk and returns a handle; ``wait(handles)`` returns a finished one and its result
    (seconds, records); ``cancel(handle)`` drops one not needed any more (the consumer stopped)."""
    pending: list[Any] = []
    try:
        while chunker and len(pending) < 2 * chunker.workers:
            pending.append(submit(chunker.next()))
        while pending:
            handle, (seconds, records) = wait(pending)
            pending.remove(handle)
            chunker.done(len(records), seconds)
            while chunker and len(pending) < 2 * chunker.workers:
                pending.append(submit(chunker.next()))
            yield records
    finally:
        for handle in pending:
            cancel(handle)


class ProcessExecutor(Executor):
    """A pool of local processes, started on the first map (or by ``start()``) and kept until
    ``close()``. A map hands its jobs out in chunks of about ``CHUNK_SECONDS`` of work (see
    :class:`Chunker`), two in flight per worker; a chunk carries its setup pickled once per map (a
    few hundred bytes), which a worker unpickles once and keeps, with its envs, for later maps;
    records come back with their file line encoded in the worker.

    How workers start (``start_method``): by default they are forked where that is safe (Linux, and
    no other Python thread in this process when the pool starts but the per-call limits' watchdog,
    which a child forgets and restarts), which takes milliseconds and
    inherits what this process has imported; else spawned (a fresh interpreter that imports
    budgetgym again: about a second each). A fork of a process with threads (a progress bar, Ray,
    an HTTP client's) can deadlock on a lock one of them held, so sweeps start the pool before their
    progress bar. Each worker ends itself when the process that started it dies, however it dies (a
    watchdog on its parent's pid), so a killed sweep leaves no orphan."""

    name = "processes"

    def __init__(self, workers: int | None = None, start_method: str | None = None) -> None:
        if start_method not in (None, "fork", "spawn", "forkserver"):
            raise ValueError(f"start_method must be fork, spawn or forkserver, got {start_method!r}")
        self.workers = workers or _cpu_count()
        self.start_method = start_method
        self._pool: futures.ProcessPoolExecutor | None = None
        self._finalizer: Any = None

    def start(self) -> futures.ProcessPoolExecutor:
        """Start the worker processes now (else on the first map)."""
        if self._pool is None:
            method = self.start_method or ("fork" if _fork_is_safe() else "spawn")
            pool = futures.ProcessPoolExecutor(self.workers, mp_context=get_context(method),
                                               initializer=_init_process, initargs=(os.getpid(),))
            self._pool = pool
            self._finalizer = weakref.finalize(self, _shutdown_pool, pool)
            if method == "fork":
                # Forked pools start every worker on the first task: fork them now, while this
                # process has no other thread. Python 3.12+ warns about any fork once numpy's BLAS
                # has started its (fork-safe, native) threads: that warning is not ours to show.
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=r".*multi-threaded.*fork", category=DeprecationWarning)
                    pool.submit(_empty_task).result()
        return self._pool

    def map_chunks(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[list[Record]]:
        if not jobs:
            return
        pool = self.start()
        blob = pickle.dumps(setup, pickle.HIGHEST_PROTOCOL)  # once per map; a worker unpickles it once

        def wait(pending: list[futures.Future]) -> tuple[futures.Future, Any]:
            done = next(iter(futures.wait(pending, return_when=futures.FIRST_COMPLETED).done))
            return done, done.result()

        try:
            yield from _run_chunks(Chunker(jobs, self.workers),
                                   lambda chunk: pool.submit(_process_chunk, setup.token, blob, work, chunk),
                                   wait, lambda future: future.cancel())
        except futures.process.BrokenProcessPool:
            self.close()  # a worker died: the next map starts a fresh pool
            raise

    def close(self) -> None:
        """End the worker processes (and the envs they keep)."""
        if self._finalizer is not None:
            self._finalizer()
        self._pool = self._finalizer = None


def _fork_is_safe() -> bool:
    """Whether worker processes may be forked: on Linux, from a process running no other Python
    thread than the per-call limits' watchdog (which a child forgets and restarts on demand)."""
    current = threading.current_thread()
    return sys.platform == "linux" and all(thread is current or is_watchdog(thread) for thread in threading.enumerate())


def _empty_task() -> None:
    """A task that does nothing (it makes a pool start its workers)."""


def _shutdown_pool(pool: futures.ProcessPoolExecutor) -> None:
    pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor(Executor):
    """Ray tasks on the cluster ``ray.init`` connects to (``address``), or on a local one it starts.
    Code the workers import (an env's entry point) must be importable there. Ray's worker processes
    live as long as the cluster; each keeps the envs it made for later maps, as a local process does.
    Jobs go out in the same time-sized chunks as :class:`ProcessExecutor`'s.

    What it costs (benchmarks/bench_eval.py, 2 cores): a local cluster starts in 6.5-9 s (a process
    pool forks in 0.01-0.09 s); an empty task's round trip is 2-5 ms (a pool's 0.15-0.3 ms), which
    chunks of about 0.2 s of work make a small share; its idle daemons keep using some CPU. On one
    machine it runs a sweep about as fast as a process pool (0.8-1.04x in two runs), so it pays
    only when a sweep needs more cores than one machine has (a cluster, ``address``) or Ray's
    placement of envs on nodes with what they need, and runs long enough to repay the start-up
    (``ray.pays_over_serial_after_episodes``
    in the benchmark's JSON)."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, *, verbose: bool = False) -> None:
        self.workers = workers
        self.address = address
        self._remote: Any = None
        self.verbose = verbose

    def start(self) -> Any:
        """Connect to the cluster, or start a local one; return the ``ray`` module."""
        ray = require("ray", "the Ray executor")
        if not ray.is_initialized():
            # Ray's own INFO lines ("Started a local Ray instance", ...) only when asked for.
            options: dict[str, Any] = {"address": self.address, "log_to_driver": self.verbose,
                                       "logging_level": logging.INFO if self.verbose else logging.ERROR}
            if self.address is None:
                # A local cluster of our own: its workers get this process's import path, so an
                # env importable here (a project's own, a test's) is importable there.
                options.update(num_cpus=self.workers or _cpu_count(), include_dashboard=False,
                               runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
            try:
                ray.init(**options)
            except Exception as err:  # Ray raises bare Exceptions (a node that timed out during startup, ...)
                where = self.address or "a local cluster"
                raise ExecutorError(f"Ray could not start or reach {where}: {' '.join(str(err).split())[:300]}") \
                    from err
        return ray

    def map_chunks(self, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterator[list[Record]]:
        ray = self.start()
        if not jobs:
            return
        if self._remote is None:
            self._remote = ray.remote(_process_chunk)  # registered with the cluster once, not per map
        blob = ray.put(pickle.dumps(setup, pickle.HIGHEST_PROTOCOL))  # in the object store once per map
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

        def wait(pending: list[Any]) -> tuple[Any, Any]:
            done, _ = ray.wait(pending, num_returns=1)
            return done[0], ray.get(done[0])

        yield from _run_chunks(Chunker(jobs, workers),
                               lambda chunk: self._remote.remote(setup.token, blob, work, chunk), wait, ray.cancel)

    def close(self) -> None:
        """Nothing to end here: the cluster belongs to ``ray.init``'s caller (``ray.shutdown()``)."""


def make_executor(name: str, workers: int | None = None, address: str | None = None, *, verbose: bool = False) -> Any:
    """An executor by name; ``verbose`` lets Ray print its own log lines (silenced otherwise)."""
    if name == "serial":
        return SerialExecutor()
    if name == "threads":
        return ThreadExecutor(workers)
    if name == "processes":
        return ProcessExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, address, verbose=verbose)
    raise ValueError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")


def _cpu_count() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


_NAMED: dict[str, Any] = {}


@atexit.register
def _close_named() -> None:
    for executor in _NAMED.values():
        executor.close()
    _NAMED.clear()


#: The setups (by ``env_key``) whose backend was checked in this process.
_CHECKED: set[str] = set()


def check_setup(setup: WorkerSetup) -> None:
    """Refuse a broken backend before jobs fan out: the env is made here once per setup and
    process, and its ``check_backend`` raises ``BackendUnavailable`` (one line: cause and fix)
    where the backend cannot run, so no worker plays an episode that could only score 0."""
    key = setup.env_key
    if key in _CHECKED:
        return
    env = gym.make(setup.env_spec, **setup.env_kwargs)
    try:
        if isinstance(env.unwrapped, TextEnv):  # other Gymnasium envs have no backend hook
            check_backend(env)
    finally:
        env.close()
    _CHECKED.add(key)


def run_jobs(executor: Any, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterable[Record]:
    """Run ``jobs`` with ``executor`` (an executor object or its name; a named one is made once per
    process and kept, with its workers and envs, for the next call), the backend checked first."""
    if jobs:
        check_setup(setup)
    return _executor(executor).map(work, setup, jobs)


def run_job_batches(executor: Any, work: Work, setup: WorkerSetup, jobs: Sequence[Job]) -> Iterable[list[Record]]:
    """As :func:`run_jobs`, the records in the batches they arrive in (an executor object of
    another kind, with ``map`` alone, gives batches of one)."""
    if jobs:
        check_setup(setup)
    executor = _executor(executor)
    if hasattr(executor, "map_chunks"):
        return executor.map_chunks(work, setup, jobs)
    return ([record] for record in executor.map(work, setup, jobs))


def start_executor(executor: Any) -> Any:
    """Start ``executor``'s workers now, where it has any to start (a name is resolved as by
    :func:`run_jobs`); return the executor. Sweeps call this before they start a progress bar,
    whose thread would keep a process pool from forking its workers."""
    executor = _executor(executor)
    start = getattr(executor, "start", None)
    if start is not None:
        start()
    return executor


def _executor(executor: Any) -> Any:
    if isinstance(executor, str):
        if executor not in _NAMED:
            _NAMED[executor] = make_executor(executor)
        executor = _NAMED[executor]
    return executor
