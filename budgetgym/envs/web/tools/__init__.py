"""The shop's tools, one module each, in the order the agent sees them."""

from budgetgym.core import tool_map
from budgetgym.envs.web.tools import back, click, next_page, search

TOOLS = tool_map(search.TOOL, click.TOOL, back.TOOL, next_page.TOOL)
