"""One episode of an agent in an env, from a reset or a restored state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from budgetgym.core.rollout import rollout
from budgetgym.eval.agents.base import Agent


@dataclass(frozen=True)
class EpisodeResult:
    turns: int  # turns the agent took (a restored prefix not included)
    success: bool
    reward: float  # the sum of the step rewards
    actions: list[str]
    truncated: bool


def play_episode(env: gym.Env[str, str], agent: Agent, *, seed: int,
                 options: dict[str, Any] | None = None) -> EpisodeResult:
    """Reset ``env`` (with ``options``: a task id or a snapshot) and let ``agent`` act until the end."""
    observation, info = env.reset(seed=seed, options=options)
    return continue_episode(env, agent, observation, info, seed=seed)


def continue_episode(env: gym.Env[str, str], agent: Agent, observation: str, info: dict[str, Any], *,
                     seed: int) -> EpisodeResult:
    """Let ``agent`` act from the env's current state (just reset or restored) until the episode ends."""
    agent.reset(env, observation, info, seed)
    played = rollout(env, lambda observation, info, env: agent.act(observation, info), start=(observation, info))
    return EpisodeResult(played.turns, played.success, played.total_reward, played.actions, played.truncated)
