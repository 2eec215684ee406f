"""create_event: a new event, refused when it overlaps another."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import DATE, PERSON, TIME, Calendar
from budgetgym.core.tools import object_schema


def create_event(cal: Calendar, title: str, date: str, start: str, end: str, attendees: list[str] | None = None) -> dict:
    cal.check_slot(date, start, end)
    cal.state["next_id"] += 1
    event_id = f"e{cal.state['next_id']}"
    cal.events[event_id] = {"id": event_id, "title": title, "date": date, "start": start, "end": end,
                            "attendees": sorted(set(attendees or ()))}
    return {"created": cal.events[event_id]}


TOOL = Tool(
    name="create_event",
    description="Create an event. Refused if it overlaps an existing event or lies in the past.",
    parameters=object_schema({
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "date": DATE, "start": TIME, "end": TIME,
        "attendees": {"type": "array", "items": PERSON, "maxItems": 50},
    }, ["title", "date", "start", "end"]),
    function=create_event,
)
