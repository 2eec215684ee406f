"""search_messages: messages (any folder) whose text contains a phrase."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.messaging.backend import Mailbox, summary


def search_messages(box: Mailbox, query: str) -> dict:
    needle = query.lower()
    found = [summary(m) for m in box.messages.values() if needle in m["text"].lower()]
    found.sort(key=lambda entry: int(entry["id"][1:]), reverse=True)
    return {"messages": found}


TOOL = Tool(
    name="search_messages",
    description="Find messages in any folder whose text contains a phrase (case-insensitive), newest first.",
    parameters=object_schema({"query": {"type": "string", "minLength": 1, "maxLength": 200}}, ["query"]),
    function=search_messages,
)
