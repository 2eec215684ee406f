"""list_events: the events of one day, in time order."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import DATE, Calendar, weekday
from budgetgym.core.tools import ToolError, object_schema


def list_events(cal: Calendar, date: str) -> dict:
    try:
        day = weekday(date)
    except ValueError:
        raise ToolError(f"Invalid date: {date}") from None
    events = sorted((e for e in cal.events.values() if e["date"] == date), key=lambda e: e["start"])
    return {"date": date, "weekday": day, "events": events}


TOOL = Tool(
    name="list_events",
    description="List the events of one day, in time order, with ids, times and attendees.",
    parameters=object_schema({"date": DATE}, ["date"]),
    function=list_events,
)
