"""find_files: search a folder tree by file name pattern and/or by text the file contains."""

import fnmatch
import posixpath

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem, under

MAX_MATCHES = 50


def find_files(fs: FileSystem, path: str = "/", name: str | None = None, contains: str | None = None) -> dict:
    if name is None and contains is None:
        raise ToolError("Give a name pattern, a text to look for, or both")
    folder = fs.resolve(path)
    fs.require_dir(folder)
    needle = contains.lower() if contains is not None else None
    matches = sorted(
        f for f, text in fs.files.items()
        if under(f, folder)
        and (name is None or fnmatch.fnmatchcase(posixpath.basename(f), name))
        and (needle is None or needle in text.lower())
    )
    return {"matches": matches[:MAX_MATCHES], "total": len(matches)}


TOOL = Tool(
    name="find_files",
    description=(
        "Find files under a folder (default '/'), by name pattern (shell style, e.g. '*.txt') and/or "
        "by text the file contains (case-insensitive). Returns full paths."
    ),
    parameters=object_schema({
        "path": PATH,
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "contains": {"type": "string", "minLength": 1, "maxLength": 200},
    }),
    function=find_files,
)
