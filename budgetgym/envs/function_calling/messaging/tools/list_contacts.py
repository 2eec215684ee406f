"""list_contacts: every contact with email and phone."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import Mailbox


def list_contacts(box: Mailbox) -> dict:
    return {"contacts": [{"name": name, **details} for name, details in sorted(box.contacts.items())]}


TOOL = Tool(
    name="list_contacts",
    description="List all contacts with their email and phone number.",
    parameters=object_schema({}),
    function=list_contacts,
)
