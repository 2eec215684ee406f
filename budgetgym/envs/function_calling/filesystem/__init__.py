"""The file system domain: folders and text files, moved, copied, searched, read and written."""

from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.filesystem.backend import FileSystem, project
from budgetgym.envs.function_calling.filesystem.generator import generate
from budgetgym.envs.function_calling.filesystem.mistakes import MISTAKES
from budgetgym.envs.function_calling.filesystem.planner import plan
from budgetgym.envs.function_calling.filesystem.tools import TOOLS

DOMAIN = Domain(
    name="filesystem",
    intro=(
        "You are the file assistant of a user's home folder. The user talks to you in plain text; "
        "you work on the files only through the tools. The current directory is /."
    ),
    backend=FileSystem,
    tools=TOOLS,
    project=project,
    plan=plan,
    generate=generate,
    mistakes=MISTAKES,
)
