"""The ids the tests run over: every registered id, plus the toy env under tests/ (never shipped)."""

import gymnasium as gym
import pytest

import budgetgym

TOY_ID = "budgetgym-test/Counter-v0"
if TOY_ID not in gym.registry:
    gym.register(TOY_ID, entry_point="toy_env:CounterEnv")

ENV_IDS = [entry.id for entry in budgetgym.REGISTRY] + [TOY_ID]


def make_or_skip(env_id: str, **kwargs):
    """gym.make, skipping (with the env's own reason) only an adapter whose extra is not installed."""
    entry = next((e for e in budgetgym.REGISTRY if e.id == env_id), None)
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
