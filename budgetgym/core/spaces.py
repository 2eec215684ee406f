"""Text spaces for LLM environments.

Gymnasium's :class:`~gymnasium.spaces.Text` admits only alphanumeric characters by default, so
``"go north"`` or a JSON tool call would not be *in* the space. :class:`UnicodeText` keeps the
``Text`` type (so ``gym.make_vec`` still knows how to batch it) but admits any Unicode string up to
``max_length`` characters.

Everywhere Gymnasium reads a ``Text`` through its character table (``flatten``, ``unflatten``,
``flatten_space``, and the shared memory of ``AsyncVectorEnv``), ``UnicodeText`` has its own
function registered (they are ``functools.singledispatch`` functions): a string flattens to its
Unicode code points as ``int32``, padded with ``PAD`` (one past the last code point), so
``gym.make_vec(id, vectorization_mode="async")`` works with Gymnasium's defaults and a lone surrogate
survives the round trip.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Box, Text
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector.utils.shared_memory import read_from_shared_memory, write_to_shared_memory

# Used only by sample(): a readable, printable alphabet. Membership is not limited to it.
_SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "
#: The padding value of a flattened string: one past the last Unicode code point.
PAD = 0x110000
_CODEC = "utf-32-le"


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


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as uint32 (lone surrogates included)."""
    return np.frombuffer(text.encode(_CODEC, "surrogatepass"), dtype="<u4")


def from_code_points(values: np.ndarray) -> str:
    """The string of the code points in ``values``, skipping padding (and anything out of range)."""
    values = np.asarray(values)
    kept = values[(values >= 0) & (values < PAD)]
    return kept.astype("<u4").tobytes().decode(_CODEC, "surrogatepass")


@flatten.register(UnicodeText)
def _flatten_unicode_text(space: UnicodeText, x: str) -> np.ndarray:
    points = code_points(x)
    if len(points) > space.max_length:
        raise ValueError(f"a string of {len(points)} characters does not fit {space!r}")
    flat = np.full(space.max_length, PAD, dtype=np.int32)
    flat[: len(points)] = points
    return flat


@unflatten.register(UnicodeText)
def _unflatten_unicode_text(space: UnicodeText, x: np.ndarray) -> str:
    return from_code_points(x)


@flatten_space.register(UnicodeText)
def _flatten_space_unicode_text(space: UnicodeText) -> Box:
    return Box(low=0, high=PAD, shape=(space.max_length,), dtype=np.int32)


# create_shared_memory and flatdim are Text's own (an int32 array of max_length per env).


class SharedTextBatch(Sequence[str]):
    """The strings of a batch, read from shared memory when accessed.

    ``AsyncVectorEnv`` reads its shared memory once, when it is created, and relies on what it got
    being a live view (for arrays, a numpy view); a tuple of strings decoded then would never change.
    This sequence decodes row ``i`` whenever it is read, and a copy (``AsyncVectorEnv`` returns a deep
    copy by default) is a plain tuple of the strings at that moment.
    """

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(from_code_points(row) for row in self._rows[index])
        return from_code_points(self._rows[index])

    def __copy__(self) -> tuple[str, ...]:
        return tuple(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (tuple, list, SharedTextBatch)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_text_from_shared_memory(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTextBatch:
    return SharedTextBatch(np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length)))


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_text_to_shared_memory(space: UnicodeText, index: int, values: str, shared_memory: Any) -> None:
    size = space.max_length
    destination = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    np.copyto(destination[index * size:(index + 1) * size], _flatten_unicode_text(space, values))
