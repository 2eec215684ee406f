"""The file system's tools, one module each, in the order the agent sees them."""

from budgetgym.core.tools import tool_map
from budgetgym.envs.function_calling.filesystem.tools import (
    change_directory, copy, delete, find_files, list_directory, make_directory, move, read_file, write_file,
)

TOOLS = tool_map(
    list_directory.TOOL, change_directory.TOOL, read_file.TOOL, write_file.TOOL, make_directory.TOOL,
    move.TOOL, copy.TOOL, delete.TOOL, find_files.TOOL,
)
#: The tools that only read (the exploit probe's read-only sweep calls them).
READ_ONLY = frozenset({"list_directory", "read_file", "find_files"})
