"""BFCL-v0's mistake kinds: the wrong calls a failure state starts from.

Kinds:
    wrong_directory: a ``cd`` of the agent's own into another folder before a step of calls;
    wasted_call: a read that does not serve the request (a listing, a lookup without arguments);
    wrong_argument: the step's calls up to one that changes a service, that one with a wrong
        argument (a file moved or copied into the wrong folder, the wrong file removed or written,
        a folder or file made under a misspelt name, the wrong stock watched, the wrong user
        followed), and the step's later calls not made;
    destructive_call: an unrequested removal (a file or folder of the current folder, a watched
        stock, a followed user) or the car's locked doors unlocked.

The last two change what BFCL's state check compares (``STATE_CHANGING``); the oracle recovers by
planning from the state (:mod:`budgetgym.envs.bfcl.repairs`).

Each kind is a function of the agent's instances by class, its tools, the oracle's intended step,
the user turn and a seeded RNG, giving one mistaken step with its description, or None where the
kind does not fit here. :meth:`BFCLEnv.propose_mistake` calls
:func:`propose`; the core's builder (:mod:`budgetgym.core.failures`) keeps the state after it when
the oracle still recovers (``python -m budgetgym.envs.bfcl.assets``).
"""

from __future__ import annotations

import copy
import random
from typing import Any, Callable, Mapping

from budgetgym.core.actions import Action, ToolCall
from budgetgym.core.tools import Tool
from budgetgym.envs.bfcl.repairs import FILE_SYSTEM, REPAIRS, current_folder

# Functions that only read, for the wasted_call mistake: these names, and names with these prefixes.
READS = frozenset({"ls", "pwd"})
READ_PREFIXES = ("get_", "list_", "view_", "display_")


def _wrong_directory(instances: Mapping[str, Any], tools: Mapping[str, Tool], intended: Action, turn: int,
                     rng: random.Random) -> tuple[Action, str] | None:
    """A ``cd`` into another folder (a subfolder, or up) before a step of calls."""
    system = instances.get(FILE_SYSTEM)
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


def _wasted_call(instances: Mapping[str, Any], tools: Mapping[str, Tool], intended: Action, turn: int,
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


def _describe(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def _misspelt(name: str, taken: Any, rng: random.Random) -> str | None:
    """``name`` with one letter of its stem dropped (``temp`` -> ``tmp``), not one of ``taken``."""
    stem, dot, extension = name.rpartition(".") if "." in name.strip(".") else (name, "", "")
    options = sorted({stem[:i] + stem[i + 1:] + dot + extension for i in range(len(stem)) if len(stem) > 1} - set(taken) - {name})
    return rng.choice(options) if options else None


def _run(instances: Mapping[str, Any], call: ToolCall) -> None:
    """``call`` on whichever of ``instances`` has the method (a later class wins, as in BFCL), where
    that is a service the oracle can repair: only their state decides a wrong value, and the others
    may touch process-wide settings (MathAPI's precision)."""
    owner = next((i for i in reversed(list(instances.values())) if callable(getattr(i, call.name, None))), None)
    if owner is not None and type(owner).__name__ in REPAIRS:
        try:
            getattr(owner, call.name)(**call.arguments)
        except Exception:  # noqa: BLE001 - a call that fails changes nothing here either
            pass


def _wrong_value(call: ToolCall, instances: Mapping[str, Any], named: set[str], rng: random.Random) -> ToolCall | None:
    """``call`` with one argument changed to another value the service takes here, or None."""
    system = instances.get(FILE_SYSTEM)
    entries = current_folder(system).contents if system is not None else {}
    files = sorted(n for n, e in entries.items() if type(e).__name__ == "File" and n not in named)
    folders = sorted(n for n, e in entries.items() if type(e).__name__ == "Directory" and n not in named)
    arguments, choice = dict(call.arguments), None
    if call.name in ("mv", "cp") and system is not None:
        choice = "destination", (rng.choice(folders) if folders else _misspelt(arguments["destination"], entries, rng))
    elif call.name == "rm" and system is not None and files:
        choice = "file_name", rng.choice(files)
    elif call.name == "echo" and system is not None and arguments.get("file_name") not in (None, "None") and files:
        choice = "file_name", rng.choice(files)
    elif call.name in ("touch", "mkdir") and system is not None:
        key = "file_name" if call.name == "touch" else "dir_name"
        choice = key, _misspelt(arguments[key], entries, rng)
    elif call.name == "add_to_watchlist" and "TradingBot" in instances:
        bot = instances["TradingBot"]
        choice = "stock", rng.choice(sorted(set(bot.stocks) - set(bot.watch_list) - named) or [None])
    elif call.name == "follow_user" and "TwitterAPI" in instances:
        twitter = instances["TwitterAPI"]
        authors = {tweet.get("username") for tweet in twitter.tweets.values()} - set(twitter.following_list) - named
        choice = "username_to_follow", rng.choice(sorted(a for a in authors if a) or [None])
    if choice is None or choice[1] is None:
        return None
    arguments[choice[0]] = choice[1]
    return ToolCall(call.name, arguments)


def _named(intended: Action) -> set[str]:
    """Every string the step's calls name: a wrong value is none of them."""
    return {value for call in intended.calls for value in call.arguments.values() if isinstance(value, str)}


def _wrong_argument(instances: Mapping[str, Any], tools: Mapping[str, Tool], intended: Action, turn: int,
                    rng: random.Random) -> tuple[Action, str] | None:
    """The step's calls up to the first that changes a service and takes a wrong value here, that one
    with the wrong value; the step's later calls not made."""
    if intended.is_message:
        return None
    named = _named(intended)
    state = copy.deepcopy(dict(instances))  # the calls before the wrong one run on a copy, to see where they lead
    for index, call in enumerate(intended.calls):
        wrong = _wrong_value(call, state, named, rng)
        if wrong is not None:
            return (Action((*intended.calls[:index], wrong)),
                    f"called {_describe(wrong)} where the request needed {_describe(call)}, in user turn {turn + 1}")
        _run(state, call)
    return None


def _destructive_call(instances: Mapping[str, Any], tools: Mapping[str, Tool], intended: Action, turn: int,
                      rng: random.Random) -> tuple[Action, str] | None:
    """An unrequested removal of something the step does not name, or the car's locked doors
    unlocked where the step does not lock or unlock them."""
    if intended.is_message:
        return None
    named = _named(intended)
    options = []
    system = instances.get(FILE_SYSTEM)
    if system is not None and "rm" in tools:
        options += [ToolCall("rm", {"file_name": name}) for name in sorted(current_folder(system).contents) if name not in named]
    bot = instances.get("TradingBot")
    if bot is not None and bot.authenticated and "remove_stock_from_watchlist" in tools:
        options += [ToolCall("remove_stock_from_watchlist", {"symbol": s}) for s in sorted(bot.watch_list) if s not in named]
    twitter = instances.get("TwitterAPI")
    if twitter is not None and twitter.authenticated and "unfollow_user" in tools:
        options += [ToolCall("unfollow_user", {"username_to_unfollow": u}) for u in sorted(twitter.following_list) if u not in named]
    car = instances.get("VehicleControlAPI")
    if car is not None and "lockDoors" in tools and not any(call.name == "lockDoors" for call in intended.calls):
        locked = [door for door, status in car.doorStatus.items() if status == "locked"]
        if locked:
            options.append(ToolCall("lockDoors", {"unlock": True, "door": locked}))
    if not options:
        return None
    call = rng.choice(options)
    return Action((call,)), f"made an unrequested removal, {_describe(call)}, in user turn {turn + 1}"


MISTAKES: dict[str, Callable[..., tuple[Action, str] | None]] = {
    "wrong_directory": _wrong_directory,
    "wasted_call": _wasted_call,
    "wrong_argument": _wrong_argument,
    "destructive_call": _destructive_call,
}
KINDS: tuple[str, ...] = tuple(MISTAKES)
#: The kinds that change what BFCL's state check compares: the builder keeps them only off the
#: clean solution's path.
STATE_CHANGING: tuple[str, ...] = ("wrong_argument", "destructive_call")


def propose(kind: str, instances: Mapping[str, Any], tools: Mapping[str, Tool], intended: Action, turn: int,
            rng: random.Random) -> tuple[Action, str] | None:
    """One mistake of ``kind`` here, as (step, description), or None where it does not fit."""
    return MISTAKES[kind](instances, tools, intended, turn, rng)
