"""Hashed features of (observation, candidate action, revealed budget) for a linear policy.

Only what an LLM agent would see goes in: the episode's first observation (the task), the current
observation, the actions it took, and the budget where the wrappers reveal it in the text. The
budget is read from the observation as the budget wrappers write it (by the vocabulary's one
reader), never from ``info``.
"""

from __future__ import annotations

import functools
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from budgetgym.core.budgets import read_reveal

DIMENSION = 1 << 14
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("the a an to of and in on at from with for your you is it this that".split())
_OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east", "up": "down", "down": "up",
             "take": "drop", "drop": "take", "open": "close", "close": "open", "lock": "unlock", "unlock": "lock",
             "insert": "take", "put": "take"}


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP}


@dataclass
class BudgetSight:
    """What the agent was told of its budget: remaining turns and the cap, or nothing."""

    remaining: int | None = None
    cap: int | None = None

    def bucket(self) -> str:
        if self.remaining is None or not self.cap:
            return "unk"
        if self.remaining <= 2:
            return "last2"
        share = self.remaining / self.cap
        return "q1" if share <= 0.25 else "q2" if share <= 0.5 else "q3" if share <= 0.75 else "q4"


def read_budget(observation: str, first_observation: str, turns_taken: int) -> BudgetSight:
    """The budget as revealed in the text (``budgetgym.core.budgets.read_reveal``, the one reader of
    the reveal texts): ``remaining`` mode every turn, ``total`` once at reset (then the turns taken
    count down from it)."""
    seen = read_reveal(observation)
    if seen is not None and seen.remaining is not None:
        return BudgetSight(seen.remaining, seen.cap)
    total = read_reveal(first_observation)
    if total is not None:
        return BudgetSight(max(0, total.cap - turns_taken), total.cap)
    return BudgetSight()


@dataclass
class EpisodeView:
    """What the policy remembers of the episode so far."""

    goal: set[str] = field(default_factory=set)
    first_observation: str = ""
    taken: dict[str, int] = field(default_factory=dict)
    last_action: str = ""


def _undoes(tokens: list[str], last: list[str]) -> bool:
    """Whether the candidate undoes the last action (go back the way it came, drop what it took)."""
    if len(tokens) < 2 or len(last) < 2:
        return False
    if tokens[0] == last[0] == "go":
        return _OPPOSITE.get(last[1]) == tokens[1]
    return _OPPOSITE.get(last[0]) == tokens[0] and bool(set(tokens[1:]) & set(last[1:]))


@functools.lru_cache(maxsize=1 << 16)
def feature_index(key: str) -> int:
    """The hashed slot of a named feature."""
    return zlib.crc32(key.encode()) % DIMENSION


def featurize(candidate: str, seen: set[str], view: EpisodeView, budget: BudgetSight) -> tuple[np.ndarray, np.ndarray]:
    """Sparse features of one candidate: (indices, values). ``seen`` is ``content_words`` of the
    current observation (computed once a step, for every candidate)."""
    tokens = words(candidate)
    verb = tokens[0] if tokens else "<empty>"
    content = {w for w in tokens if w not in _STOP}
    in_goal = len(content & view.goal) / len(content) if content else 0.0
    in_obs = len(content & seen) / len(content) if content else 0.0
    repeats = view.taken.get(candidate, 0)
    undo = _undoes(tokens, words(view.last_action))
    fresh_goal = in_goal * (repeats == 0)
    b = budget.bucket()
    keys: dict[str, float] = {
        "bias": 1.0,
        f"verb={verb}": 1.0,
        "in_goal": in_goal, f"in_goal|verb={verb}": in_goal,
        "fresh_goal": fresh_goal, f"fresh_goal|verb={verb}": fresh_goal,
        "in_obs": in_obs, f"in_obs|verb={verb}": in_obs,
        "repeat": float(repeats > 0), f"repeat|verb={verb}": float(repeats > 0),
        "undo": float(undo),
        f"budget={b}|verb={verb}": 1.0,
        f"budget={b}|fresh_goal": fresh_goal,
        f"budget={b}|repeat": float(repeats > 0),
        f"budget={b}|in_goal": in_goal,
    }
    for word in content:
        keys[f"word={word}"] = 1.0
    indices = np.fromiter((feature_index(k) for k in keys), dtype=np.int64, count=len(keys))
    values = np.fromiter(keys.values(), dtype=np.float64, count=len(keys))
    return indices, values
