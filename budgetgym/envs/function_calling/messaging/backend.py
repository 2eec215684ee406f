"""The messaging service: contacts, an inbox, sent messages and a trash.

State: ``{"owner": name, "contacts": {name: {"email": ..., "phone": ...}}, "messages": {id: message},
"next_id": int}``; a message is ``{"id", "folder": "inbox"|"sent", "from", "to", "text", "read",
"trashed"}``. Deleting moves a message to the trash (``trashed``), from where it can be restored.
"""

from __future__ import annotations

from typing import Any, Mapping

from budgetgym.core.tools import ToolError

NAME = {"type": "string", "minLength": 1, "maxLength": 100, "description": "The contact's full name, as in the contact list."}
MESSAGE_ID = {"type": "string", "pattern": "^m[0-9]+$", "description": "A message id such as 'm12'."}


class Mailbox:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    @property
    def contacts(self) -> dict[str, dict[str, Any]]:
        return self.state["contacts"]

    @property
    def messages(self) -> dict[str, dict[str, Any]]:
        return self.state["messages"]

    def contact(self, name: str) -> dict[str, Any]:
        found = self.contacts.get(name)
        if found is None:
            close = sorted(c for c in self.contacts if name.lower() in c.lower() or c.lower() in name.lower())
            hint = f" Did you mean: {', '.join(close)}?" if close else " Use find_contact to search."
            raise ToolError(f"No contact named '{name}'.{hint}")
        return found

    def message(self, message_id: str) -> dict[str, Any]:
        found = self.messages.get(message_id)
        if found is None:
            raise ToolError(f"No message with id '{message_id}'")
        return found

    def new_id(self) -> str:
        self.state["next_id"] += 1
        return f"m{self.state['next_id']}"


def summary(message: Mapping[str, Any]) -> dict[str, Any]:
    """How a message appears in a listing: who, the first words, whether it was read."""
    text = message["text"]
    entry = {"id": message["id"], "folder": "trash" if message["trashed"] else message["folder"]}
    entry["from" if message["folder"] == "inbox" else "to"] = message["from" if message["folder"] == "inbox" else "to"]
    entry["preview"] = text if len(text) <= 60 else text[:57] + "..."
    entry["read"] = message["read"]
    return entry


def project(state: Mapping[str, Any]) -> dict[str, Any]:
    """What matters: the contacts, which inbox messages are kept, and what was sent to whom (not ids,
    not read flags)."""
    inbox, sent = [], []
    for message in state["messages"].values():
        if message["trashed"]:
            continue
        if message["folder"] == "inbox":
            inbox.append(message["id"])
        else:
            sent.append([message["to"], message["text"]])
    inbox.sort()
    sent.sort()
    return {"contacts": state["contacts"], "inbox": inbox, "sent": sent}
