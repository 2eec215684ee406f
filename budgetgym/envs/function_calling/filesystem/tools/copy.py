"""copy: copy a file."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem


def copy(fs: FileSystem, source: str, destination: str) -> dict:
    origin = fs.resolve(source)
    if fs.is_dir(origin):
        raise ToolError(f"Is a directory: {origin} (copy copies files only)")
    fs.require_file(origin)
    target = fs.placement(origin, destination)
    fs.files[target] = fs.files[origin]
    return {"copied": origin, "to": target}


TOOL = Tool(
    name="copy",
    description=(
        "Copy a file. If the destination is an existing folder, the copy goes inside it with the same "
        "name; otherwise the destination is the new file's path. Never overwrites."
    ),
    parameters=object_schema({"source": PATH, "destination": PATH}, ["source", "destination"]),
    function=copy,
)
