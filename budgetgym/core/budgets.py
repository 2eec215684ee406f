"""The one full-budget rule.

A task's full budget (``max_turns`` in its record) is what the bare env allows before it truncates,
and what ``TurnBudget`` shares (``0.5``) and solution multiples (``1.5x``) are taken of. It is sized
from the oracle's turn count from the initial state: twice the shortest known solution, so an agent
has room for as many detours and repairs as needed steps, and never fewer than six turns, so a
one-step task still leaves room to look around and recover. Every family's generator calls this
function; a contract test checks every shipped task against it.
"""

from __future__ import annotations

MIN_FULL_BUDGET = 6
SOLUTION_MULTIPLE = 2


def full_budget(oracle_turns: int) -> int:
    """The full turn budget of a task whose oracle solves it in ``oracle_turns`` turns."""
    if not isinstance(oracle_turns, int) or isinstance(oracle_turns, bool) or oracle_turns < 1:
        raise ValueError(f"oracle_turns must be a positive int, got {oracle_turns!r}")
    return max(MIN_FULL_BUDGET, SOLUTION_MULTIPLE * oracle_turns)
