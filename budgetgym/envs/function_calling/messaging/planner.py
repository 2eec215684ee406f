"""The messaging repair planner: the next call that brings contacts, inbox and sent messages to the
target. Contacts are added or fixed first (sending needs them), then inbox messages are restored from
or moved to the trash, then sent messages are restored, sent or trashed, and last stray contacts go."""

from __future__ import annotations

from collections import Counter
from typing import Any, Collection, Mapping

from budgetgym.core import ToolCall


def plan(state: Mapping[str, Any], target: Mapping[str, Any], tools: Collection[str]) -> ToolCall | None:
    contacts, wanted_contacts = state["contacts"], target["contacts"]
    for name in sorted(wanted_contacts):
        want = wanted_contacts[name]
        have = contacts.get(name)
        if have is None:
            args = {"name": name, "email": want["email"]}
            if want["phone"] is not None:
                args["phone"] = want["phone"]
            return ToolCall("add_contact", args)
        if have != want:
            changes = {key: want[key] for key in ("email", "phone") if have[key] != want[key] and want[key] is not None}
            if changes:
                return ToolCall("update_contact", {"name": name, **changes})

    messages = state["messages"]
    kept = set(target["inbox"])
    for message_id in sorted(kept, key=_number):
        if messages[message_id]["trashed"]:
            return ToolCall("restore_message", {"message_id": message_id})
    for message in messages.values():
        if message["folder"] == "inbox" and not message["trashed"] and message["id"] not in kept:
            return ToolCall("delete_message", {"message_id": message["id"]})

    sent = Counter((m["to"], m["text"]) for m in messages.values() if m["folder"] == "sent" and not m["trashed"])
    wanted_sent = Counter((to, text) for to, text in target["sent"])
    for to, text in sorted((wanted_sent - sent).elements()):
        trashed = [m for m in messages.values() if m["folder"] == "sent" and m["trashed"] and (m["to"], m["text"]) == (to, text)]
        if trashed:
            return ToolCall("restore_message", {"message_id": trashed[0]["id"]})
        return ToolCall("send_message", {"to": to, "text": text})
    for to, text in sorted((sent - wanted_sent).elements()):
        extra = max((m for m in messages.values() if m["folder"] == "sent" and not m["trashed"]
                     and (m["to"], m["text"]) == (to, text)), key=lambda m: _number(m["id"]))
        return ToolCall("delete_message", {"message_id": extra["id"]})

    for name in sorted(contacts):
        if name not in wanted_contacts:
            return ToolCall("delete_contact", {"name": name})
    return None


def _number(message_id: str) -> int:
    return int(message_id[1:])
