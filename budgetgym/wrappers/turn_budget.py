"""``TurnBudget`` and ``BudgetMix``: turn caps below a task's full budget."""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

REVEAL_MODES = ("none", "total", "remaining")
_DEFAULT_TEMPLATES = {
    "total": "\n\n[Turn budget: you have {max_turns} turns in total.]",
    "remaining": "\n\n[Turns remaining: {remaining} of {max_turns}]",
}
#: The texts ``TurnBudget`` adds to observations by default, per reveal mode (agents may parse them).
REVEAL_TEMPLATES = _DEFAULT_TEMPLATES


_MULTIPLE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)x")


def check_budget(value: Any) -> None:
    """Raise ValueError unless ``value`` is a turn budget: an int >= 1 (turns), a float in (0, 1]
    (a share of the task's full budget), or a string ``"1.5x"`` (a multiple of the task's shortest
    solution, ``info["oracle_turns"]``)."""
    if isinstance(value, str):
        multiple_of(value)
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"a turn budget is an int >= 1, a float in (0, 1] or a multiple such as '1.5x', got {value!r}")
    if isinstance(value, numbers.Integral):
        if value < 1:
            raise ValueError(f"a turn budget as an int must be >= 1, got {value}")
    elif not 0.0 < float(value) <= 1.0:
        hint = f" (for {value:g} times the shortest solution, write {value:g}x)" if float(value) > 1 else ""
        raise ValueError(f"a turn budget as a float is a share of the full budget and must be in (0, 1], got {value}"
                         + hint)


def multiple_of(budget: str) -> float:
    """``"1.5x"`` -> 1.5: the multiple of the task's shortest solution a budget string names."""
    match = _MULTIPLE.fullmatch(budget) if isinstance(budget, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"a turn budget is an int >= 1, a float in (0, 1] or a multiple of the shortest solution "
                         f"written as a positive number followed by x (e.g. '1x', '1.5x'), got {budget!r}")
    return float(match.group(1))


def parse_budget(text: str) -> int | float | str:
    """A budget written as text: ``"8"`` is eight turns, ``"0.5"`` half of each task's full budget,
    ``"1.5x"`` one and a half times each task's shortest solution (returned as the string ``"1.5x"``)."""
    text = text.strip().lower()
    if text.endswith("x"):
        return f"{multiple_of(text):g}x"
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"a turn budget is an int >= 1 (turns), a float in (0, 1] (a share of the full budget) "
                             f"or a multiple of the shortest solution such as 1.5x, got {text!r}") from None
    check_budget(value)
    return value


def cap_for(max_turns: int | float | str, full_budget: int, oracle_turns: int | None = None) -> int:
    """The cap in turns for a task whose full budget is ``full_budget``.

    An int is absolute (never above the full budget); a float in (0, 1] is a share of the full
    budget, rounded up, at least 1 (the rounding guard keeps 0.1 * 30 at 3, not 4); ``"1.5x"`` is
    that multiple of ``oracle_turns`` (the task's shortest solution), rounded up, at least 1 and
    never above the full budget.
    """
    if isinstance(max_turns, str):
        if oracle_turns is None:
            raise ValueError(f"budget {max_turns!r} is in solution lengths, but the task reports no oracle_turns: "
                             "give the budget in turns or as a share of the full budget")
        return min(full_budget, max(1, math.ceil(round(multiple_of(max_turns) * oracle_turns, 9))))
    if isinstance(max_turns, numbers.Integral):
        return min(int(max_turns), full_budget)
    return max(1, math.ceil(round(float(max_turns) * full_budget, 9)))


def oracle_turns_of(env: gym.Env[str, str], info: Mapping[str, Any]) -> int | None:
    """The task's shortest-solution length: ``info["oracle_turns"]``, else the task record's."""
    value = info.get("oracle_turns")
    if value is None:
        task = getattr(env.unwrapped, "task", None)
        data = getattr(task, "data", None)
        value = data.get("oracle_turns") if data is not None else None
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None


class TurnBudget(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Truncate an episode after ``max_turns`` turns, and optionally tell the agent its budget.

    A task's full budget (``info["max_turns"]``) is where the bare env truncates; ``TurnBudget`` can
    only lower it. The episode is truncated exactly on the step whose turn count reaches the cap,
    unless that step terminated it (a solved task stays solved on its last turn).

    Args:
        env: a budgetgym env (it must report ``info["turn"]`` and ``info["max_turns"]``).
        max_turns: an int (an absolute cap), a float in (0, 1] (a share of each task's full
            budget, rounded up, at least 1), or ``"1.5x"`` (a multiple of the task's shortest
            solution, ``info["oracle_turns"]``, rounded up and at most the full budget: ``"1x"``
            leaves no turn to spare, and a grid in these units is feasible in every cell).
        reveal: ``"none"`` says nothing (the unannounced cap of real deployments); ``"total"``
            announces the cap in the first observation; ``"remaining"`` appends the turns left to
            every observation.
        count_restored: when an episode starts from a snapshot (a restored prefix, such as an
            injected failure state), count the prefix's turns against the cap (True) or start the
            count at the restored turn (False). If the prefix already spends the whole cap, the agent
            gets no turn: the next step returns at once with ``truncated=True``.
        template: a format string for the revealed text, with ``{max_turns}``, ``{remaining}`` and
            ``{used}``; defaults to a short bracketed line.

    ``info["budget"] = {"max_turns": cap, "used": turns counted, "remaining": max(0, cap - used),
    "reveal": reveal}``. Nested ``TurnBudget`` wrappers keep the tightest cap.

    Example:
        >>> env = TurnBudget(gym.make("budgetgym/FunctionCalling-v0"), max_turns=0.5, reveal="remaining")
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        max_turns: int | float,
        reveal: str = "none",
        count_restored: bool = True,
        template: str | None = None,
    ) -> None:
        check_budget(max_turns)
        if reveal not in REVEAL_MODES:
            raise ValueError(f"reveal must be one of {REVEAL_MODES}, got {reveal!r}")
        if template is not None:
            if not isinstance(template, str):
                raise ValueError(f"template must be a str, got {type(template).__name__}")
            try:
                template.format(max_turns=1, remaining=1, used=0)
            except (KeyError, IndexError, ValueError) as err:
                raise ValueError(f"template may only use {{max_turns}}, {{remaining}} and {{used}}: {err!r}") from None
        # Recorded for env.spec (gym.make(wrapped.spec) rebuilds the wrapper); a subclass records its own first.
        gym.utils.RecordConstructorArgs.__init__(self, max_turns=max_turns, reveal=reveal,
                                                 count_restored=count_restored, template=template)
        gym.Wrapper.__init__(self, env)
        self.max_turns = max_turns
        self.reveal = reveal
        self.count_restored = count_restored
        self.template = template if template is not None else _DEFAULT_TEMPLATES.get(reveal, "")
        self._cap = 0
        self._offset = 0
        self._used = 0

    def _choose_cap(self, full_budget: int, oracle_turns: int | None) -> int:
        return cap_for(self.max_turns, full_budget, oracle_turns)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        cap = self._choose_cap(info["max_turns"], oracle_turns_of(self.env, info))
        inner = info.get("budget")
        if inner is not None:  # a TurnBudget inside this one: the tightest cap wins
            cap = min(cap, inner["max_turns"])
        self._cap = cap
        self._offset = 0 if self.count_restored else info["turn"]
        self._used = info["turn"] - self._offset
        info["budget"] = self._budget_info()
        if self.reveal != "none":
            observation += self._text()
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._used >= self._cap:
            return self._refused_step()
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._used = info["turn"] - self._offset
        if self._used >= self._cap and not terminated:
            truncated = True
        info["budget"] = self._budget_info()
        if self.reveal == "remaining":
            observation += self._text()
        return observation, reward, terminated, truncated, info

    def _refused_step(self) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A step past the cap: the env is not touched; the agent is told why, with the env's own info."""
        if self._used > self._cap:
            message = (f"No turns left: this episode already took {self._used} turns (a restored prefix included) "
                       f"and its turn budget is {self._cap}. Reset to start a new episode.")
        else:
            message = f"No turns left: the turn budget of {self._cap} turns is spent. Reset to start a new episode."
        base = self.env.unwrapped
        info = base._info(at_reset=False) if hasattr(base, "_info") else {}
        info.update(action_valid=False, action_error=message, budget=self._budget_info())
        return message, 0.0, False, True, info

    def _budget_info(self) -> dict[str, Any]:
        # A restored prefix may already be longer than the cap: nothing remains, never less than nothing.
        return {"max_turns": self._cap, "used": self._used, "remaining": max(0, self._cap - self._used),
                "reveal": self.reveal}

    def _text(self) -> str:
        return self.template.format(max_turns=self._cap, remaining=max(0, self._cap - self._used), used=self._used)


class BudgetMix(TurnBudget):
    """A ``TurnBudget`` whose cap is drawn afresh at every reset: training across varied budgets.

    At each reset a fraction is drawn from ``fractions`` (with ``weights``, default uniform) using
    the env's own seeded generator, so ``reset(seed=s)`` reproduces the draw; the cap is that share
    of the task's full budget, rounded up. ``info["budget"]`` carries the cap and the drawn
    ``fraction``. Training on a mix of budgets keeps agents good at tight ones.

    Args:
        env: a budgetgym env.
        fractions: shares of the full budget, each in (0, 1], or multiples of the shortest
            solution such as ``"1.5x"`` (they may be mixed).
        weights: the probability of each fraction (normalised); None for uniform.
        reveal: as for ``TurnBudget``; "remaining" by default, so the agent can adapt to the draw.
        count_restored, template: as for ``TurnBudget``.
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        fractions: Sequence[float | str] = (0.25, 0.5, 0.75, 1.0),
        weights: Sequence[float] | None = None,
        reveal: str = "remaining",
        count_restored: bool = True,
        template: str | None = None,
    ) -> None:
        fractions = tuple(fractions)
        if not fractions:
            raise ValueError("fractions must not be empty")
        for fraction in fractions:
            if isinstance(fraction, str):
                multiple_of(fraction)
            elif isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0.0 < float(fraction) <= 1.0:
                raise ValueError(f"each fraction must be a number in (0, 1] or a multiple such as '1.5x', got {fraction!r}")
        if weights is None:
            probabilities = np.full(len(fractions), 1.0 / len(fractions))
        else:
            probabilities = np.asarray(weights, dtype=float)
            if probabilities.shape != (len(fractions),) or not np.all(np.isfinite(probabilities)) \
                    or np.any(probabilities < 0) or probabilities.sum() <= 0:
                raise ValueError(f"weights must be {len(fractions)} non-negative numbers with a positive sum, got {weights!r}")
            probabilities = probabilities / probabilities.sum()
        gym.utils.RecordConstructorArgs.__init__(self, fractions=fractions, weights=weights, reveal=reveal,
                                                 count_restored=count_restored, template=template)
        super().__init__(env, max_turns=1.0, reveal=reveal, count_restored=count_restored, template=template)
        self.fractions = tuple(f if isinstance(f, str) else float(f) for f in fractions)
        self.weights = tuple(probabilities.tolist())
        self._cumulative = np.cumsum(probabilities)
        self.fraction: float | str = 1.0

    def _choose_cap(self, full_budget: int, oracle_turns: int | None) -> int:
        # Inverse-CDF on one uniform draw: cheaper than Generator.choice, same distribution.
        index = int(np.searchsorted(self._cumulative, self.np_random.random(), side="right"))
        self.fraction = self.fractions[min(index, len(self.fractions) - 1)]
        return cap_for(self.fraction, full_budget, oracle_turns)

    def _budget_info(self) -> dict[str, Any]:
        info = super()._budget_info()
        info["fraction"] = self.fraction
        return info
