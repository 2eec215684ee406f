"""type: focus a page element (a text field) and type text into it."""

from budgetgym.core import Tool, object_schema
from budgetgym.envs.miniwob.tools.click import MAX_REF

MAX_TEXT = 64  # MiniWoB's typing limit (miniwob.constants.TYPING_MAX_LENGTH)


def type_text(page, ref: int, text: str) -> None:
    page.type(ref, text)


TOOL = Tool(
    name="type",
    description="Focus the page element with this reference number (a text field) and type the text into it.",
    parameters=object_schema({"ref": {"type": "integer", "minimum": 1, "maximum": MAX_REF,
                                      "description": "The text field's reference number."},
                              "text": {"type": "string", "maxLength": MAX_TEXT, "description": "What to type."}},
                             ["ref", "text"]),
    function=type_text,
)
