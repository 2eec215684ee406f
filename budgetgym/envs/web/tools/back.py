"""back: return to the previous page, as a browser's back button does."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.web.shop import Shop


def back(shop: Shop) -> None:
    shop.back()


TOOL = Tool(
    name="back",
    description="Go back to the previous page (an item's option selections are not kept).",
    parameters=object_schema({}),
    function=back,
)
