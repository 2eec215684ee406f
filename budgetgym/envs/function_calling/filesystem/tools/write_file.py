"""write_file: create a file, replace its text, or append to it."""

import posixpath

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem


def write_file(fs: FileSystem, path: str, content: str, append: bool = False) -> dict:
    target = fs.resolve(path)
    if fs.is_dir(target):
        raise ToolError(f"Is a directory: {target}")
    fs.require_dir(posixpath.dirname(target))
    created = target not in fs.files
    fs.files[target] = (fs.files.get(target, "") + content) if append else content
    return {"path": target, "size": len(fs.files[target]), "created": created}


TOOL = Tool(
    name="write_file",
    description=(
        "Write text to a file, creating it if needed (its folder must exist). Replaces the file's "
        "text, or with append=true adds to the end (include a leading newline to start a new line)."
    ),
    parameters=object_schema(
        {"path": PATH, "content": {"type": "string", "maxLength": 65536}, "append": {"type": "boolean"}},
        ["path", "content"],
    ),
    function=write_file,
)
