"""The MiniWoB adapter's tools, one module each."""

from budgetgym.core import tool_map
from budgetgym.envs.miniwob.tools import click, type

TOOLS = tool_map(click.TOOL, type.TOOL)
