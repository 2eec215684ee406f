"""reschedule_event: move an event to another date and time."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import DATE, EVENT_ID, TIME, Calendar
from budgetgym.core.tools import object_schema


def reschedule_event(cal: Calendar, event_id: str, date: str, start: str, end: str) -> dict:
    event = cal.event(event_id)
    cal.check_slot(date, start, end, ignore=event_id)
    event.update(date=date, start=start, end=end)
    return {"rescheduled": event}


TOOL = Tool(
    name="reschedule_event",
    description="Move an event to a new date and time range. Refused if the new time overlaps another event.",
    parameters=object_schema({"event_id": EVENT_ID, "date": DATE, "start": TIME, "end": TIME},
                             ["event_id", "date", "start", "end"]),
    function=reschedule_event,
)
