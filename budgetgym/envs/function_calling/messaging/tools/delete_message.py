"""delete_message: move a message to the trash."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.messaging.backend import MESSAGE_ID, Mailbox


def delete_message(box: Mailbox, message_id: str) -> dict:
    message = box.message(message_id)
    if message["trashed"]:
        raise ToolError(f"Message {message_id} is already in the trash")
    message["trashed"] = True
    return {"trashed": message_id}


TOOL = Tool(
    name="delete_message",
    description="Move a message (received or sent) to the trash. restore_message brings it back.",
    parameters=object_schema({"message_id": MESSAGE_ID}, ["message_id"]),
    function=delete_message,
)
