"""back: return to the previous page, as a browser's back button does."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.web.shop import Shop


TOOL = Tool(
    name="back",
    description="Go back to the previous page (an item's option selections are not kept).",
    parameters=object_schema({}),
    function=Shop.back,  # function(shop, **arguments): the shop's own method
)
