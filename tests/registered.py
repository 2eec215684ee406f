"""The ids the tests run over: every registered id, plus the toy env under tests/ (never shipped)."""

import atexit
import functools
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import gymnasium as gym
import pytest

import budgetgym

TOY_ID = "budgetgym-test/Counter-v0"
if TOY_ID not in gym.registry:
    gym.register(TOY_ID, entry_point="toy_env:CounterEnv")

ENV_IDS = [entry.id for entry in budgetgym.REGISTRY] + [TOY_ID]


SWEBENCH_ID = "budgetgym/SWEBench-v0"


@functools.lru_cache(maxsize=None)
def swebench_instances() -> str:
    """The test instance of SWEBench-v0 (``swebench_data.py``), built once per process; its path is
    also put in ``BUDGETGYM_SWEBENCH_INSTANCES`` so that envs made from the id alone (vector envs,
    child processes) find it. Skips, with the reason, where the Docker backend cannot run."""
    from coding_support import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(f"{SWEBENCH_ID} runs on the Docker backend: {problem}")
    from swebench_data import write_swebench_instances

    folder = Path(tempfile.mkdtemp(prefix="budgetgym-swebench-"))
    atexit.register(shutil.rmtree, folder, True)
    path = str(write_swebench_instances(folder))
    os.environ["BUDGETGYM_SWEBENCH_INSTANCES"] = path
    return path


def make_or_skip(env_id: str, **kwargs):
    """gym.make, skipping (with the env's own reason) only an adapter whose extra is not installed.
    SWEBench-v0, which ships no instances, plays the test instance unless told otherwise."""
    entry = next((e for e in budgetgym.REGISTRY if e.id == env_id), None)
    if env_id == SWEBENCH_ID and "instances" not in kwargs and importlib.util.find_spec("swebench") is not None:
        kwargs["instances"] = swebench_instances()
    try:
        return gym.make(env_id, **kwargs)
    except ImportError as err:
        if entry is not None and entry.adapter:
            pytest.skip(f"{env_id} needs its extra: {err}")
        raise
    except FileNotFoundError as err:  # an adapter whose data the user points to (SWE-bench instances)
        if entry is not None and entry.adapter:
            pytest.skip(f"{env_id} needs its data: {err}")
        raise
