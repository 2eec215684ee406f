"""The calendar service: events with a date, a time range and attendees; no double booking.

State: ``{"today": "YYYY-MM-DD", "events": {id: event}, "next_id": int}``; an event is
``{"id", "title", "date", "start": "HH:MM", "end": "HH:MM", "attendees": [sorted names]}``.
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

from budgetgym.core.tools import ToolError

DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "YYYY-MM-DD"}
TIME = {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$", "description": "24-hour HH:MM"}
EVENT_ID = {"type": "string", "pattern": "^e[0-9]+$", "description": "An event id such as 'e4'."}
PERSON = {"type": "string", "minLength": 1, "maxLength": 100}


def minutes(clock: str) -> int:
    return int(clock[:2]) * 60 + int(clock[3:])


def clock(total: int) -> str:
    return f"{total // 60:02d}:{total % 60:02d}"


class Calendar:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    @property
    def events(self) -> dict[str, dict[str, Any]]:
        return self.state["events"]

    def event(self, event_id: str) -> dict[str, Any]:
        found = self.events.get(event_id)
        if found is None:
            raise ToolError(f"No event with id '{event_id}'")
        return found

    def check_slot(self, date: str, start: str, end: str, ignore: str | None = None) -> None:
        """Refuse an impossible or double-booked time range (``ignore``: the event being moved)."""
        try:
            datetime.date.fromisoformat(date)
        except ValueError:
            raise ToolError(f"Invalid date: {date}") from None
        if date < self.state["today"]:
            raise ToolError(f"Cannot schedule in the past: {date} is before today ({self.state['today']})")
        if minutes(start) >= minutes(end):
            raise ToolError(f"The end ({end}) must be after the start ({start})")
        for other in sorted(self.events.values(), key=lambda e: (e["start"], e["id"])):
            if other["id"] != ignore and other["date"] == date and other["start"] < end and start < other["end"]:
                raise ToolError(
                    f"Conflicts with {other['id']} '{other['title']}' {other['start']}-{other['end']} on {date}"
                )


def weekday(date: str) -> str:
    return datetime.date.fromisoformat(date).strftime("%A")


def project(state: Mapping[str, Any]) -> dict[str, Any]:
    """What matters: each event's date, times, title and attendees (not the ids)."""
    return {"events": sorted([e["date"], e["start"], e["end"], e["title"], e["attendees"]] for e in state["events"].values())}
