"""The agent protocol every evaluated policy keeps, scripted or served by a model."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import gymnasium as gym


@runtime_checkable
class Agent(Protocol):
    """A policy over one episode at a time.

    The runner calls ``reset`` once per episode, after ``env.reset``, then ``act`` once per turn with
    the current observation (the first one included) until the episode ends. ``env`` is handed over
    so an agent can read what a deployment would show it (``env.unwrapped.instructions``, the tools,
    a restored prefix); only the scripted baselines read the oracle. ``seed`` fixes every random
    choice of the episode, so a sweep is reproducible whatever the executor.
    """

    #: A short label stored with every episode (e.g. ``"noisy-oracle(p=0.25)"``).
    name: str

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


class AgentError(RuntimeError):
    """The agent could not produce an action (an unreachable server, a refused key, ...)."""
