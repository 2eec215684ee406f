"""move: move or rename a file or a folder (with everything in it)."""

from budgetgym.core import Tool
from budgetgym.core.tools import ToolError, object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem, under


def move(fs: FileSystem, source: str, destination: str) -> dict:
    origin = fs.resolve(source)
    if origin == "/":
        raise ToolError("Cannot move the root directory")
    if not fs.exists(origin):
        raise ToolError(f"No such file or directory: {origin}")
    target = fs.placement(origin, destination)
    if origin in fs.files:
        fs.files[target] = fs.files.pop(origin)
    else:
        if under(target, origin):
            raise ToolError(f"Cannot move a directory into itself: {origin} -> {target}")
        moved_dirs = [d for d in fs.dirs if d == origin or under(d, origin)]
        for folder in moved_dirs:
            fs.dirs.remove(folder)
        for folder in moved_dirs:
            fs.add_dir(target + folder[len(origin):])
        for path in [f for f in fs.files if under(f, origin)]:
            fs.files[target + path[len(origin):]] = fs.files.pop(path)
    return {"moved": origin, "to": target}


TOOL = Tool(
    name="move",
    description=(
        "Move or rename a file or folder. If the destination is an existing folder, the source goes "
        "inside it; otherwise the destination is the new path. Never overwrites."
    ),
    parameters=object_schema({"source": PATH, "destination": PATH}, ["source", "destination"]),
    function=move,
)
