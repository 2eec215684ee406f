"""create_file: write a whole file."""

from budgetgym.core import Tool, ToolError, object_schema


def create_file(ws, path: str, content: str, overwrite: bool = False) -> str:
    if ws.exists(path) and not overwrite:
        raise ToolError(f"{path} already exists; pass overwrite=true to replace its whole content")
    ws.write_text(path, content)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    return f"Wrote {path} ({lines} lines, {len(content.encode('utf-8'))} bytes)."


TOOL = Tool(
    name="create_file",
    description="Create a file with the given content (folders are made as needed). An existing file is only "
                "replaced with overwrite=true.",
    parameters=object_schema({
        "path": {"type": "string", "minLength": 1, "description": "Path relative to the repository root."},
        "content": {"type": "string", "maxLength": 1_000_000, "description": "The whole content of the file."},
        "overwrite": {"type": "boolean", "description": "Replace the file if it exists (default false)."},
    }, ["path", "content"]),
    function=create_file,
)
