"""click: click a page element by its reference number."""

from budgetgym.core import Tool, object_schema

MAX_REF = 1_000_000  # MiniWoB's own bound on element references


def click(page, ref: int) -> None:
    page.click(ref)


TOOL = Tool(
    name="click",
    description="Click the page element with this reference number (the [n] before it on the page).",
    parameters=object_schema({"ref": {"type": "integer", "minimum": 1, "maximum": MAX_REF,
                                      "description": "The element's reference number."}}, ["ref"]),
    function=click,
)
