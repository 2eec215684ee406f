"""command: one text command to the game (``go north``, ``take key``, ``open chest``)."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema

MAX_COMMAND_BYTES = 198  # the Z-machine's input buffer (Jericho cuts longer input)


def command(env, command: str) -> str:
    """Send ``command`` to ``env``'s game; the env answers with the game's text."""
    return env.send(command)


TOOL = Tool(
    name="command",
    description="Type one command into the text game, e.g. 'go north', 'take brass key', 'unlock door with "
                "brass key', 'put apple on table'. The commands the game accepts now are in "
                "info['admissible_actions'].",
    parameters=object_schema({"command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_BYTES,
                                          "pattern": "^[^\\n\\r]*$"}}, ["command"]),
    function=command,
)
