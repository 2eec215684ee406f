"""Step-level groups (GiGPO-style): the steps that K episodes of one task took from the same state.

GRPO compares whole episodes of a task; GiGPO (Feng et al. 2025, verl-agent) also compares the
actions taken from one *anchor state* across the episodes that passed through it, so a group of
attempts that all fail (or all succeed) still says which step from a shared state did better. In a
budgetgym env the episodes of a task are deterministic given their actions, so the states can be
recovered exactly by replaying them: no change to how episodes are collected or stored.

* :func:`episode_steps` replays one episode (task, seed, actions) in an env and records, for each
  step, the key of the state it was taken from, the action, and its reward.
* :func:`steps_from_records` does that for episode records as the sweeps and the group-rollout
  example write them (``task``, ``seed``, ``actions``: :class:`budgetgym.core.jsonl.EpisodeRecord`).
* :func:`group_steps` groups the steps of K episodes by state key; :func:`step_advantages` gives
  each step its advantage within its group.

The state key is :func:`budgetgym.core.process_reward.state_digest` (the env's fast-restore state:
equal keys, equal futures) where the family has a fast restore, else ``state_key()``. Not
``state_key()`` first: for several families it leaves out what decides the next best action (the
lookups already made in a FunctionCalling user turn, the user turn itself when a turn changes
nothing), so one key would hold states that call for different actions. Pass ``key=`` to group
coarser (``lambda env: env.state_key()``) or finer.

The step-level advantage of step t of an episode, taken from state s::

    R_t = sum_{k >= t} gamma^(k - t) r_k          (the discounted return from the step on)
    A_t = (R_t - mean(R over the group of s)) / (std(R over the group of s) + eps)

with ``normalise="mean"`` leaving out the division (GiGPO offers both). A step alone in its group
has advantage 0: nothing to compare it with. GiGPO adds it to the episode-level (GRPO) advantage
with a weight, ``A = A_episode + omega * A_step``; a trainer adapter does that sum itself. The
default ``gamma`` is 0.95, as in GiGPO: under a sparse reward, the return from a state then prefers
the step that ends the task sooner, which is what a turn budget asks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import gymnasium as gym

from budgetgym.core import TextEnv, text_env
from budgetgym.core.process_reward import state_digest

StateKey = Callable[[TextEnv], str]


@dataclass(frozen=True)
class StepRecord:
    """One step of an episode: which episode, its index there, the state it was taken from (a key),
    the action and its reward."""

    episode: int
    index: int
    state: str
    action: str
    reward: float


def default_key(env: TextEnv) -> str:
    """The state key the groups use by default: ``state_digest`` with a fast restore, else ``state_key()``."""
    return state_digest(env) if env.has_fast_restore else env.state_key()


def episode_steps(env: gym.Env[str, str], task_id: str, seed: int, actions: Sequence[str], *,
                  episode: int = 0, key: StateKey = default_key) -> list[StepRecord]:
    """Replay ``actions`` from a reset of ``task_id`` with ``seed``; one record per step played.

    The env should be made as the episode's was (the same id and ``reward_mode``); a budget wrapper
    need not be there, since the actions are the ones taken. A replay that ends before its actions
    do (a different env) raises ``ValueError``."""
    base = text_env(env)
    env.reset(seed=seed, options={"task_id": task_id})
    steps = []
    for index, action in enumerate(actions):
        if not base.running:
            raise ValueError(f"episode {episode} of {task_id!r} ended after {index} of its {len(actions)} actions "
                             f"on replay: it was not played in this env")
        state = key(base)
        reward = env.step(action)[1]
        steps.append(StepRecord(episode, index, state, action, float(reward)))
    return steps


def steps_from_records(env: gym.Env[str, str], records: Iterable[Mapping[str, Any]], *,
                       key: StateKey = default_key) -> list[list[StepRecord]]:
    """The steps of each episode record (``task``, ``seed``, ``actions``), replayed in ``env``."""
    episodes = []
    for number, record in enumerate(records):
        missing = [field for field in ("task", "seed", "actions") if field not in record]
        if missing:
            raise ValueError(f"episode record {number} lacks {', '.join(missing)}: step groups replay "
                             f"task, seed and actions")
        episodes.append(episode_steps(env, record["task"], record["seed"], record["actions"], episode=number, key=key))
    return episodes


def returns_to_go(steps: Sequence[StepRecord], gamma: float = 0.95) -> list[float]:
    """``R_t = sum_{k >= t} gamma^(k - t) r_k`` for each step of one episode."""
    returns, running = [0.0] * len(steps), 0.0
    for t in range(len(steps) - 1, -1, -1):
        running = steps[t].reward + gamma * running
        returns[t] = running
    return returns


def group_steps(episodes: Sequence[Sequence[StepRecord]]) -> dict[str, list[StepRecord]]:
    """The steps of all ``episodes`` (K episodes of one task) grouped by the state they were taken from,
    in order of first appearance."""
    groups: dict[str, list[StepRecord]] = defaultdict(list)
    for steps in episodes:
        for step in steps:
            groups[step.state].append(step)
    return dict(groups)


def step_advantages(episodes: Sequence[Sequence[StepRecord]], *, gamma: float = 0.95, normalise: str = "std",
                    eps: float = 1e-6) -> list[list[float]]:
    """Each step's advantage within its state's group (see the module docstring), shaped as ``episodes``.

    ``episodes`` are K episodes of one task (the keys of different tasks never meet).
    ``normalise``: ``"std"`` divides by the group's standard deviation (plus ``eps``), ``"mean"`` only
    subtracts the group's mean."""
    if normalise not in ("std", "mean"):
        raise ValueError(f"normalise must be 'std' or 'mean', got {normalise!r}")
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma!r}")
    returns = [returns_to_go(steps, gamma) for steps in episodes]
    by_state: dict[str, list[float]] = defaultdict(list)
    for steps, rets in zip(episodes, returns):
        for step, value in zip(steps, rets):
            by_state[step.state].append(value)
    stats = {}
    for state, values in by_state.items():
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
        stats[state] = (mean, std, len(values))
    advantages = []
    for steps, rets in zip(episodes, returns):
        row = []
        for step, value in zip(steps, rets):
            mean, std, size = stats[step.state]
            if size < 2:
                row.append(0.0)
            else:
                row.append((value - mean) / (std + eps) if normalise == "std" else value - mean)
        advantages.append(row)
    return advantages
