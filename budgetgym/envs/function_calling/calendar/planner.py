"""The calendar repair planner. Events are matched to the target by title: a stray event whose title
a missing one shares is moved (``reschedule_event``) and its attendees fixed, rather than cancelled
and recreated; stray events with no such twin are cancelled first, to free their time; then the
missing events are created."""

from __future__ import annotations

from collections import Counter
from typing import Any, Collection, Mapping

from budgetgym.core import ToolCall


def plan(state: Mapping[str, Any], target: Mapping[str, Any], tools: Collection[str]) -> ToolCall | None:
    events = sorted(state["events"].values(), key=lambda e: int(e["id"][1:]))
    have = Counter(_key(e) for e in events)
    want = Counter((date, start, end, title, tuple(attendees)) for date, start, end, title, attendees in target["events"])
    surplus = have - want
    strays = []
    for event in events:
        key = _key(event)
        if surplus[key] > 0:
            surplus[key] -= 1
            strays.append(event)
    pairs = []
    for missing in sorted((want - have).elements()):
        twin = next((e for e in strays if e["title"] == missing[3]), None)
        if twin is not None:
            strays.remove(twin)
        pairs.append((missing, twin))
    if strays:
        return ToolCall("cancel_event", {"event_id": strays[0]["id"]})
    # Place first what fits now: an event whose new time is still taken waits until the event in
    # its way has moved (a cycle of swaps would stall, but the tools cannot create one from a target).
    pairs.sort(key=lambda pair: _blocked(events, pair[0], pair[1]))
    for (date, start, end, title, attendees), twin in pairs:
        if twin is None:
            args = {"title": title, "date": date, "start": start, "end": end}
            if attendees:
                args["attendees"] = list(attendees)
            return ToolCall("create_event", args)
        if (twin["date"], twin["start"], twin["end"]) != (date, start, end):
            return ToolCall("reschedule_event", {"event_id": twin["id"], "date": date, "start": start, "end": end})
        for person in attendees:
            if person not in twin["attendees"]:
                return ToolCall("add_attendee", {"event_id": twin["id"], "name": person})
        for person in twin["attendees"]:
            if person not in attendees:
                return ToolCall("remove_attendee", {"event_id": twin["id"], "name": person})
    return None


def _key(event: Mapping[str, Any]) -> tuple:
    return (event["date"], event["start"], event["end"], event["title"], tuple(event["attendees"]))


def _blocked(events: list, wanted: tuple, twin: Mapping[str, Any] | None) -> bool:
    """Whether ``wanted``'s time overlaps an event other than its own twin."""
    date, start, end = wanted[:3]
    ignore = twin["id"] if twin is not None else None
    return any(e["id"] != ignore and e["date"] == date and e["start"] < end and start < e["end"] for e in events)
