"""add_attendee: invite one more person to an event."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import EVENT_ID, PERSON, Calendar
from budgetgym.core.tools import ToolError, object_schema


def add_attendee(cal: Calendar, event_id: str, name: str) -> dict:
    event = cal.event(event_id)
    if name in event["attendees"]:
        raise ToolError(f"{name} is already invited to {event_id}")
    event["attendees"] = sorted(event["attendees"] + [name])
    return {"event_id": event_id, "attendees": event["attendees"]}


TOOL = Tool(
    name="add_attendee",
    description="Add a person to an event's attendees.",
    parameters=object_schema({"event_id": EVENT_ID, "name": PERSON}, ["event_id", "name"]),
    function=add_attendee,
)
