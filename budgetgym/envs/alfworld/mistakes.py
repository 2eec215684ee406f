"""ALFWorld-v0's mistake kinds: the wrong commands a failure state starts from.

Each kind is a function of the planner's intended command, its remaining plan (the commands joined
by ``" | "``) and the other admissible commands, giving the commands that make that mistake here,
each with its description. :meth:`ALFWorldEnv.propose_mistake` draws one of them
(:func:`candidates`); the core's builder (:mod:`budgetgym.core.failures`) keeps the state after it
when the planner still recovers within the full budget. ALFWorld's games are a download, so no
states are shipped: :meth:`ALFWorldEnv.failure_states` builds them from the games there are.
"""

from __future__ import annotations

from typing import Callable


def _wrong_receptacle(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    if not intended.startswith("go to "):
        return []
    return [(c, f"went to the {c[6:]} instead of the {intended[6:]}") for c in admissible
            if c.startswith("go to ") and c[6:] not in later]


def _skipped_ahead(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    # A place the plan goes to later, reached before what has to happen first (empty-handed, say).
    if not intended.startswith("go to "):
        return []
    return [(c, f"went on to the {c[6:]} before what had to be done at the {intended[6:]}") for c in admissible
            if c.startswith("go to ") and c[6:] in later]


def _left_early(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    # Walked off before doing what the plan does here (taking, opening, putting).
    if intended.startswith("go to "):
        return []
    return [(c, f"went to the {c[6:]} before '{intended}'") for c in admissible if c.startswith("go to ")]


def _wrong_object(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    if not intended.startswith("take "):
        return []
    wanted = intended[5:].split(" from ", 1)[0]
    return [(c, f"took the {c[5:].split(' from ', 1)[0]} instead of the {wanted}") for c in admissible
            if c.startswith("take ") and c[5:].split(" from ", 1)[0] not in later]


def _wasted_action(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    # Commands that only show: the state the task's goal reads stays as it was.
    return [(c, f"spent a turn on '{c}', which does not move the task on") for c in admissible
            if c in ("look", "inventory", "help") or (c.startswith("examine ") and c not in later)]


MISTAKES: dict[str, Callable[[str, str, list[str]], list[tuple[str, str]]]] = {
    "wrong_receptacle": _wrong_receptacle,
    "skipped_ahead": _skipped_ahead,
    "left_early": _left_early,
    "wrong_object": _wrong_object,
    "wasted_action": _wasted_action,
}
KINDS: tuple[str, ...] = tuple(MISTAKES)
STATE_CHANGING: tuple[str, ...] = ("wrong_receptacle", "skipped_ahead", "left_early", "wrong_object")
"""The kinds that move the game's facts (where the agent is, what it holds); a look changes none."""


def candidates(kind: str, intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    """The (command, description) pairs of mistake ``kind`` in this state (empty when it does not fit)."""
    return MISTAKES[kind](intended, later, admissible)
