"""Roman numerals."""

from roman.convert import from_roman, is_valid, to_roman
from roman.arithmetic import add, subtract, total

__all__ = ["add", "from_roman", "is_valid", "subtract", "to_roman", "total"]
