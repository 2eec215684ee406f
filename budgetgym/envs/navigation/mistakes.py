"""Navigation-v0's mistake kinds: the wrong commands a failure state starts from.

Each kind is a function of the oracle's intended command, its remaining plan (the commands joined
by ``" | "``) and the other admissible commands, giving the commands that make that mistake here,
each with its description. :meth:`NavigationEnv.propose_mistake` draws one of them
(:func:`candidates`); the core's builder (:mod:`budgetgym.core.failures`) keeps the state after it
when the oracle still recovers (``python -m budgetgym.envs.navigation.assets --failures-only``).
"""

from __future__ import annotations

from typing import Callable


def _objects_in(command: str) -> list[str]:
    """The object names of a TextWorld command ('take key from table' -> ['key', 'table'])."""
    words = command.split(" ", 1)
    if len(words) < 2:
        return []
    rest = words[1]
    for joint in (" from ", " with ", " on ", " into "):
        if joint in rest:
            return [part.strip() for part in rest.split(joint, 1)]
    return [rest.strip()]


def _wrong_direction(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    if not intended.startswith("go "):
        return []
    return [(c, f"went {c[3:]} instead of {intended[3:]}") for c in admissible if c.startswith("go ")]


def _needed_object_dropped(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    return [(c, f"dropped the {c[5:]}, which the task still needs") for c in admissible
            if c.startswith("drop ") and c[5:] in later]


def _wrong_object_taken(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    if not intended.startswith("take "):
        return []
    wanted = _objects_in(intended)[0]
    return [(c, f"took the {_objects_in(c)[0]} instead of the {wanted}") for c in admissible
            if c.startswith("take ") and _objects_in(c)[0] not in later]


def _door_closed(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    found = []
    for c in admissible:
        if c.startswith("close ") and c[6:] in later:
            found.append((c, f"closed the {c[6:]}, which the way ahead needs open"))
        elif c.startswith("lock ") and _objects_in(c)[0] in later:
            found.append((c, f"locked the {_objects_in(c)[0]}, which the way ahead needs unlocked"))
    return found


def _distractor_chased(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    found = []
    for c in admissible:
        verb = c.split(" ", 1)[0]
        if verb in ("take", "open") and all(o not in later for o in _objects_in(c)):
            found.append((c, f"chased a distractor: {'took' if verb == 'take' else 'opened'} the "
                             f"{_objects_in(c)[0]}, which the task does not need"))
    return found


def _wrong_place(intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    if not intended.startswith(("put ", "insert ")):
        return []
    thing, place = _objects_in(intended)
    return [(c, f"put the {thing} on or into the {_objects_in(c)[1]} instead of the {place}") for c in admissible
            if c.startswith(("put ", "insert ")) and _objects_in(c)[0] == thing and _objects_in(c)[1] != place]


MISTAKES: dict[str, Callable[[str, str, list[str]], list[tuple[str, str]]]] = {
    "wrong_direction": _wrong_direction,
    "needed_object_dropped": _needed_object_dropped,
    "wrong_object_taken": _wrong_object_taken,
    "door_closed": _door_closed,
    "distractor_chased": _distractor_chased,
    "wrong_place": _wrong_place,
}
KINDS: tuple[str, ...] = tuple(MISTAKES)


def candidates(kind: str, intended: str, later: str, admissible: list[str]) -> list[tuple[str, str]]:
    """The (command, description) pairs of mistake ``kind`` in this state (empty when it does not fit)."""
    return MISTAKES[kind](intended, later, admissible)
