"""make_directory: create a folder (and, with parents=true, the missing folders above it)."""

import posixpath

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem


def make_directory(fs: FileSystem, path: str, parents: bool = False) -> dict:
    folder = fs.resolve(path)
    if fs.exists(folder):
        raise ToolError(f"Already exists: {folder}")
    missing = [folder]
    parent = posixpath.dirname(folder)
    while not fs.is_dir(parent):
        if parent in fs.files:
            raise ToolError(f"Not a directory: {parent}")
        if not parents:
            raise ToolError(f"No such directory: {parent} (pass parents=true to create it too)")
        missing.append(parent)
        parent = posixpath.dirname(parent)
    for created in reversed(missing):
        fs.add_dir(created)
    return {"created": list(reversed(missing))}


TOOL = Tool(
    name="make_directory",
    description="Create a folder. With parents=true, also create any missing folders above it.",
    parameters=object_schema({"path": PATH, "parents": {"type": "boolean"}}, ["path"]),
    function=make_directory,
)
