"""Realistic file-system mistakes for the failure-state generator."""

from __future__ import annotations

import posixpath
import random
from typing import Any, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.domain import Mistakes


def wrong_argument(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = dict(call.arguments)
    if call.name in ("move", "copy"):
        # The right file into the wrong folder.
        source = args["source"]
        folders = [d for d in state["dirs"] if d not in (posixpath.dirname(source), args["destination"], source)
                   and not d.startswith(source + "/")
                   and posixpath.join(d, posixpath.basename(source)) not in state["files"]]
        if not folders:
            return None
        args["destination"] = rng.choice(folders)
    elif call.name == "write_file":
        args["content"] = args["content"].replace("\n", " ").strip() + " (draft)\n"
    elif call.name == "delete":
        others = [f for f in state["files"] if f != args["path"] and posixpath.dirname(f) == posixpath.dirname(args["path"])]
        if not others:
            return None
        args = {"path": rng.choice(sorted(others))}
    elif call.name == "make_directory":
        args["path"] = args["path"].rstrip("/") + "s"
        args["parents"] = True
    else:
        return None
    return ToolCall(call.name, args)


def wrong_tool(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = call.arguments
    if call.name == "move" and args["source"] in state["files"]:
        return ToolCall("copy", dict(args))  # leaves the original behind
    if call.name == "copy":
        return ToolCall("move", dict(args))  # takes the original away
    if call.name == "make_directory":
        return ToolCall("write_file", {"path": args["path"], "content": ""})  # a file, not a folder
    if call.name == "write_file" and not args.get("append") and args["path"] in state["files"]:
        return ToolCall("write_file", {**args, "append": True})
    return None


def destructive(state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    if rng.random() < 0.3:
        folders = [d for d in state["dirs"] if d.count("/") == 1 and d != "/"]
        if folders:
            return ToolCall("delete", {"path": rng.choice(folders), "recursive": True})
    files = sorted(state["files"])
    return ToolCall("delete", {"path": rng.choice(files)}) if files else None


MISTAKES = Mistakes(wrong_argument=wrong_argument, wrong_tool=wrong_tool, destructive=destructive)
