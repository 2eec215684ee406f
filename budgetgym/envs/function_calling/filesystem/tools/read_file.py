"""read_file: the text of a file."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem


def read_file(fs: FileSystem, path: str) -> dict:
    target = fs.resolve(path)
    fs.require_file(target)
    return {"path": target, "content": fs.files[target]}


TOOL = Tool(
    name="read_file",
    description="Read the whole text of a file.",
    parameters=object_schema({"path": PATH}, ["path"]),
    function=read_file,
)
