"""type: focus a page element (a text field) and type text into it.

The text goes to ChromeDriver as key presses, so ``text_error`` refuses, before anything reaches the
browser, what is not text to type: a lone surrogate (Selenium raised ``InvalidArgumentException``
out of ``step``), NUL and the other C0 controls (a newline is the Enter key, a tab moves the focus),
and the Private Use Area from U+E000, where WebDriver keeps its special keys (U+E007 is Enter,
U+E03D the Meta key). The type tool checks a call with ``text_error`` as part of its validation, so
refused text is an invalid action: the turn is spent and the page is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from budgetgym.core import Tool, object_schema
from budgetgym.envs.miniwob.tools.click import MAX_REF

MAX_TEXT = 64  # MiniWoB's typing limit (miniwob.constants.TYPING_MAX_LENGTH)
_NOT_TYPABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff\ue000-\uf8ff]")


def text_error(text: str) -> str | None:
    """Why ``text`` is refused before it is typed, or None (see the module docstring)."""
    bad = _NOT_TYPABLE.search(text)
    if bad is None:
        return None
    return (f"the text holds the character {ascii(bad.group())} at position {bad.start()}, which is not text to "
            "type (a control character, a lone surrogate or one of WebDriver's special keys); type printable text")


def type_text(page, ref: int, text: str) -> None:
    page.type(ref, text)


class TypeTool(Tool):
    """The ``type`` tool: its schema, then ``text_error``, decide whether a call is valid."""

    def validation_error(self, arguments: Any) -> str | None:
        problem = super().validation_error(arguments)
        if problem is None:
            problem = text_error(arguments["text"])
        return problem

    def __reduce__(self) -> str:
        return "TOOL"  # pickled by reference: the module's one instance


TOOL = TypeTool(
    name="type",
    description="Focus the page element with this reference number (a text field) and type the text into it.",
    parameters=object_schema({"ref": {"type": "integer", "minimum": 1, "maximum": MAX_REF,
                                      "description": "The text field's reference number."},
                              "text": {"type": "string", "maxLength": MAX_TEXT, "description": "What to type."}},
                             ["ref", "text"]),
    function=type_text,
)
