"""cancel_event: remove an event."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import EVENT_ID, Calendar
from budgetgym.core.tools import object_schema


def cancel_event(cal: Calendar, event_id: str) -> dict:
    event = cal.event(event_id)
    del cal.events[event_id]
    return {"cancelled": event}


TOOL = Tool(
    name="cancel_event",
    description="Cancel (remove) an event by id.",
    parameters=object_schema({"event_id": EVENT_ID}, ["event_id"]),
    function=cancel_event,
)
