"""Text spaces for LLM environments.

Gymnasium's :class:`~gymnasium.spaces.Text` admits only alphanumeric characters by default, so
``"go north"`` or a JSON tool call would not be *in* the space. :class:`UnicodeText` keeps the
``Text`` type (so ``gym.make_vec`` still knows how to batch it) but admits any Unicode string up to
``max_length`` characters.
"""

from __future__ import annotations

import string
from typing import Any

from gymnasium.spaces import Text

# Used only by sample(): a readable, printable alphabet. Membership is not limited to it.
_SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "


class UnicodeText(Text):
    """Any ``str`` with ``min_length <= len(s) <= max_length``; ``sample()`` draws printable ASCII."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and other.min_length == self.min_length
            and other.max_length == self.max_length
        )
