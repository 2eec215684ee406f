"""find_free_slots: the free gaps of a day long enough for a meeting."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import DATE, TIME, Calendar, clock, minutes, weekday
from budgetgym.core.tools import ToolError, object_schema


def find_free_slots(cal: Calendar, date: str, duration_minutes: int, earliest: str = "09:00", latest: str = "18:00") -> dict:
    try:
        weekday(date)
    except ValueError:
        raise ToolError(f"Invalid date: {date}") from None
    if minutes(earliest) >= minutes(latest):
        raise ToolError(f"'latest' ({latest}) must be after 'earliest' ({earliest})")
    busy = sorted((minutes(e["start"]), minutes(e["end"])) for e in cal.events.values() if e["date"] == date)
    free, cursor, stop = [], minutes(earliest), minutes(latest)
    for start, end in busy + [(stop, stop)]:
        if min(start, stop) - cursor >= duration_minutes:
            free.append({"start": clock(cursor), "end": clock(min(start, stop))})
        cursor = max(cursor, end)
    return {"date": date, "duration_minutes": duration_minutes, "free": free}


TOOL = Tool(
    name="find_free_slots",
    description=(
        "List the free gaps of a day (between 'earliest' and 'latest', default 09:00-18:00) that are at "
        "least duration_minutes long. A meeting fits from a gap's start."
    ),
    parameters=object_schema({
        "date": DATE, "duration_minutes": {"type": "integer", "minimum": 5, "maximum": 720},
        "earliest": TIME, "latest": TIME,
    }, ["date", "duration_minutes"]),
    function=find_free_slots,
)
