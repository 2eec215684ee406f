"""Threads, processes and Ray give exactly the serial results: every job carries its own seed."""

import collections
import os
import subprocess
import sys
import threading

import pytest

import eval_support
from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.executors import (Chunker, ProcessExecutor, RayExecutor, SerialExecutor, ThreadExecutor,
                                      WorkerSetup, chunked)
from budgetgym.eval.probes import run_action_quality_probe, run_recovery_probe
from budgetgym.eval.sweep import run_sweep
from eval_support import TESTS_DIR, TOY_ID, DyingAgent, marker, toy_tasks, where

SWEEP = dict(tasks=toy_tasks(10), k=(1, 2, 4), budgets=(0.25, 0.5, 1.0), reveal=("none", "total"), seed=2)


@pytest.fixture(scope="module")
def serial_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("serial") / "episodes.jsonl"
    run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=path, **SWEEP)
    return path


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    # A local cluster on this machine; its workers must import the toy env from tests/ and the
    # test agents from tests/eval/.
    path = os.pathsep.join([str(TESTS_DIR), str(TESTS_DIR / "eval"), os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


def test_chunks_cover_every_job_once():
    jobs = [{"i": i} for i in range(103)]
    chunks = chunked(jobs, 2)
    assert [job for chunk in chunks for job in chunk] == jobs
    assert max(len(c) for c in chunks) <= 16


def test_chunks_follow_the_time_a_job_takes():
    jobs = [{"i": i} for i in range(1000)]
    unknown = Chunker(jobs, 2)
    assert len(unknown.next()) == 1  # nothing measured yet: one job
    unknown.done(1, 0.001)  # a millisecond a job: 0.2 s of work is 200 jobs
    assert len(unknown.next()) == 200
    unknown.done(200, 20.0)  # now about 0.1 s a job
    assert len(unknown.next()) == 2
    slow = Chunker(jobs, 2, seconds_per_job=60.0)  # a minute a job: one at a time
    assert len(slow.next()) == 1
    fast = Chunker(jobs, 2, seconds_per_job=1e-6)  # never more than a quarter of what is left
    sizes = []
    while fast:
        sizes.append(len(fast.next()))
    assert sizes[:3] == [250, 188, 141] and sizes[-1] == 1 and sum(sizes) == 1000
    assert sizes == sorted(sizes, reverse=True)  # shrinking towards the end: the workers end together


def test_chunks_cover_every_job_once_in_order():
    jobs = [{"i": i} for i in range(537)]
    chunker, seen = Chunker(jobs, 3), []
    while chunker:
        chunk = chunker.next()
        chunker.done(len(chunk), 0.0005 * len(chunk))
        seen.extend(chunk)
    assert seen == jobs and len(chunker.next()) == 0


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_processes_equal_serial(serial_file, tmp_path, start_method):
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=out, executor=ProcessExecutor(2, start_method), **SWEEP)
    assert result.ran == result.planned
    assert out.read_bytes() == serial_file.read_bytes()


def _markers(executor):
    with executor:
        records = list(executor.map(marker, WorkerSetup.create(TOY_ID, {}), [{"i": i} for i in range(4)]))
    assert all(r["overrun_stopped"] for r in records)  # the workers' own watchdogs stop a runaway call
    return {r["marker"] for r in records}


def test_workers_are_forked_only_from_a_process_without_other_threads(monkeypatch):
    monkeypatch.setattr(eval_support, "MARKER", "set in the parent")
    assert _markers(ProcessExecutor(2, "fork")) == {"set in the parent"}  # a fork inherits it
    assert _markers(ProcessExecutor(2, "spawn")) == {"imported"}
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert _markers(ProcessExecutor(2)) == {"imported"}  # another thread runs: spawned
    finally:
        stop.set()
        other.join()
    # No other thread but the per-call limits' watchdog (an env made a bounded call): forked, and a
    # bounded call still works in the forked workers. Checked in a fresh process, since this one
    # may run other threads left by earlier tests for as long as it lives.
    code = ("import sys, threading; sys.path[:0] = [{tests!r}, {eval!r}]; import registered, eval_support, test_executors; "
            "from budgetgym.core import Limits; from budgetgym.eval.executors import ProcessExecutor; "
            "eval_support.MARKER = 'set in the parent'; print(sorted(test_executors._markers(ProcessExecutor(2)))); "
            "Limits(seconds=5).run(len, 'x'); print(sorted(t.name for t in threading.enumerate())); "
            "print(sorted(test_executors._markers(ProcessExecutor(2))))").format(
                tests=str(TESTS_DIR), eval=str(TESTS_DIR / "eval"))
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0, fresh.stderr
    before, threads, after = fresh.stdout.strip().splitlines()[-3:]
    assert before == after == "['set in the parent']"
    assert threads == "['MainThread', 'budgetgym-limits']"


def test_an_unknown_start_method_is_refused():
    with pytest.raises(ValueError, match="start_method"):
        ProcessExecutor(2, "vfork")


def test_threads_equal_serial(serial_file, tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=out, executor=ThreadExecutor(4), **SWEEP)
    assert result.ran == result.planned
    assert out.read_bytes() == serial_file.read_bytes()


def test_ray_equals_serial(serial_file, tmp_path, ray_cluster):
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=out, executor=RayExecutor(), **SWEEP)
    assert result.ran == result.planned
    assert out.read_bytes() == serial_file.read_bytes()


def test_a_ray_worker_lost_mid_sweep_loses_and_doubles_no_episode(serial_file, tmp_path, ray_cluster):
    # Ray runs a lost task again on another worker; a job carries its seed, so the rerun gives the
    # records the lost one would have, and only finished chunks reach the file.
    flag = tmp_path / "died"
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, DyingAgent(0.4, str(flag), "toy-05"), out=out, executor=RayExecutor(), **SWEEP)
    assert flag.exists()  # a worker did die
    assert result.ran == result.planned
    assert out.read_bytes() == serial_file.read_bytes()


def test_probes_on_ray_equal_serial(ray_cluster, toy_failure_states):
    agent = NoisyOracleAgent(0.5)
    recovery = [run_recovery_probe(TOY_ID, agent, states=toy_failure_states, attempts=4, executor=executor)
                for executor in ("serial", RayExecutor())]
    assert recovery[0] == recovery[1]
    quality = [run_action_quality_probe(TOY_ID, agent, NoisyOracleAgent(0.9), agent, tasks=4, rollouts=3,
                                        executor=executor) for executor in ("serial", RayExecutor())]
    assert quality[0] == quality[1]


def _two_cells(executor):
    """Two maps, as two cells of a sweep on one env (each cell has its own setup and agents)."""
    jobs = [{"i": i} for i in range(40)]
    return [sorted(executor.map(where, WorkerSetup.create(TOY_ID, {}), jobs), key=lambda r: r["i"])
            for _ in range(2)]


def test_process_workers_and_their_envs_are_kept_across_cells():
    with ProcessExecutor(2) as executor:
        first, second = _two_cells(executor)
        pool = executor._pool
        assert pool is not None and list(executor.map(where, WorkerSetup.create(TOY_ID, {}), [])) == []
        assert executor._pool is pool
    assert executor._pool is None  # closed with the block
    assert [r["i"] for r in first] == [r["i"] for r in second] == list(range(40))
    assert {r["pid"] for r in first} & {r["pid"] for r in second}, "the second cell ran in new processes"
    envs_by_pid = collections.defaultdict(set)
    for record in first + second:
        envs_by_pid[record["pid"]].add(record["env"])
    assert all(len(envs) == 1 for envs in envs_by_pid.values()), "a worker made its env again"


@pytest.mark.parametrize("make", [SerialExecutor, lambda: ThreadExecutor(1)])
def test_serial_and_threads_keep_their_env_across_cells(make):
    with make() as executor:
        first, second = _two_cells(executor)
    assert len({r["env"] for r in first + second}) == 1


def test_an_executor_named_by_a_string_is_kept():
    from budgetgym.eval.executors import run_jobs

    envs = {r["env"] for _ in range(2)
            for r in run_jobs("serial", where, WorkerSetup.create(TOY_ID, {}), [{"i": 0}])}
    assert len(envs) == 1


def test_setups_of_different_envs_get_different_envs():
    with SerialExecutor() as executor:
        plain = next(executor.map(where, WorkerSetup.create(TOY_ID, {}), [{"i": 0}]))
        other = next(executor.map(where, WorkerSetup.create(TOY_ID, {}, {"reward_mode": "progress"}), [{"i": 0}]))
    assert plain["env"] != other["env"]


@pytest.mark.parametrize("env_id", __import__("registered").ENV_IDS)
def test_every_id_gives_the_serial_episodes_on_four_threads(env_id, tmp_path):
    """The threads executor (the default for served models) on every id: four workers, each with
    its own env, play exactly the serial episodes (a backend shared across threads, such as
    TextWorld's parser or BFCL's executor, must take turns or keep per-env state)."""
    import registered
    from budgetgym.eval.sweep import select_tasks

    env = registered.make_or_skip(env_id)  # an adapter without its extra or data is skipped, saying why
    tasks = min(2, len(select_tasks(env, None)))
    env.close()
    sweep = dict(tasks=tasks, k=(1, 2), budgets=(1.0,), seed=5, progress=False)  # 4 jobs: one per thread
    run_sweep(env_id, NoisyOracleAgent(0.3), out=tmp_path / "serial.jsonl", **sweep)
    with ThreadExecutor(4) as threads:
        run_sweep(env_id, NoisyOracleAgent(0.3), out=tmp_path / "threads.jsonl", executor=threads, **sweep)
    assert (tmp_path / "threads.jsonl").read_bytes() == (tmp_path / "serial.jsonl").read_bytes()
