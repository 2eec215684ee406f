"""``TurnBudget``, ``BudgetMix`` and ``HorizonSchedule``: caps in turns, tool calls or tokens.

The vocabulary (budget, full budget, cap, used; units; reveal texts) is
:mod:`budgetgym.core.budgets`; these wrappers apply it to episodes.
"""

from __future__ import annotations

import copy
import numbers
from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np

from budgetgym.core.actions import ActionError
from budgetgym.core.budgets import (REVEAL_TEMPLATES, Tokenizer, as_budget, check_reveal, check_template, check_unit,
                                    count_tokens, resolve_cap, reveal_text)
from budgetgym.core.env import text_env
from budgetgym.core.rollout import rollout


def oracle_turns_of(env: gym.Env[str, str], info: Mapping[str, Any]) -> int | None:
    """The task's shortest-solution length in turns: ``info["oracle_turns"]``, else the task record's."""
    value = info.get("oracle_turns")
    if value is None:
        task = getattr(env.unwrapped, "task", None)
        data = getattr(task, "data", None)
        value = data.get("oracle_turns") if data is not None else None
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None


def solution_cost(env: gym.Env[str, str], tokenizer: Tokenizer | None = None) -> dict[str, int]:
    """The oracle's solution of the running episode's task, from its start with the episode's seed,
    in every unit: ``{"turns", "calls", "tokens"}`` (tokens of its actions by ``tokenizer``). Played
    on a copy of the env: the running episode is untouched."""
    base = text_env(env)
    shadow = copy.deepcopy(base)
    try:
        # rollout resets the copy itself: a reset before it would be replaced by one with no seed or task.
        played = rollout(shadow, "oracle", seed=base.episode_seed,
                         options={"task_id": base.task.id})  # type: ignore[union-attr]
        return {"turns": played.turns, "calls": shadow.calls,
                "tokens": sum(count_tokens(step.action, tokenizer) for step in played.steps)}
    finally:
        shadow.close()


class TurnBudget(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Cap an episode in turns, tool calls or tokens, and optionally tell the agent its budget.

    A task's full budget (``info["full_budget"]``, in turns) is where the bare env truncates; a cap
    in turns can only lower it. A cap in calls or tokens binds beside it.

    * turns: the episode is truncated on the step whose turn count reaches the cap, unless that
      step terminated it (a solved task stays solved on its last turn). The env is told
      (``turn_limit``), so it ends that turn as it ends its full budget's last (Coding measures the
      repository's progress there under ``reward_mode="progress"``).
    * calls (tool calls run; messages and invalid actions run none) and tokens (of the agent's
      outputs, by ``tokenizer``): a step that would spend more than remains is not run, and the
      episode is truncated there (its tokens are counted as spent: the model wrote them; its calls
      are not: none ran). A step that reaches a token cap exactly runs, and truncates unless it
      ended the episode. A step that reaches a call cap exactly runs and does not truncate: what
      costs no call (a message, such as a final answer after the last call) still runs; the next
      step that holds a call is refused and truncates, and the env's full budget still ends the
      episode. So ``"1x"`` in calls is the oracle's own solution, final message included.

    A step after the cap is spent never reaches the env (in calls, once a restored prefix spent more
    than the cap, or a step that holds a call): it answers why, with ``truncated=True``.

    Args:
        env: a budgetgym env (under any wrappers).
        budget: in ``unit``: an int (absolute), a float in (0, 1] (a share of each task's full
            budget; turns only), or ``"1.5x"`` (a multiple of the task's shortest solution in the
            unit: ``info["oracle_turns"]`` for turns; for calls and tokens the oracle's solution
            played once per task and seed on a copy of the env). Text forms (``"8"``) are read too.
        reveal: ``"none"`` says nothing (the unannounced cap of real deployments); ``"total"``
            announces the cap with the first observation; ``"remaining"`` appends what remains to
            every observation.
        count_restored: when an episode starts from a snapshot (a restored prefix, such as an
            injected failure state), count the prefix's use against the cap (True) or start the
            count at the restored state (False). A prefix that already spent the whole cap leaves
            the agent no step: the next one returns at once with ``truncated=True``.
        template: the revealed text, with ``{cap}``, ``{remaining}`` and ``{used}`` (in the unit);
            default: the unit's text in ``budgetgym.core.budgets.REVEAL_TEMPLATES``. At most
            ``REVEAL_ROOM`` characters, the room the env leaves in its observation space.
        unit: ``"turns"``, ``"calls"`` or ``"tokens"``.
        tokenizer: counts tokens: a callable from text to its tokens or their count (a Hugging
            Face tokenizer's ``encode``); default ``budgetgym.core.budgets.regex_tokens``.

    ``info["budget"] = {"unit", "cap", "remaining", "reveal", "used": {"turns", "calls",
    "tokens"}}``: the cap and what remains in the unit, and the use in every unit whatever is
    capped. Nested budget wrappers in one unit keep the tightest cap; in different units each holds
    its own (``info["budget"]`` is the outermost's); at most one of them may reveal.

    Example:
        >>> env = TurnBudget(gym.make("budgetgym/FunctionCalling-v0"), 0.5, reveal="remaining")
        >>> env = TurnBudget(gym.make("budgetgym/FunctionCalling-v0"), "1.5x", unit="calls")
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        budget: int | float | str = 1.0,
        reveal: str = "none",
        count_restored: bool = True,
        template: str | None = None,
        *,
        unit: str = "turns",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        check_unit(unit)
        budget = as_budget(budget, unit)
        check_reveal(reveal)
        _check_count_restored(count_restored)
        if template is not None:
            check_template(template)
        if tokenizer is not None and not callable(tokenizer):
            raise ValueError(f"tokenizer must be a callable from text to tokens, got {type(tokenizer).__name__}")
        if reveal != "none" and any(isinstance(inner, TurnBudget) and inner.reveal != "none"
                                    for inner in _wrapper_chain(env)):
            raise ValueError("a budget wrapper inside this one already reveals its budget: at most one may reveal "
                             "(the observation space leaves room for one revealed text)")
        # Recorded for env.spec (gym.make(wrapped.spec) rebuilds the wrapper); a subclass records its own first.
        # (Not deep-copied: a tokenizer may be large, and the rest is immutable.)
        gym.utils.RecordConstructorArgs.__init__(self, _disable_deepcopy=True, budget=budget, reveal=reveal,
                                                 count_restored=count_restored, template=template, unit=unit,
                                                 tokenizer=tokenizer)
        gym.Wrapper.__init__(self, env)
        self.budget = budget
        self.unit = unit
        self.reveal = reveal
        self.count_restored = count_restored
        self.tokenizer = tokenizer
        self.template = template if template is not None else REVEAL_TEMPLATES[unit].get(reveal, "")
        self._cap = 0
        # The use so far, one attribute a unit (a step reads and writes them: cheaper than a dict),
        # and the env's counts a restored prefix had spent when it is not counted.
        self._turns = self._calls = self._tokens = 0
        self._turns_offset = self._calls_offset = 0
        # What a subclass adds to info["budget"] for the episode (BudgetMix: the budget drawn).
        self._extra: dict[str, Any] = {}
        self._solutions: dict[tuple[str, int | None], dict[str, int]] = {}

    def _choose_budget(self) -> int | float | str:
        """The budget of the episode being reset (a subclass draws or schedules it)."""
        return self.budget

    def _cap_for(self, budget: int | float | str, info: Mapping[str, Any]) -> int:
        """The cap ``budget`` means for the task just reset."""
        if isinstance(budget, str) and self.unit != "turns":
            base = text_env(self.env)
            key = (base.task.id, base.episode_seed)  # type: ignore[union-attr]
            if key not in self._solutions:
                self._solutions[key] = solution_cost(self.env, self.tokenizer)
            shortest: int | None = self._solutions[key][self.unit]
        else:
            shortest = oracle_turns_of(self.env, info)
        return resolve_cap(budget, info["full_budget"], shortest, self.unit)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        cap = self._cap_for(self._choose_budget(), info)
        inner = info.get("budget")
        if inner is not None and inner["unit"] == self.unit:  # a budget inside this one: the tightest cap wins
            cap = min(cap, inner["cap"])
        self._cap = cap
        turns, calls, tokens = info["turn"], info.get("calls", 0), 0
        base = text_env(self.env)
        if self.unit == "turns":  # the env ends on the cap's last turn as on its full budget's
            base.turn_limit = min(base.turn_limit, cap + (0 if self.count_restored else turns))
        if turns:  # a restored prefix: what its actions spent
            tokens = sum(count_tokens(action, self.tokenizer) for action, _ in base.transcript)
        if self.count_restored:
            self._turns, self._calls, self._tokens = turns, calls, tokens
            self._turns_offset = self._calls_offset = 0
        else:
            self._turns = self._calls = self._tokens = 0
            self._turns_offset, self._calls_offset = turns, calls
        info["budget"] = self._budget_info()
        if self.reveal != "none":
            observation += self._text()
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        unit = self.unit
        spent = self._spent()
        if spent > self._cap or (spent == self._cap and unit != "calls"):  # calls: a message still runs
            return self._refused_step(None)
        tokens = count_tokens(action, self.tokenizer) if isinstance(action, str) else 0
        if unit != "turns":
            refusal = self._over_budget(action, tokens)
            if refusal is not None:
                return self._refused_step(refusal)
        observation, reward, terminated, truncated, info = self.env.step(action)
        turns = self._turns = info["turn"] - self._turns_offset
        calls = self._calls = info.get("calls", 0) - self._calls_offset
        tokens = self._tokens = self._tokens + tokens
        spent = turns if unit == "turns" else calls if unit == "calls" else tokens
        if not terminated and spent >= self._cap and unit != "calls":
            truncated = True
        info["budget"] = self._budget_info()
        if self.reveal == "remaining":
            remaining = self._cap - spent
            observation += self.template.format(cap=self._cap, remaining=remaining if remaining > 0 else 0, used=spent)
        return observation, reward, terminated, truncated, info

    def _spent(self) -> int:
        """The use so far in the capped unit."""
        unit = self.unit
        return self._turns if unit == "turns" else self._calls if unit == "calls" else self._tokens

    def _over_budget(self, action: Any, tokens: int) -> str | None:
        """Why a step would spend more than remains in calls or tokens (None: it fits)."""
        remaining = self._cap - self._spent()
        if self.unit == "tokens":
            if tokens > remaining:
                self._tokens += tokens
                return (f"Out of tokens: this output is {tokens} tokens and {remaining} of the {self._cap}-token "
                        "budget remained. Nothing was run.")
            return None
        try:
            calls = len(text_env(self.env).parse(action).calls)
        except ActionError:
            return None  # the env answers it as an invalid action, which runs no call
        if calls > remaining:
            return (f"Out of tool calls: this turn holds {calls} calls and {remaining} of the {self._cap}-call "
                    "budget remained. Nothing was run.")
        return None

    def _refused_step(self, message: str | None) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A step the budget does not allow: the env is not touched; the agent is told why, with the
        env's own info."""
        if message is None:
            noun = {"turns": "turns", "calls": "tool calls", "tokens": "tokens"}[self.unit]
            used = self._spent()
            if used > self._cap:
                message = (f"No {noun} left: this episode already spent {used} {noun} (a restored prefix included) "
                           f"and its budget is {self._cap}. Reset to start a new episode.")
            else:
                message = f"No {noun} left: the budget of {self._cap} {noun} is spent. Reset to start a new episode."
        info = text_env(self.env).current_info()
        info.update(action_valid=False, action_error=message, budget=self._budget_info())
        return message, 0.0, False, True, info

    def _budget_info(self) -> dict[str, Any]:
        # A restored prefix may already be over the cap: nothing remains, never less than nothing.
        remaining = self._cap - self._spent()
        info = {"unit": self.unit, "cap": self._cap, "remaining": remaining if remaining > 0 else 0,
                "reveal": self.reveal, "used": {"turns": self._turns, "calls": self._calls, "tokens": self._tokens}}
        if self._extra:
            info.update(self._extra)
        return info

    def _text(self) -> str:
        return reveal_text(self.template, self._cap, self._spent())


def _wrapper_chain(env: gym.Env) -> list[gym.Env]:
    chain = []
    while isinstance(env, gym.Wrapper):
        chain.append(env)
        env = env.env
    return chain


def _check_count_restored(count_restored: Any) -> None:
    if not isinstance(count_restored, bool):
        raise ValueError(f"count_restored must be True or False, got {count_restored!r}")


def _checked_budgets(budgets: Sequence[Any], unit: str, what: str) -> tuple[int | float | str, ...]:
    if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence) or not budgets:
        raise ValueError(f"{what} must be a non-empty sequence of budgets, got {budgets!r}")
    return tuple(as_budget(b, unit) for b in budgets)


class BudgetMix(TurnBudget):
    """A ``TurnBudget`` whose budget is drawn afresh at every reset: training across varied caps.

    At each reset a budget is drawn from ``budgets`` (with ``weights``, default uniform) using the
    wrapper's seeded generator, so ``reset(seed=s)`` reproduces the draw. ``info["budget"]`` carries
    the cap and the budget ``drawn``. Training on a mix of budgets keeps agents good at tight ones.

    Args:
        env: a budgetgym env.
        budgets: budgets in ``unit``, in any form (``0.5``, ``"1.5x"``, ``8``; mixed as you like).
        weights: the probability of each budget (normalised); None for uniform.
        reveal: as for ``TurnBudget``; "remaining" by default, so the agent can adapt to the draw.
        count_restored, template, unit, tokenizer: as for ``TurnBudget``.
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        budgets: Sequence[int | float | str] = (0.25, 0.5, 0.75, 1.0),
        weights: Sequence[float] | None = None,
        reveal: str = "remaining",
        count_restored: bool = True,
        template: str | None = None,
        *,
        unit: str = "turns",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        check_unit(unit)
        budgets = _checked_budgets(budgets, unit, "budgets")
        _check_count_restored(count_restored)
        if weights is None:
            probabilities = np.full(len(budgets), 1.0 / len(budgets))
        else:
            problem = f"weights must be {len(budgets)} non-negative numbers with a positive sum, got {weights!r}"
            # Numbers only: numpy would read "ab" as a string to convert (and raise its own error).
            if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or any(
                    isinstance(w, bool) or not isinstance(w, numbers.Real) for w in weights):
                raise ValueError(problem)
            probabilities = np.asarray(weights, dtype=float)
            if probabilities.shape != (len(budgets),) or not np.all(np.isfinite(probabilities)) \
                    or np.any(probabilities < 0) or probabilities.sum() <= 0:
                raise ValueError(problem)
            probabilities = probabilities / probabilities.sum()
        gym.utils.RecordConstructorArgs.__init__(self, _disable_deepcopy=True, budgets=budgets, weights=weights, reveal=reveal,
                                                 count_restored=count_restored, template=template, unit=unit,
                                                 tokenizer=tokenizer)
        super().__init__(env, budgets[0], reveal=reveal, count_restored=count_restored, template=template, unit=unit,
                         tokenizer=tokenizer)
        self.budgets = budgets
        self.weights = tuple(probabilities.tolist())
        self._cumulative = np.cumsum(probabilities)
        self.drawn: int | float | str = budgets[0]

    def _choose_budget(self) -> int | float | str:
        # Inverse-CDF on one uniform draw: cheaper than Generator.choice, same distribution.
        index = int(np.searchsorted(self._cumulative, self.np_random.random(), side="right"))
        self.drawn = self.budgets[min(index, len(self.budgets) - 1)]
        self._extra = {"drawn": self.drawn}
        return self.drawn


class HorizonSchedule(TurnBudget):
    """A cap that widens with training: the budget as a function of the training step or of the
    episode count, as AgentGym-RL's ScalingInter-RL grows the interaction horizon in stages.

    ``stages`` is ``((start, budget), ...)`` with starts strictly increasing from 0: from ``start``
    on, episodes get ``budget``, or a budget drawn uniformly (with the wrapper's seeded generator,
    so ``reset(seed=s)`` reproduces it) when the stage gives a sequence of budgets. The position is

    * ``by="episodes"`` (default): the resets this wrapper has seen (each vector sub-env counts its
      own), so the schedule is reproducible from the seeds alone;
    * ``by="steps"``: the training step a trainer sets with :meth:`set_progress` (through a vector
      env: ``envs.call("set_progress", step)``, or ``envs.set_attr("progress", step)``); it applies
      from the next reset.

    ``info["budget"]`` carries the cap, the budget ``drawn``, the ``stage`` index and the
    ``position`` (episodes or step) the episode's budget was chosen at. Args as for ``TurnBudget`` otherwise.

    Example:
        >>> env = HorizonSchedule(gym.make("budgetgym/Navigation-v0"),
        ...                       stages=((0, "1x"), (200, "1.5x"), (600, 1.0)), reveal="remaining")
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        stages: Sequence[tuple[int, Any]],
        by: str = "episodes",
        reveal: str = "remaining",
        count_restored: bool = True,
        template: str | None = None,
        *,
        unit: str = "turns",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        check_unit(unit)
        if by not in ("episodes", "steps"):
            raise ValueError(f"by must be 'episodes' or 'steps', got {by!r}")
        if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence) or not stages:
            raise ValueError(f"stages must be a non-empty sequence of (start, budget) pairs, got {stages!r}")
        checked: list[tuple[int, tuple[int | float | str, ...]]] = []
        for stage in stages:
            if not isinstance(stage, Sequence) or isinstance(stage, (str, bytes)) or len(stage) != 2:
                raise ValueError(f"each stage is a (start, budget) pair, got {stage!r}")
            start, budget = stage
            if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 0:
                raise ValueError(f"a stage's start is an int >= 0, got {start!r}")
            choices = _checked_budgets(budget, unit, "a stage's budgets") if isinstance(budget, (list, tuple)) \
                else (as_budget(budget, unit),)
            checked.append((int(start), choices))
        starts = [start for start, _ in checked]
        if starts[0] != 0 or any(b <= a for a, b in zip(starts, starts[1:])):
            raise ValueError(f"stage starts must begin at 0 and increase strictly, got {starts}")
        gym.utils.RecordConstructorArgs.__init__(self, _disable_deepcopy=True, stages=tuple((s, c if len(c) > 1 else c[0]) for s, c in checked),
                                                 by=by, reveal=reveal, count_restored=count_restored,
                                                 template=template, unit=unit, tokenizer=tokenizer)
        super().__init__(env, checked[0][1][0], reveal=reveal, count_restored=count_restored, template=template,
                         unit=unit, tokenizer=tokenizer)
        self.stages = tuple(checked)
        self.by = by
        self.progress = 0
        self.position = 0
        self.stage = 0
        self.drawn: int | float | str = checked[0][1][0]

    def set_progress(self, step: int) -> None:
        """Set the training step (``by="steps"``); the next reset takes its stage's budget."""
        if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
            raise ValueError(f"the training step is an int >= 0, got {step!r}")
        if self.by != "steps":
            raise ValueError("this schedule counts episodes (by='episodes'): the training step is not read")
        self.progress = int(step)

    def budget_at(self, progress: int) -> tuple[int, tuple[int | float | str, ...]]:
        """The stage index and its budgets at a position of the schedule."""
        index = 0
        for number, (start, _) in enumerate(self.stages):
            if start <= progress:
                index = number
        return index, self.stages[index][1]

    def _choose_budget(self) -> int | float | str:
        self.position = self.progress
        self.stage, choices = self.budget_at(self.position)
        self.drawn = choices[int(self.np_random.integers(len(choices)))] if len(choices) > 1 else choices[0]
        if self.by == "episodes":
            self.progress += 1
        self._extra = {"drawn": self.drawn, "stage": self.stage, "position": self.position}
        return self.drawn
