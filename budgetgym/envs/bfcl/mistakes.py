"""BFCL-v0's mistake kinds: the wrong calls a failure state starts from.

Each kind is a function of the agent's file system (None where the entry has none), its tools, the
oracle's intended step, the user turn and a seeded RNG, giving one mistaken step with its
description, or None where the kind does not fit here. :meth:`BFCLEnv.propose_mistake` calls
:func:`propose`; the core's builder (:mod:`budgetgym.core.failures`) keeps the state after it when
the oracle still recovers (``python -m budgetgym.envs.bfcl.assets``).
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable, Mapping

from budgetgym.core.actions import Action, ToolCall
from budgetgym.core.tools import Tool

# Functions that only read, for the wasted_call mistake: these names, and names with these prefixes.
READS = frozenset({"ls", "pwd"})
READ_PREFIXES = ("get_", "list_", "view_", "display_")


def _wrong_directory(system: Any, tools: Mapping[str, Tool], intended: Action, turn: int,
                     rng: random.Random) -> tuple[Action, str] | None:
    """A ``cd`` into another folder (a subfolder, or up) before a step of calls."""
    if system is None or "cd" not in tools or intended.is_message:
        return None
    here = system.pwd()["current_working_directory"]
    folders = [".."] if here.strip("/").count("/") else []
    for name in system.ls(a=True)["current_directory_content"]:
        # A copy tries the cd: the agent's own file system must not move.
        if "/" not in name and "error" not in (copy.deepcopy(system).cd(name) or {}):
            folders.append(name)
    planned = {call.arguments.get("folder") for call in intended.calls if call.name == "cd"}
    folders = [folder for folder in folders if folder not in planned]
    if not folders:
        return None
    folder = rng.choice(sorted(folders))
    return (Action((ToolCall("cd", {"folder": folder}),)),
            f"changed into the wrong folder with cd(folder={folder!r}) in user turn {turn + 1}")


def _wasted_call(system: Any, tools: Mapping[str, Tool], intended: Action, turn: int,
                 rng: random.Random) -> tuple[Action, str] | None:
    """A read that does not serve the request (a listing, a lookup without arguments)."""
    reads = sorted(name for name, tool in tools.items()
                   if (name in READS or name.startswith(READ_PREFIXES)) and not tool.parameters.get("required"))
    made = set() if intended.is_message else {call.name for call in intended.calls}
    reads = [name for name in reads if name not in made]
    if not reads:
        return None
    name = rng.choice(reads)
    return (Action((ToolCall(name, {}),)),
            f"made a call that does not serve the request, {name}(), in user turn {turn + 1}")


MISTAKES: dict[str, Callable[..., tuple[Action, str] | None]] = {
    "wrong_directory": _wrong_directory,
    "wasted_call": _wasted_call,
}
KINDS: tuple[str, ...] = tuple(MISTAKES)


def propose(kind: str, system: Any, tools: Mapping[str, Tool], intended: Action, turn: int,
            rng: random.Random) -> tuple[Action, str] | None:
    """One mistake of ``kind`` here, as (step, description), or None where it does not fit."""
    return MISTAKES[kind](system, tools, intended, turn, rng)
