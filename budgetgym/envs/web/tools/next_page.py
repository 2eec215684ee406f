"""next_page: on a results page, show the next ten results."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.web.shop import Shop


TOOL = Tool(
    name="next_page",
    description="On a results page, open the next page of results (the same as clicking 'Next >').",
    parameters=object_schema({}),
    function=Shop.next_page,  # function(shop, **arguments): the shop's own method
)
