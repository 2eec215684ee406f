"""find_contact: contacts whose name, email or phone contains a text."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import Mailbox


def find_contact(box: Mailbox, query: str) -> dict:
    needle = query.lower()
    return {"contacts": [
        {"name": name, **details} for name, details in sorted(box.contacts.items())
        if needle in name.lower() or needle in details["email"].lower() or needle in (details["phone"] or "")
    ]}


TOOL = Tool(
    name="find_contact",
    description="Search contacts by part of a name, email or phone number (case-insensitive).",
    parameters=object_schema({"query": {"type": "string", "minLength": 1, "maxLength": 100}}, ["query"]),
    function=find_contact,
)
