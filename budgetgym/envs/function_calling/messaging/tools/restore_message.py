"""restore_message: take a message out of the trash."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.messaging.backend import MESSAGE_ID, Mailbox


def restore_message(box: Mailbox, message_id: str) -> dict:
    message = box.message(message_id)
    if not message["trashed"]:
        raise ToolError(f"Message {message_id} is not in the trash")
    message["trashed"] = False
    return {"restored": message_id, "folder": message["folder"]}


TOOL = Tool(
    name="restore_message",
    description="Move a message from the trash back to the folder it came from.",
    parameters=object_schema({"message_id": MESSAGE_ID}, ["message_id"]),
    function=restore_message,
)
