"""The calendar's tools, one module each, in the order the agent sees them."""

from budgetgym.envs.function_calling.calendar.tools import (
    add_attendee, cancel_event, create_event, find_free_slots, list_events, remove_attendee, reschedule_event,
    search_events,
)
from budgetgym.core.tools import tool_map

TOOLS = tool_map(
    list_events.TOOL, search_events.TOOL, find_free_slots.TOOL, create_event.TOOL, reschedule_event.TOOL,
    cancel_event.TOOL, add_attendee.TOOL, remove_attendee.TOOL,
)
#: The tools that only read (the exploit probe's read-only sweep calls them).
READ_ONLY = frozenset({"list_events", "search_events", "find_free_slots"})
