"""delete_contact: remove a contact (messages stay)."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import NAME, Mailbox


def delete_contact(box: Mailbox, name: str) -> dict:
    box.contact(name)
    del box.contacts[name]
    return {"deleted": name}


TOOL = Tool(
    name="delete_contact",
    description="Remove a contact from the contact list. Their messages are kept.",
    parameters=object_schema({"name": NAME}, ["name"]),
    function=delete_contact,
)
