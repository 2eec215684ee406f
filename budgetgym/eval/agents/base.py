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
    choice of the episode, so a sweep is reproducible whatever the executor. ``info`` is
    :func:`budgetgym.core.agent_view` of the env's: what a deployed agent is shown, never the
    grader's fields (``progress``, ``success``, an injected mistake's description, a hidden budget).

    Optional attributes, read with :func:`agent_config`, :func:`reads_budget`, :func:`turn_details`
    and :func:`prepare_agent`: ``prepare()`` (called once before a run), ``config`` (a JSON-able dict of every option that changes behaviour;
    resume refuses a file written with another), ``reads_budget`` (whether the agent can act on a
    budget revealed in the observation text), and ``last_turn`` (a dict about the last ``act``:
    mode, latency, tokens; stored per turn).
    """

    #: A short label stored with every episode (e.g. ``"noisy-oracle(p=0.25)"``).
    name: str

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


def prepare_agent(agent: Any) -> None:
    """Let an agent settle what it needs before a run fans out to workers (``prepare()``, optional):
    a served model's tool mode is decided once, in the parent, so every worker uses the same."""
    prepare = getattr(agent, "prepare", None)
    if callable(prepare):
        prepare()


def agent_config(agent: Any) -> dict[str, Any]:
    """The agent's whole configuration, as stored with each episode (``{"name": ...}`` at least)."""
    config = getattr(agent, "config", None)
    return dict(config) if isinstance(config, dict) else {"name": agent.name}


def reads_budget(agent: Any) -> bool:
    """Whether the agent can see a budget that ``TurnBudget`` reveals in the observation text."""
    return bool(getattr(agent, "reads_budget", False))


def turn_details(agent: Any) -> dict[str, Any]:
    """What the agent reports about its last turn (empty for agents that report nothing)."""
    details = getattr(agent, "last_turn", None)
    return dict(details) if isinstance(details, dict) else {}


class AgentError(RuntimeError):
    """The agent could not produce an action (an unreachable server, a refused key, ...)."""
