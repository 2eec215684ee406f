"""run_command: a shell command in the sandbox, in the repository's root."""

from budgetgym.core import Tool, object_schema


def run_command(ws, command: str, timeout: int = 30) -> str:
    return ws.run_command(command, timeout)


TOOL = Tool(
    name="run_command",
    description=("Run a shell command (sh) in the repository root inside the sandbox: no network, a read-only "
                 "system, limits on time, memory, processes and file size. Returns its output (long output is "
                 "cut in the middle) and exit code."),
    parameters=object_schema({
        "command": {"type": "string", "minLength": 1, "maxLength": 8192, "description": "The shell command."},
        "timeout": {"type": "integer", "minimum": 1, "maximum": 30, "description": "Seconds before it is stopped (default 30)."},
    }, ["command"]),
    function=run_command,
)
