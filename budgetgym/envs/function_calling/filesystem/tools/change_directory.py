"""change_directory: set the folder that relative paths start from."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem


def change_directory(fs: FileSystem, path: str) -> dict:
    folder = fs.resolve(path)
    fs.require_dir(folder)
    fs.state["cwd"] = folder
    return {"cwd": folder}


TOOL = Tool(
    name="change_directory",
    description="Change the current directory; relative paths in later calls start from it.",
    parameters=object_schema({"path": PATH}, ["path"]),
    function=change_directory,
)
