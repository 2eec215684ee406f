"""A snapshot's digest: ``TextEnv.snapshot`` builds the canonical text from its fields' texts (each
transcript pair encoded once), and it must hash the same bytes as :func:`snapshot_digest`, the
definition: the shipped failure states carry digests, and a restore takes the fast path only on a match."""

from __future__ import annotations

import copy
import importlib.util

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import TaskSet, load_failure_states
from budgetgym.core.env import snapshot_digest
from toy_env import CounterEnv

# Text that JSON escapes in every way it can: NUL and other control characters, quotes and
# backslashes, non-ASCII, characters outside the BMP (surrogate pairs) and lone surrogates.
HOSTILE = ["", "\x00", "\x01\x1f\x7f", '"\\/', "\n\r\t\b\f", "é ß 中文", "\U0001f600", "\ud800", "\udfff x \ud83d",
           "\u2028\u2029", "a" * 5000]
# Budgets long enough for every hostile text and a few more turns; a task id and a first observation
# with escapes too (a task record holds no lone surrogate: its fingerprint encodes it as UTF-8).
TASKS = TaskSet({"id": f"long-{i}-\u00e9\x01", "split": "train", "max_turns": 30, "target": 3,
                 "instruction": "Reach 3. " + "".join(text for text in HOSTILE if not any("\ud800" <= c <= "\udfff" for c in text))}
                for i in range(2))


def _checked(env) -> dict:
    snap = env.snapshot()
    assert snap["digest"] == snapshot_digest(snap)
    return snap


@pytest.mark.parametrize("fast_restore", [True, False])
def test_every_snapshot_digest_is_the_canonical_hash_of_its_fields(fast_restore):
    env = CounterEnv(fast_restore=fast_restore, tasks=TASKS)
    env.reset(seed=2**63 + 5, options={"task_index": 1})
    _checked(env)
    for text in HOSTILE:  # refused actions: the transcript holds them as they were
        env.step(text)
        _checked(env)
    env.step('{"name": "add", "arguments": {"n": 1}}')  # progress becomes a fraction
    taken = _checked(env)
    other = CounterEnv(fast_restore=fast_restore, tasks=TASKS)
    other.reset(seed=1)
    other.step("add 1")
    _checked(other)  # a transcript of its own, then the restored one in its place
    other.reset(options={"snapshot": taken})
    assert _checked(other) == taken
    other.step("\ud800 again")
    _checked(other)
    copied = copy.deepcopy(other)  # its transcript and the encoded pairs copied together
    copied.step("add 1")
    assert _checked(copied)["turn"] == _checked(other)["turn"] + 1
    other.reset(seed=3)
    assert _checked(other)["transcript"] == []


def _families() -> list[str]:
    families = ["function_calling", "navigation"]
    if importlib.util.find_spec("bfcl_eval") is not None:
        families.append("bfcl")
    return families


@pytest.mark.parametrize("family", _families())
def test_a_restored_failure_state_snapshots_to_its_shipped_digest(family):
    states = load_failure_states(family)
    env_id = states[0]["snapshot"]["env_id"]
    env = gym.make(env_id).unwrapped if env_id is not None else None
    if env is None:
        from budgetgym.envs.navigation import NavigationEnv
        env = NavigationEnv()
    try:
        for state in states:
            env.reset(options={"snapshot": state["snapshot"]})
            assert env.snapshot() == state["snapshot"], state["id"]
    finally:
        env.close()
