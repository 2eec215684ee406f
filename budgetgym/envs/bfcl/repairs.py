"""The oracle's plans from the current state: the calls that bring the agent's services back to
where the ground truth has them, for the services whose state the documented functions can restore.

:meth:`BFCLEnv._oracle` asks :func:`plan` before each ground-truth step. Each repair compares one
public attribute that BFCL's state check compares (or the file system's current folder, which
decides where the next calls act) and returns calls, in order, that make it equal, or none where
it is equal already:

* ``GorillaFileSystem``: the folder tree, name by name: an entry that should not be there is
  removed (``rm``, which takes files and folders), a missing folder is made (``mkdir``), a missing
  file is made (``touch``) and its content written (``echo``), a file with other content is
  rewritten; then ``cd`` back to the folder the ground truth is in. ``cd`` goes one level at a time.
* ``TradingBot.watch_list``, ``TwitterAPI.following_list``: entries added or removed
  (``add_to_watchlist``/``remove_stock_from_watchlist``, ``follow_user``/``unfollow_user``).
* ``VehicleControlAPI.doorStatus``: ``lockDoors`` on the doors whose lock differs.

What the functions cannot undo is left as it is (a message sent: its id stays generated; an order
placed: a cancelled order stays in the book), and so is an order they cannot restore (a folder's
entries, a list's items): such a state is not one the oracle recovers from, and the failure-state
builder keeps only states the oracle does recover from.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable, Mapping

from budgetgym.core.actions import ToolCall

FILE_SYSTEM = "GorillaFileSystem"
_EMPTY_FOLDER = SimpleNamespace(contents={})


def _is_folder(entry: Any) -> bool:
    return type(entry).__name__ == "Directory"  # BFCL's class, read from the instance


def folders(pwd: str) -> list[str]:
    """The folder names from the root of a ``pwd()`` path (``/workspace/document`` -> two)."""
    return [name for name in pwd.split("/") if name]


def current_folder(system: Any) -> Any:
    """The file system's current folder, found from the root by ``pwd()`` (public fields only)."""
    folder = system.root
    for name in folders(system.pwd()["current_working_directory"])[1:]:
        folder = folder.contents[name]
    return folder


def cd_calls(here: list[str], goal: list[str]) -> list[ToolCall]:
    """``cd`` calls from folder ``here`` to folder ``goal`` (both from the root), one level a call."""
    common = 0
    while common < min(len(here), len(goal)) and here[common] == goal[common]:
        common += 1
    return ([ToolCall("cd", {"folder": ".."})] * (len(here) - common)
            + [ToolCall("cd", {"folder": name}) for name in goal[common:]])


def file_system(agent: Any, expected: Any) -> list[ToolCall]:
    """Calls that make the agent's folder tree and current folder the expected ones."""
    changes: list[tuple[list[str], ToolCall]] = []  # (the folder it runs in, the call)

    def compare(have: Any, want: Any, path: list[str]) -> None:
        for name, entry in have.contents.items():
            wanted = want.contents.get(name)
            if wanted is None or _is_folder(wanted) != _is_folder(entry):
                changes.append((path, ToolCall("rm", {"file_name": name})))
        for name, wanted in want.contents.items():
            entry = have.contents.get(name)
            if entry is not None and _is_folder(entry) != _is_folder(wanted):
                entry = None  # removed above
            if _is_folder(wanted):
                if entry is None:
                    changes.append((path, ToolCall("mkdir", {"dir_name": name})))
                compare(entry if entry is not None else _EMPTY_FOLDER, wanted, [*path, name])
                continue
            if entry is None:
                changes.append((path, ToolCall("touch", {"file_name": name})))
            if (entry.content if entry is not None else "") != wanted.content:
                changes.append((path, ToolCall("echo", {"content": wanted.content, "file_name": name})))

    compare(agent.root, expected.root, [agent.root.name])
    here = folders(agent.pwd()["current_working_directory"])
    calls: list[ToolCall] = []
    for path, call in changes:
        calls += cd_calls(here, path)
        calls.append(call)
        here = path
    return calls + cd_calls(here, folders(expected.pwd()["current_working_directory"]))


def _list_repair(attribute: str, add: tuple[str, str], remove: tuple[str, str]) -> Callable[[Any, Any], list[ToolCall]]:
    def repair(agent: Any, expected: Any) -> list[ToolCall]:
        have, want = getattr(agent, attribute), getattr(expected, attribute)
        return ([ToolCall(remove[0], {remove[1]: item}) for item in have if item not in want]
                + [ToolCall(add[0], {add[1]: item}) for item in want if item not in have])
    return repair


def doors(agent: Any, expected: Any) -> list[ToolCall]:
    """``lockDoors`` calls for the doors whose lock is not the expected one."""
    calls = []
    for status, unlock in (("unlocked", True), ("locked", False)):
        wrong = [door for door, want in expected.doorStatus.items() if want == status and agent.doorStatus.get(door) != status]
        if wrong:
            calls.append(ToolCall("lockDoors", {"unlock": unlock, "door": wrong}))
    return calls


REPAIRS: dict[str, Callable[[Any, Any], list[ToolCall]]] = {
    FILE_SYSTEM: file_system,
    "TradingBot": _list_repair("watch_list", ("add_to_watchlist", "stock"), ("remove_stock_from_watchlist", "symbol")),
    "TwitterAPI": _list_repair("following_list", ("follow_user", "username_to_follow"),
                               ("unfollow_user", "username_to_unfollow")),
    "VehicleControlAPI": doors,
}


def plan(instances: Mapping[str, Any], expected: Mapping[str, Any], tools: Mapping[str, Any]) -> list[ToolCall]:
    """The repairs of every service that has one, in the task's order of classes; a service whose
    repair needs a function the agent does not have now (held back by ``miss_func``) is skipped."""
    calls: list[ToolCall] = []
    for name, instance in instances.items():
        repair = REPAIRS.get(name)
        if repair is None:
            continue
        needed = repair(instance, expected[name])
        if all(call.name in tools for call in needed):
            calls += needed
    return calls
