"""delete: delete a file or a folder."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem, under


def delete(fs: FileSystem, path: str, recursive: bool = False) -> dict:
    target = fs.resolve(path)
    if target == "/":
        raise ToolError("Cannot delete the root directory")
    if target in fs.files:
        del fs.files[target]
        return {"deleted": target, "files": 1}
    fs.require_dir(target)
    inner_files = [f for f in fs.files if under(f, target)]
    inner_dirs = [d for d in fs.dirs if under(d, target)]
    if (inner_files or inner_dirs) and not recursive:
        raise ToolError(f"Directory not empty: {target} (pass recursive=true to delete it with its contents)")
    for path_ in inner_files:
        del fs.files[path_]
    for folder in inner_dirs + [target]:
        fs.dirs.remove(folder)
    return {"deleted": target, "files": len(inner_files)}


TOOL = Tool(
    name="delete",
    description="Delete a file, or a folder (a non-empty folder only with recursive=true). There is no undo.",
    parameters=object_schema({"path": PATH, "recursive": {"type": "boolean"}}, ["path"]),
    function=delete,
)
