"""add_contact: a new contact."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.messaging.backend import NAME, Mailbox

EMAIL = {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$", "maxLength": 200}
PHONE = {"type": "string", "pattern": "^\\+?[0-9 ()-]{6,20}$"}


def add_contact(box: Mailbox, name: str, email: str, phone: str | None = None) -> dict:
    if name in box.contacts:
        raise ToolError(f"A contact named '{name}' already exists; use update_contact to change it")
    box.contacts[name] = {"email": email, "phone": phone}
    return {"added": name}


TOOL = Tool(
    name="add_contact",
    description="Add a new contact with an email address and, optionally, a phone number.",
    parameters=object_schema({"name": NAME, "email": EMAIL, "phone": PHONE}, ["name", "email"]),
    function=add_contact,
)
