"""The calendar domain: a week of events with times, attendees and conflict checks."""

from budgetgym.envs.function_calling.calendar.backend import Calendar, project
from budgetgym.envs.function_calling.calendar.generator import TODAY, generate, weekday
from budgetgym.envs.function_calling.calendar.mistakes import MISTAKES
from budgetgym.envs.function_calling.calendar.planner import plan
from budgetgym.envs.function_calling.calendar.tools import TOOLS
from budgetgym.envs.function_calling.domain import Domain

DOMAIN = Domain(
    name="calendar",
    intro=(
        f"You are the calendar assistant of a busy user. Today is {weekday(TODAY)} {TODAY}. You read and "
        "change their calendar only through the tools; the calendar refuses double bookings."
    ),
    backend=Calendar,
    tools=TOOLS,
    project=project,
    plan=plan,
    generate=generate,
    mistakes=MISTAKES,
)
