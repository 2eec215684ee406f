"""read_message: a whole message; marks it read."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import MESSAGE_ID, Mailbox


def read_message(box: Mailbox, message_id: str) -> dict:
    message = box.message(message_id)
    message["read"] = True
    return {key: message[key] for key in ("id", "folder", "from", "to", "text")} | {"trashed": message["trashed"]}


TOOL = Tool(
    name="read_message",
    description="Read a whole message by id (this marks it read).",
    parameters=object_schema({"message_id": MESSAGE_ID}, ["message_id"]),
    function=read_message,
)
