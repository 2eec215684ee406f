"""search: look for products in the shop; opens the first results page of the query."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.web.shop import MAX_QUERY_LENGTH, Shop


TOOL = Tool(
    name="search",
    description="Search the shop's catalogue (ranked by relevance); opens the first page of results. "
                "Works from any page.",
    parameters=object_schema({"query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_LENGTH,
                                        "description": "What to look for, e.g. 'organic cotton shirt'."}},
                             ["query"]),
    function=Shop.search,  # function(shop, **arguments): the shop's own method
)
