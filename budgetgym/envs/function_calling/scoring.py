"""Scoring one user turn: the state must match the expected one on the fields that matter, and the
agent's message must carry the facts the user asked for (and, where the request cannot be done, say
so). Exact and cheap: one projection, one dict comparison, a few regular expressions.

Facts are only what the request asks for (a balance, a path, a time); for an ambiguous request they
are the candidates, so a good clarifying question names them. Numbers are matched by value, other
facts as whole, case-insensitive words."""

from __future__ import annotations

import functools
import re
from typing import Any, Mapping

from budgetgym.envs.function_calling.domain import Domain

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_NUMERIC_FACT = re.compile(r"-?\d+(?:\.\d+)?")
# Ways of saying "I can't do that" (or "it would fail"), so an impossible request is declined, not faked.
_DECLINE = re.compile(
    r"\b(?:can ?not|can'?t|couldn'?t|won'?t be able|unable|not able|not possible|impossible"
    r"|no (?:tool|way|option|function|ability)|don'?t have|do not have|isn'?t (?:possible|supported)"
    r"|not supported|unavailable|not something i can|insufficient|not enough|conflicts?|sorry|unfortunately)\b",
    re.IGNORECASE,
)


def numbers_in(text: str) -> set[float]:
    """Every number written in ``text`` ("$1,250.00" -> 1250.0)."""
    found = set()
    for token in _NUMBER.findall(text):
        try:
            found.add(float(token.replace(",", "")))
        except ValueError:
            continue
    return found


def has_fact(message: str, fact: str | list[str]) -> bool:
    """Whether ``message`` states ``fact`` (any of its alternatives when it is a list).

    A numeric fact matches any number of equal value ("1250" matches "$1,250.00"); any other fact
    matches case-insensitively as a whole token ("Sam Lee" does not match "Sam Leeds")."""
    return _has_fact(message, fact, None)


def _has_fact(message: str, fact: str | list[str], numbers: list[set[float]] | None) -> bool:
    # ``numbers``: a one-slot memo of numbers_in(message), shared by the facts of one answer.
    values, words = _fact_matcher(tuple(fact) if isinstance(fact, list) else (fact,))
    if words is not None and words.search(message):
        return True
    if values:
        if numbers is None:
            numbers = []
        if not numbers:
            numbers.append(numbers_in(message))
        return not values.isdisjoint(numbers[0])
    return False


@functools.lru_cache(maxsize=4096)
def _fact_matcher(alternatives: tuple[str, ...]) -> tuple[frozenset[float], re.Pattern[str] | None]:
    """A fact's numeric alternatives as values, and its other alternatives as one pattern (an
    alternation tries every alternative at every position, as one search per alternative would)."""
    values = frozenset(float(a) for a in alternatives if _NUMERIC_FACT.fullmatch(a))
    words = [re.escape(a) for a in alternatives if not _NUMERIC_FACT.fullmatch(a)]
    pattern = re.compile(rf"(?<!\w)(?:{'|'.join(words)})(?!\w)", re.IGNORECASE) if words else None
    return values, pattern


def declines(message: str) -> bool:
    """Whether the message tells the user that the request cannot be done."""
    return _DECLINE.search(message) is not None


def turn_problem(domain: Domain, state: Mapping[str, Any], turn: Mapping[str, Any], message: str) -> str | None:
    """What the user finds wrong with the answer to ``turn``, or None when the turn is done."""
    if domain.project(state) != turn["expected"]:
        if turn.get("decline"):
            return "I didn't want anything changed for that request, but things have changed."
        return "That isn't right yet: what I asked for isn't all done, or something else was changed."
    if turn.get("decline") and not declines(message):
        return "Can that actually be done? Please tell me plainly."
    numbers: list[set[float]] = []
    missing = [fact for fact in turn.get("facts", ()) if not _has_fact(message, fact, numbers)]
    if missing:
        return "You haven't told me what I asked for."
    return None
