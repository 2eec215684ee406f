"""The messaging app's tools, one module each, in the order the agent sees them."""

from budgetgym.core.tools import tool_map
from budgetgym.envs.function_calling.messaging.tools import (
    add_contact, delete_contact, delete_message, find_contact, list_contacts, list_messages, read_message,
    restore_message, search_messages, send_message, update_contact,
)

TOOLS = tool_map(
    list_contacts.TOOL, find_contact.TOOL, add_contact.TOOL, update_contact.TOOL, delete_contact.TOOL,
    list_messages.TOOL, read_message.TOOL, search_messages.TOOL, send_message.TOOL, delete_message.TOOL,
    restore_message.TOOL,
)
#: The tools that only read (the exploit probe's read-only sweep calls them); read_message marks a
#: message read, which the scoring ignores.
READ_ONLY = frozenset({"find_contact", "list_contacts", "list_messages", "read_message", "search_messages"})
