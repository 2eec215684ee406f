"""send_message: send a text message to a contact."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import NAME, Mailbox


def send_message(box: Mailbox, to: str, text: str) -> dict:
    box.contact(to)
    message_id = box.new_id()
    box.messages[message_id] = {"id": message_id, "folder": "sent", "from": box.state["owner"], "to": to,
                                "text": text, "read": True, "trashed": False}
    return {"sent": message_id, "to": to}


TOOL = Tool(
    name="send_message",
    description="Send a message to one contact, named exactly as in the contact list.",
    parameters=object_schema({"to": NAME, "text": {"type": "string", "minLength": 1, "maxLength": 2000}}, ["to", "text"]),
    function=send_message,
)
