"""Realistic calendar mistakes for the failure-state generator."""

from __future__ import annotations

import random
from typing import Any, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.calendar.backend import clock, minutes
from budgetgym.envs.function_calling.domain import Mistakes

PEOPLE = ["Dana", "Chen", "Priya", "Marco", "Lena"]


def _shift(args: dict, offset: int) -> dict:
    start, end = minutes(args["start"]) + offset, minutes(args["end"]) + offset
    if not 0 <= start < end < 24 * 60:
        return args
    return {**args, "start": clock(start), "end": clock(end)}


def wrong_argument(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = dict(call.arguments)
    if call.name in ("create_event", "reschedule_event"):
        return ToolCall(call.name, _shift(args, rng.choice([60, -60, 120, 720])))  # am/pm and off-by-an-hour slips
    if call.name == "cancel_event":
        others = sorted(e for e in state["events"] if e != args["event_id"])
        return ToolCall(call.name, {"event_id": rng.choice(others)}) if others else None
    if call.name == "add_attendee":
        event = state["events"].get(args["event_id"], {"attendees": []})
        names = [p for p in PEOPLE if p != args["name"] and p not in event["attendees"]]
        return ToolCall(call.name, {**args, "name": rng.choice(names)}) if names else None
    return None


def wrong_tool(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    if call.name == "reschedule_event" and call.arguments["event_id"] in state["events"]:
        event = state["events"][call.arguments["event_id"]]
        args = {"title": event["title"], "date": call.arguments["date"], "start": call.arguments["start"],
                "end": call.arguments["end"], "attendees": event["attendees"]}
        return ToolCall("create_event", args)  # a second copy at the new time; the old one stays
    if call.name == "add_attendee" and call.arguments["event_id"] in state["events"]:
        event = state["events"][call.arguments["event_id"]]
        if not event["attendees"]:
            return None
        return ToolCall("remove_attendee", {"event_id": event["id"], "name": event["attendees"][0]})
    if call.name == "cancel_event" and call.arguments["event_id"] in state["events"]:
        event = state["events"][call.arguments["event_id"]]
        return ToolCall("reschedule_event", {"event_id": event["id"], "date": event["date"], **_shift(
            {"start": event["start"], "end": event["end"]}, 60)})
    return None


def destructive(state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    events = sorted(state["events"])
    return ToolCall("cancel_event", {"event_id": rng.choice(events)}) if events else None


MISTAKES = Mistakes(wrong_argument=wrong_argument, wrong_tool=wrong_tool, destructive=destructive)
