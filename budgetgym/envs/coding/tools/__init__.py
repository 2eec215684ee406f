"""The coding tools, one a file, each with its JSON Schema beside its code. Every tool function
takes the episode's workspace (a :class:`budgetgym.envs.coding.workspace.SandboxWorkspace`: Coding-v0's
``Workspace`` or SWEBench-v0's ``RepoWorkspace``) and returns the observation text; a :class:`budgetgym.core.ToolError` is a refused call that changed nothing."""

from typing import Any

from budgetgym.core import Action, ToolCall, tool_map
from budgetgym.envs.coding.tools.create_file import TOOL as CREATE_FILE
from budgetgym.envs.coding.tools.replace_in_file import TOOL as REPLACE_IN_FILE
from budgetgym.envs.coding.tools.run_command import TOOL as RUN_COMMAND
from budgetgym.envs.coding.tools.run_tests import TOOL as RUN_TESTS
from budgetgym.envs.coding.tools.search import TOOL as SEARCH
from budgetgym.envs.coding.tools.submit import TOOL as SUBMIT
from budgetgym.envs.coding.tools.view_file import TOOL as VIEW_FILE

TOOLS = tool_map(RUN_COMMAND, VIEW_FILE, SEARCH, REPLACE_IN_FILE, CREATE_FILE, RUN_TESTS, SUBMIT)



def call(name: str, **arguments: Any) -> Action:
    """The action of one call of the coding tool ``name`` (the oracle's and the mistakes' actions)."""
    return Action((ToolCall(name, arguments),))


__all__ = ["TOOLS", "call"]
