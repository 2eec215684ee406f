"""Threads, processes and Ray give exactly the serial results: every job carries its own seed."""

import os

import pytest

from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.executors import ProcessExecutor, RayExecutor, ThreadExecutor, chunked
from budgetgym.eval.probes import run_action_quality_probe, run_recovery_probe
from budgetgym.eval.sweep import run_sweep
from eval_support import TESTS_DIR, TOY_ID, toy_tasks

SWEEP = dict(tasks=toy_tasks(10), k=(1, 2, 4), budgets=(0.25, 0.5, 1.0), reveal=("none", "total"), seed=2)


@pytest.fixture(scope="module")
def serial_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("serial") / "episodes.jsonl"
    run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=path, **SWEEP)
    return path


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    # A local cluster on this machine; its workers must import the toy env from tests/.
    path = os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


def test_chunks_cover_every_job_once():
    jobs = [{"i": i} for i in range(103)]
    chunks = chunked(jobs, 2)
    assert [job for chunk in chunks for job in chunk] == jobs
    assert max(len(c) for c in chunks) <= 16


def test_processes_equal_serial(serial_file, tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.4), out=out, executor=ProcessExecutor(2), **SWEEP)
    assert result.ran == result.planned
    assert out.read_bytes() == serial_file.read_bytes()


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


def test_probes_on_ray_equal_serial(ray_cluster, toy_failure_states):
    agent = NoisyOracleAgent(0.5)
    recovery = [run_recovery_probe(TOY_ID, agent, states=toy_failure_states, attempts=4, executor=executor)
                for executor in ("serial", RayExecutor())]
    assert recovery[0] == recovery[1]
    quality = [run_action_quality_probe(TOY_ID, agent, NoisyOracleAgent(0.9), agent, tasks=4, rollouts=3,
                                        executor=executor) for executor in ("serial", RayExecutor())]
    assert quality[0] == quality[1]
