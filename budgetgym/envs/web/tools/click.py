"""click: click one of the open page's elements (the text shown in square brackets)."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.web.shop import Shop

MAX_ELEMENT_LENGTH = 200


TOOL = Tool(
    name="click",
    description="Click an element of the open page, named by its text in square brackets: an item code on a "
                "results page (P00123), an option value on an item page (m, navy), 'Next >', '< Prev', '< Back', "
                "'Back to Search' or 'Buy Now'. Buying ends the episode.",
    parameters=object_schema({"element": {"type": "string", "minLength": 1, "maxLength": MAX_ELEMENT_LENGTH,
                                          "description": "The element's text, without the brackets."}},
                             ["element"]),
    function=Shop.click,  # function(shop, **arguments): the shop's own method
)
