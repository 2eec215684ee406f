"""update_contact: change a contact's email and/or phone."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.messaging.backend import NAME, Mailbox
from budgetgym.envs.function_calling.messaging.tools.add_contact import EMAIL, PHONE


def update_contact(box: Mailbox, name: str, email: str | None = None, phone: str | None = None) -> dict:
    if email is None and phone is None:
        raise ToolError("Nothing to update: give a new email, a new phone, or both")
    contact = box.contact(name)
    if email is not None:
        contact["email"] = email
    if phone is not None:
        contact["phone"] = phone
    return {"updated": name, **contact}


TOOL = Tool(
    name="update_contact",
    description="Change the email address and/or phone number of an existing contact.",
    parameters=object_schema({"name": NAME, "email": EMAIL, "phone": PHONE}, ["name"]),
    function=update_contact,
)
