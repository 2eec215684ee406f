"""search_events: events whose title contains a text."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.calendar.backend import Calendar
from budgetgym.core.tools import object_schema


def search_events(cal: Calendar, query: str) -> dict:
    needle = query.lower()
    found = sorted((e for e in cal.events.values() if needle in e["title"].lower()), key=lambda e: (e["date"], e["start"]))
    return {"events": found}


TOOL = Tool(
    name="search_events",
    description="Find events whose title contains a text (case-insensitive), in date order.",
    parameters=object_schema({"query": {"type": "string", "minLength": 1, "maxLength": 100}}, ["query"]),
    function=search_events,
)
