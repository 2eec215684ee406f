"""remove_attendee: take a person off an event."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import EVENT_ID, PERSON, Calendar
from budgetgym.core.tools import ToolError, object_schema


def remove_attendee(cal: Calendar, event_id: str, name: str) -> dict:
    event = cal.event(event_id)
    if name not in event["attendees"]:
        raise ToolError(f"{name} is not an attendee of {event_id}; attendees: {', '.join(event['attendees']) or 'none'}")
    event["attendees"] = [person for person in event["attendees"] if person != name]
    return {"event_id": event_id, "attendees": event["attendees"]}


TOOL = Tool(
    name="remove_attendee",
    description="Remove a person from an event's attendees.",
    parameters=object_schema({"event_id": EVENT_ID, "name": PERSON}, ["event_id", "name"]),
    function=remove_attendee,
)
