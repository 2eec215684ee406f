"""Agents: the protocol, scripted baselines, the OpenAI-compatible chat agent, and ``make_agent``."""

from __future__ import annotations

from typing import Any

from budgetgym.eval.agents.base import Agent, AgentError
from budgetgym.eval.agents.openai_chat import OpenAIChatAgent
from budgetgym.eval.agents.scripted import BudgetAwareAgent, NoisyOracleAgent, OracleAgent, RandomAgent

SCRIPTED = ("oracle", "random", "noisy-oracle", "budget-aware")


def make_agent(spec: str, **chat_options: Any) -> Agent:
    """An agent from its command-line name.

    ``oracle``, ``random``, ``noisy-oracle`` (mistake share 0.25) or ``noisy-oracle:P``,
    ``budget-aware`` or ``budget-aware:P`` (the noisy oracle that heeds a revealed budget), and
    ``openai:MODEL`` for a served model (``chat_options`` go to :class:`OpenAIChatAgent`).
    """
    name, _, argument = spec.partition(":")
    if name == "oracle" and not argument:
        return OracleAgent()
    if name == "random" and not argument:
        return RandomAgent()
    if name in ("noisy-oracle", "budget-aware"):
        kind = NoisyOracleAgent if name == "noisy-oracle" else BudgetAwareAgent
        try:
            return kind(float(argument)) if argument else kind()
        except ValueError as err:
            raise ValueError(f"bad agent {spec!r}: {err}") from None
    if name == "openai" and argument:
        return OpenAIChatAgent(argument, **chat_options)
    raise ValueError(f"unknown agent {spec!r}: use one of {', '.join(SCRIPTED)}, noisy-oracle:P or budget-aware:P "
                     "(P in [0, 1]), or openai:MODEL")


__all__ = ["Agent", "AgentError", "BudgetAwareAgent", "NoisyOracleAgent", "OpenAIChatAgent", "OracleAgent",
           "RandomAgent", "SCRIPTED", "make_agent"]
