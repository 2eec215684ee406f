"""The one rollout loop: a policy plays an env until the episode ends.

Everything that plays an episode (the oracle's turn count in the generators, the failure-state
builder, the evaluation's agents, the probes, tests and benchmarks) goes through :func:`rollout`, so
what "an episode" means is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

import gymnasium as gym

Policy = Callable[[str, dict[str, Any], gym.Env], Union[str, None]]
"""``policy(observation, info, env) -> action``; None stops the rollout before the episode ends."""


def oracle_policy(observation: str, info: dict[str, Any], env: gym.Env) -> str | None:
    """The env's own oracle (``env.unwrapped.oracle_action()``)."""
    return env.unwrapped.oracle_action()


@dataclass(frozen=True)
class Step:
    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass
class Rollout:
    """What happened: the observation the rollout started from and every step taken."""

    observation: str
    info: dict[str, Any]
    steps: list[Step] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return bool(self.steps) and (self.steps[-1].terminated or self.steps[-1].truncated)

    @property
    def terminated(self) -> bool:
        return bool(self.steps) and self.steps[-1].terminated

    @property
    def truncated(self) -> bool:
        return bool(self.steps) and self.steps[-1].truncated

    @property
    def success(self) -> bool:
        last = self.steps[-1].info if self.steps else self.info
        return bool(last.get("success", False))

    @property
    def turns(self) -> int:
        """Turns taken by this rollout (a restored prefix not included)."""
        return len(self.steps)

    @property
    def actions(self) -> list[str]:
        return [step.action for step in self.steps]

    @property
    def total_reward(self) -> float:
        return sum(step.reward for step in self.steps)

    @property
    def last_info(self) -> dict[str, Any]:
        return self.steps[-1].info if self.steps else self.info


def rollout(env: gym.Env, policy: Policy | str = "oracle", *, seed: int | None = None,
            options: dict[str, Any] | None = None, start: tuple[str, dict[str, Any]] | None = None,
            reset: bool = True, max_steps: int | None = None) -> Rollout:
    """Play ``policy`` in ``env`` until the episode ends, the policy returns None, or ``max_steps``.

    Args:
        env: any Gymnasium text env (wrapped or not).
        policy: ``"oracle"`` or a callable ``(observation, info, env) -> action | None``.
        seed, options: passed to ``env.reset``, unless ``start`` is given.
        start: ``(observation, info)`` of a state the env is already in (just reset or restored):
            the rollout continues from it without resetting.
        reset: False continues from the env's current state without ``start`` (for policies that
            read the env, such as the oracle: they first see the unwrapped env's last observation).
        max_steps: stop after this many steps even if the episode goes on.
    """
    act = oracle_policy if policy == "oracle" else policy
    if not callable(act):
        raise ValueError(f"policy must be 'oracle' or a callable, got {policy!r}")
    if start is not None:
        observation, info = start
    elif reset:
        observation, info = env.reset(seed=seed, options=options)
    else:
        observation, info = env.unwrapped.last_observation, {}
    return rollout_batch([env], lambda last: {0: act(*last[0], env)}, [(observation, info)], max_steps=max_steps)[0]


def rollout_batch(envs: Sequence[gym.Env], act: Callable[[dict[int, tuple[str, dict[str, Any]]]], dict[int, str | None]],
                  starts: Sequence[tuple[str, dict[str, Any]]], *, max_steps: int | None = None) -> list[Rollout]:
    """Play several envs in lockstep from ``starts`` (each env's ``(observation, info)``, just reset
    or restored) with a batched policy: ``act`` gets the running rows' last ``(observation, info)`` by
    row and returns an action for each (a model that answers a batch in one forward pass, such as
    the K attempts of a GRPO group). A row leaves the batch when its episode ends, when its action is
    None, or after ``max_steps`` steps. The one rollout loop of the package: :func:`rollout` is its
    batch of one."""
    played = [Rollout(observation, info) for observation, info in starts]
    last = dict(enumerate(starts)) if max_steps is None or max_steps > 0 else {}
    while last:
        actions = act(last)
        for row, action in actions.items():
            if action is None:
                del last[row]
                continue
            observation, reward, terminated, truncated, info = envs[row].step(action)
            played[row].steps.append(Step(action, observation, float(reward), bool(terminated), bool(truncated), info))
            last[row] = (observation, info)
            if terminated or truncated or (max_steps is not None and len(played[row].steps) >= max_steps):
                del last[row]
    return played
