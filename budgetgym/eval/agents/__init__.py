"""Agents: the protocol, scripted baselines, the OpenAI-compatible chat agent, and ``make_agent``.

Every agent the command line knows is a row of :data:`AGENTS` (its name, what follows the colon,
its constructor and its help); ``make_agent``, its error message and the CLI's ``--agent`` help are
made from that table, so a new agent is one row here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from budgetgym.eval.agents.base import Agent, AgentError
from budgetgym.eval.agents.openai_chat import OpenAIChatAgent
from budgetgym.eval.agents.scripted import BudgetAwareAgent, NoisyOracleAgent, OracleAgent, RandomAgent


@dataclass(frozen=True)
class AgentKind:
    """One row of the agent table.

    Attributes:
        name: the spec's name, before any colon (``noisy-oracle``).
        argument: what may follow the colon (``"P"``, ``"MODEL"``), or None when nothing may.
        required: whether the argument must be given (``openai:MODEL``) or may be left out.
        build: ``build(argument or None, chat_options)`` returns the agent; a bad argument raises ValueError.
        help: one phrase for the help text.
        served: whether the agent takes the served-model options (``--base-url``, ``--timeout``, ...).
    """

    name: str
    argument: str | None
    required: bool
    build: Callable[[str | None, dict[str, Any]], Agent]
    help: str
    served: bool = False

    @property
    def form(self) -> str:
        """How the spec is written: ``oracle``, ``noisy-oracle[:P]``, ``openai:MODEL``."""
        if self.argument is None:
            return self.name
        return f"{self.name}:{self.argument}" if self.required else f"{self.name}[:{self.argument}]"


def _share(kind: Callable[..., Agent]) -> Callable[[str | None, dict[str, Any]], Agent]:
    def build(argument: str | None, _: dict[str, Any]) -> Agent:
        return kind(float(argument)) if argument else kind()
    return build


AGENTS: tuple[AgentKind, ...] = (
    AgentKind("oracle", None, False, lambda _, __: OracleAgent(), "the env's known-good solution"),
    AgentKind("random", None, False, lambda _, __: RandomAgent(), "a random action each turn"),
    AgentKind("noisy-oracle", "P", False, _share(NoisyOracleAgent),
              "the oracle, but a random action with probability P (default 0.25)"),
    AgentKind("budget-aware", "P", False, _share(BudgetAwareAgent),
              "noisy, but careful once a revealed budget runs low"),
    AgentKind("openai", "MODEL", True, lambda model, options: OpenAIChatAgent(model, **options),
              "a model behind an OpenAI-compatible server", served=True),
)

#: The names of the scripted agents (those that need no server).
SCRIPTED = tuple(kind.name for kind in AGENTS if not kind.served)


def agent_forms() -> str:
    """Every spec form with its help, for help texts and error messages."""
    return ", ".join(f"{kind.form} ({kind.help})" for kind in AGENTS)


def agent_kind(spec: str) -> AgentKind | None:
    """The table row of a spec (``noisy-oracle:0.1`` -> noisy-oracle), or None for an unknown name."""
    name = spec.partition(":")[0]
    return next((kind for kind in AGENTS if kind.name == name), None)


def is_served(spec: str) -> bool:
    """Whether ``spec`` names a served model (its runs default to the threads executor)."""
    kind = agent_kind(spec)
    return kind is not None and kind.served


def make_agent(spec: str, **chat_options: Any) -> Agent:
    """An agent from its command-line spec, one of the forms of :data:`AGENTS`: ``oracle``,
    ``random``, ``noisy-oracle[:P]``, ``budget-aware[:P]`` or ``openai:MODEL`` (``chat_options``
    go to a served model's constructor, :class:`OpenAIChatAgent`). ValueError names every form."""
    name, colon, argument = spec.partition(":")
    kind = agent_kind(spec)
    if kind is None or (colon and kind.argument is None) or (kind.required and not argument) \
            or (colon and not argument):
        raise ValueError(f"unknown agent {spec!r}: use one of {', '.join(k.form for k in AGENTS)} "
                         "(P a share in [0, 1])")
    try:
        return kind.build(argument or None, chat_options if kind.served else {})
    except ValueError as err:
        raise ValueError(f"bad agent {spec!r}: {err}") from None


__all__ = ["AGENTS", "Agent", "AgentError", "AgentKind", "BudgetAwareAgent", "NoisyOracleAgent", "OpenAIChatAgent",
           "OracleAgent", "RandomAgent", "SCRIPTED", "agent_forms", "agent_kind", "is_served", "make_agent"]
