"""view_file: numbered lines of a file."""

from budgetgym.core import Tool, ToolError, object_schema

MAX_LINES = 200


def view_file(ws, path: str, start_line: int = 1, end_line: int | None = None) -> str:
    text = ws.read_text(path)
    lines = text.splitlines()
    if not lines:
        return f"{path} is empty."
    if start_line > len(lines):
        raise ToolError(f"{path} has {len(lines)} lines; start_line {start_line} is past the end")
    last = len(lines) if end_line is None else min(end_line, len(lines))
    if last < start_line:
        raise ToolError(f"end_line {end_line} is before start_line {start_line}")
    last = min(last, start_line + MAX_LINES - 1)
    width = len(str(last))
    body = "\n".join(f"{number:>{width}} | {lines[number - 1]}" for number in range(start_line, last + 1))
    more = f"\n[{len(lines) - last} more lines]" if last < len(lines) else ""
    return f"{path} (lines {start_line}-{last} of {len(lines)}):\n{body}{more}"


TOOL = Tool(
    name="view_file",
    description=f"Show a file's lines with line numbers, at most {MAX_LINES} at a time.",
    parameters=object_schema({
        "path": {"type": "string", "minLength": 1, "description": "Path relative to the repository root."},
        "start_line": {"type": "integer", "minimum": 1, "description": "First line (default 1)."},
        "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive (default: the end)."},
    }, ["path"]),
    function=view_file,
)
