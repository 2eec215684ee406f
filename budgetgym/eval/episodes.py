"""One episode of an agent in an env, from a reset or a restored state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from budgetgym.eval.agents.base import Agent, turn_details


@dataclass(frozen=True)
class EpisodeResult:
    turns: int  # turns the agent took (a restored prefix not included)
    success: bool
    reward: float  # the sum of the step rewards
    actions: list[str]
    truncated: bool
    #: Per turn: ``valid`` and ``error`` (the env's verdict on the action) and what the agent
    #: reports about the turn (a served model: ``mode``, ``latency_s``, tokens).
    steps: list[dict[str, Any]]


def play_episode(env: gym.Env[str, str], agent: Agent, *, seed: int,
                 options: dict[str, Any] | None = None) -> EpisodeResult:
    """Reset ``env`` (with ``options``: a task id or a snapshot) and let ``agent`` act until the end."""
    observation, info = env.reset(seed=seed, options=options)
    return continue_episode(env, agent, observation, info, seed=seed)


def continue_episode(env: gym.Env[str, str], agent: Agent, observation: str, info: dict[str, Any], *,
                     seed: int) -> EpisodeResult:
    """Let ``agent`` act from the env's current state (just reset or restored) until the episode ends."""
    agent.reset(env, observation, info, seed)
    actions: list[str] = []
    steps: list[dict[str, Any]] = []
    reward_sum = 0.0
    success = bool(info.get("success", False))
    terminated = truncated = False
    while not (terminated or truncated):
        action = agent.act(observation, info)
        actions.append(action)
        details = turn_details(agent)
        observation, reward, terminated, truncated, info = env.step(action)
        steps.append({"valid": bool(info.get("action_valid", True)), "error": info.get("action_error"), **details})
        reward_sum += float(reward)
        success = bool(info.get("success", False))
    return EpisodeResult(len(actions), success, reward_sum, actions, bool(truncated), steps)
