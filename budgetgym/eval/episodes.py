"""One episode of an agent in an env, from a reset or a restored state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from budgetgym.core import agent_view
from budgetgym.core.rollout import rollout
from budgetgym.eval.agents.base import Agent, turn_details


@dataclass(frozen=True)
class EpisodeResult:
    turns: int  # turns the agent took (a restored prefix not included)
    calls: int  # tool calls its actions ran (likewise)
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
    """Let ``agent`` act from the env's current state (just reset or restored) until the episode ends.
    The agent is handed :func:`~budgetgym.core.agent_view` of each ``info``, never the grader's fields."""
    agent.reset(env, observation, agent_view(info), seed)
    details: list[dict[str, Any]] = []

    def act(observation: str, info: dict[str, Any], env: gym.Env[str, str]) -> str:
        action = agent.act(observation, agent_view(info))
        details.append(turn_details(agent))
        return action

    played = rollout(env, act, start=(observation, info))
    steps = [{"valid": bool(step.info.get("action_valid", True)), "error": step.info.get("action_error"), **extra}
             for step, extra in zip(played.steps, details)]
    calls = played.last_info.get("calls", 0) - info.get("calls", 0)
    return EpisodeResult(played.turns, calls, played.success, played.total_reward, played.actions, played.truncated,
                         steps)
