"""list_directory: the folders and files directly inside a folder."""

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema
from budgetgym.envs.function_calling.filesystem.backend import PATH, FileSystem, under


def list_directory(fs: FileSystem, path: str = ".") -> dict:
    folder = fs.resolve(path)
    fs.require_dir(folder)
    prefix = folder.rstrip("/") + "/"
    entries = [{"name": d[len(prefix):], "type": "directory"}
               for d in fs.dirs if under(d, folder) and "/" not in d[len(prefix):]]
    entries += [{"name": f[len(prefix):], "type": "file", "size": len(text)}
                for f, text in fs.files.items() if under(f, folder) and "/" not in f[len(prefix):]]
    entries.sort(key=lambda entry: entry["name"])
    return {"path": folder, "entries": entries}


TOOL = Tool(
    name="list_directory",
    description="List the folders and files directly inside a folder (default: the current one), with file sizes.",
    parameters=object_schema({"path": PATH}),
    function=list_directory,
)
