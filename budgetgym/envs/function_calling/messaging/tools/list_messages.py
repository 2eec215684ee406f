"""list_messages: the messages of a folder, newest first."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import Mailbox, summary


def list_messages(box: Mailbox, folder: str = "inbox", unread_only: bool = False, contact: str | None = None) -> dict:
    chosen = []
    for message in box.messages.values():
        where = "trash" if message["trashed"] else message["folder"]
        if where != folder or (unread_only and message["read"]):
            continue
        if contact is not None and contact not in (message["from"], message["to"]):
            continue
        chosen.append(summary(message))
    chosen.sort(key=lambda entry: int(entry["id"][1:]), reverse=True)
    return {"folder": folder, "messages": chosen}


TOOL = Tool(
    name="list_messages",
    description=(
        "List the messages of a folder (inbox, sent or trash), newest first, with a preview; optionally "
        "only unread ones, or only those from or to one contact."
    ),
    parameters=object_schema({
        "folder": {"type": "string", "enum": ["inbox", "sent", "trash"]},
        "unread_only": {"type": "boolean"},
        "contact": {"type": "string", "minLength": 1, "maxLength": 200,
                    "description": "A contact's full name, or a sender's address."},
    }),
    function=list_messages,
)
