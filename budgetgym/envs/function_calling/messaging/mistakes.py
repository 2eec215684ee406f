"""Realistic messaging mistakes for the failure-state generator."""

from __future__ import annotations

import random
from typing import Any, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.domain import Mistakes


def wrong_argument(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = dict(call.arguments)
    if call.name == "send_message":
        first = args["to"].split()[0]
        others = sorted(c for c in state["contacts"] if c != args["to"])
        namesakes = [c for c in others if c.split()[0] == first]
        if not others:
            return None
        args["to"] = rng.choice(namesakes or others)  # the other Sam, or just the wrong person
    elif call.name == "delete_message":
        others = sorted(m["id"] for m in state["messages"].values()
                        if not m["trashed"] and m["id"] != args["message_id"] and m["folder"] == "inbox")
        if not others:
            return None
        args["message_id"] = rng.choice(others)
    elif call.name in ("update_contact", "add_contact") and "phone" in args:
        last = args["phone"][-1]
        args["phone"] = args["phone"][:-1] + ("0" if last != "0" else "1")
    elif call.name == "add_contact":
        args["email"] = args["email"].replace("@", ".@", 1)
    else:
        return None
    return ToolCall(call.name, args)


def wrong_tool(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    if call.name == "delete_message":
        sender = state["messages"][call.arguments["message_id"]]["from"]
        if sender in state["contacts"]:
            return ToolCall("delete_contact", {"name": sender})  # deletes the person, not the message
    if call.name == "update_contact" and call.arguments["name"] in state["contacts"]:
        details = {**state["contacts"][call.arguments["name"]], **call.arguments}
        args = {"name": details["name"] + " (new)", "email": details["email"]}
        if details.get("phone"):
            args["phone"] = details["phone"]
        return ToolCall("add_contact", args)  # a duplicate contact instead of an update
    if call.name == "restore_message":
        message = state["messages"][call.arguments["message_id"]]
        if message["folder"] == "inbox" and message["from"] in state["contacts"]:
            return ToolCall("send_message", {"to": message["from"], "text": message["text"]})
    return None


def destructive(state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    inbox = sorted(m["id"] for m in state["messages"].values() if m["folder"] == "inbox" and not m["trashed"])
    if inbox and rng.random() < 0.7:
        return ToolCall("delete_message", {"message_id": rng.choice(inbox)})
    contacts = sorted(state["contacts"])
    return ToolCall("delete_contact", {"name": rng.choice(contacts)}) if contacts else None


MISTAKES = Mistakes(wrong_argument=wrong_argument, wrong_tool=wrong_tool, destructive=destructive)
