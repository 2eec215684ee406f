"""What a function-calling domain is made of, and the few helpers every domain shares.

A domain is a small in-memory service (a file system, a mailbox, a calendar, a bank) whose whole
state is one JSON-serialisable dict. Its tools are plain functions ``tool(backend, **arguments)``
that read or change that dict and return a JSON-able result, or raise :class:`ToolError` with the
message a real service would give. Nothing else holds state, so a snapshot of the dict is a
complete, fast snapshot of the domain.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping

from budgetgym.core import Tool, ToolCall

if TYPE_CHECKING:  # drafting imports this module
    from budgetgym.envs.function_calling.drafting import Draft

#: How many request kinds a generated conversation draws by default (lowest, highest).
REQUESTS = (2, 3)


@dataclass(frozen=True)
class Mistakes:
    """How the failure-state generator makes realistic mistakes in this domain.

    Each hook gets the backend state (read-only) and, where it has one, the call the oracle was about
    to make; it returns the mistaken call, or None when it has none to offer here.
    """

    #: the same tool with one argument wrong (another account, path, recipient, time, amount).
    wrong_argument: Callable[[ToolCall, Mapping[str, Any], random.Random], ToolCall | None]
    #: a different, state changing tool where the oracle's one was meant (copy for move, ...).
    wrong_tool: Callable[[ToolCall, Mapping[str, Any], random.Random], ToolCall | None]
    #: a destructive call on something the user wanted kept (delete, cancel, sell).
    destructive: Callable[[Mapping[str, Any], random.Random], ToolCall | None]


@dataclass(frozen=True)
class Domain:
    """One service: its backend, tools, scoring projection, repair planner, generator and mistakes.

    Attributes:
        name: the task records' ``domain`` field.
        intro: what the user's assistant is told at the start (the tools are listed separately).
        backend: builds the service around a state dict (the dict is owned, not copied).
        tools: every tool of the domain, in the order they are shown; a task may offer a subset.
        project: the fields of a state that matter for scoring; two states are equivalent for the
            user exactly when their projections are equal.
        plan: the repair planner: from a state and a target projection, the next call that brings
            the state closer to the target, or None when they already agree.
        generate: draws one task draft from a ``random.Random`` and how many request kinds to
            draw, (lowest, highest) (see ``generate.py``).
        mistakes: hooks for the failure-state generator.
    """

    name: str
    intro: str
    backend: Callable[[dict[str, Any]], Any]
    tools: Mapping[str, Tool]
    project: Callable[[Mapping[str, Any]], dict[str, Any]]
    plan: Callable[[Mapping[str, Any], Mapping[str, Any], Collection[str]], ToolCall | None]
    generate: Callable[[random.Random, tuple[int, int]], Draft]
    mistakes: Mistakes
