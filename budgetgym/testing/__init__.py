"""Agent tests: "this agent solves these tasks within T turns in at least x of K attempts".

:func:`assert_solves` runs the attempts through the one rollout loop (``budgetgym.core.rollout``)
under a ``TurnBudget`` and raises ``AssertionError`` when a task falls short; the message names
each such task with its count and shows the transcript of its first failed episode (each action and
observation, long ones shortened), so a failing test says what the agent did. The pytest plugin
(:mod:`budgetgym.testing.plugin`, enabled by installing budgetgym) hands it to tests as the
``assert_solves`` fixture, beside ``budgetgym_env``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import gymnasium as gym

import budgetgym
from budgetgym.core import agent_view
from budgetgym.core.budgets import as_budget, describe_budget
from budgetgym.core.rollout import Rollout, rollout

#: Longest action or observation shown in a failure transcript, in characters.
SHOWN_CHARS = 600


@dataclass
class TaskResult:
    task_id: str
    episodes: list[Rollout] = field(default_factory=list)

    @property
    def solved(self) -> int:
        return sum(episode.success for episode in self.episodes)


@dataclass
class SolveReport:
    """What :func:`assert_solves` saw: per task, every episode (its rollout)."""

    env_id: str
    budget: int | float | str | None  # in ``unit``; None: the full budget
    attempts: int
    required: int
    tasks: list[TaskResult]
    unit: str = "turns"

    @property
    def failing(self) -> list[TaskResult]:
        return [task for task in self.tasks if task.solved < self.required]

    @property
    def success_rate(self) -> float:
        total = sum(len(task.episodes) for task in self.tasks)
        return sum(task.solved for task in self.tasks) / total if total else 0.0


def as_policy(agent: Any) -> Callable[..., Any]:
    """A rollout policy from ``"oracle"``, a callable ``(observation, info, env) -> action``, or an
    evaluation agent (``reset(env, observation, info, seed)`` and ``act(observation, info)``)."""
    if agent == "oracle" or (callable(agent) and not hasattr(agent, "act")):
        return agent
    if hasattr(agent, "act") and hasattr(agent, "reset"):
        return lambda observation, info, env: agent.act(observation, agent_view(info))
    raise TypeError("agent must be 'oracle', a callable (observation, info, env) -> action, "
                    f"or an agent with reset() and act(); got {type(agent).__name__}")


def required_successes(at_least: int | float, attempts: int) -> int:
    """``at_least`` as a count of ``attempts``: an int is a count, a float in (0, 1] a share (rounded up)."""
    if isinstance(at_least, bool) or not isinstance(at_least, (int, float)):
        raise ValueError(f"at_least must be a count (int) or a share in (0, 1] (float), got {at_least!r}")
    if isinstance(at_least, int):
        if not 1 <= at_least <= attempts:
            raise ValueError(f"at_least as a count must be in [1, {attempts}] (the attempts), got {at_least}")
        return at_least
    if not 0.0 < at_least <= 1.0:
        raise ValueError(f"at_least as a share must be in (0, 1], got {at_least}")
    return max(1, math.ceil(round(at_least * attempts, 9)))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_transcript(episode: Rollout, *, limit: int = SHOWN_CHARS) -> str:
    """An episode as text: the first observation, then each turn's action and observation."""
    def shorten(text: str) -> str:
        text = str(text)
        return text if len(text) <= limit else text[:limit] + f" ... [{len(text) - limit} more characters]"
    info = episode.last_info
    budget = info.get("budget", {})
    lines = [f"[start] {shorten(episode.observation)}"]
    for number, step in enumerate(episode.steps, 1):
        lines.append(f"[turn {number}] action: {shorten(step.action)}")
        lines.append(f"[turn {number}] observation: {shorten(step.observation)}")
    unit = budget.get("unit", "turns")
    ending = "solved" if episode.success else (f"truncated: out of {unit}" if episode.truncated else
                                               "terminated unsolved" if episode.terminated else "stopped by the agent")
    cap = ""
    if "cap" in budget:
        used = budget["used"][unit]
        cap = f" ({used} of a cap of {budget['cap']} {unit})" if unit != "turns" else \
            f" of a {budget['cap']}-turn cap"
    lines.append(f"[end] {ending} after {plural(episode.turns, 'turn')}{cap}")
    return "\n".join(lines)


def run_attempts(agent: Any, env: gym.Env, task_ids: Sequence[str], *, attempts: int = 1, seed: int = 0) -> list[TaskResult]:
    """Play ``attempts`` episodes of each task (seeds ``seed``, ``seed + 1``, ...)."""
    policy = as_policy(agent)
    results = []
    for task_id in task_ids:
        result = TaskResult(task_id)
        for attempt in range(attempts):
            observation, info = env.reset(seed=seed + attempt, options={"task_id": task_id})
            if hasattr(agent, "act") and hasattr(agent, "reset"):
                agent.reset(env, observation, agent_view(info), seed + attempt)
            result.episodes.append(rollout(env, policy, start=(observation, info)))
        results.append(result)
    return results


def assert_solves(agent: Any, env_id: str, tasks: Iterable[str] | int | None = None, *,
                  turns: int | float | str | None = None, calls: int | str | None = None,
                  tokens: int | str | None = None, attempts: int = 1, at_least: int | float = 1,
                  reveal: str = "none", seed: int = 0, tokenizer: Any = None, **env_kwargs: Any) -> SolveReport:
    """Assert that ``agent`` solves each of ``tasks`` within a budget in at least ``at_least`` of
    ``attempts`` attempts; returns the :class:`SolveReport` when it does.

    Args:
        agent: ``"oracle"``, a policy ``(observation, info, env) -> action`` or an evaluation agent.
        env_id: a registered id.
        tasks: task ids, an int (the env's first N tasks), or None (every task of the env).
        turns, calls, tokens: the cap T, in the unit its keyword names (at most one of them), in
            any form of :mod:`budgetgym.core.budgets`: an int, a share of each task's full budget
            (turns only), ``"1.5x"`` (a multiple of the shortest solution) or the same as text;
            none of them: the full budget.
        attempts: K, the episodes per task (seeds ``seed`` to ``seed + K - 1``).
        at_least: the episodes of the K that must succeed: a count, or a share in (0, 1].
        reveal: what the agent is told of the cap (``none``, ``total``, ``remaining``).
        tokenizer: counts the tokens of the agent's outputs (for ``tokens``; default: a regex tokenizer).
        **env_kwargs: passed to ``gym.make`` (``split``, ...).
    """
    __tracebackhide__ = True  # pytest shows the caller's line and the message, not this function
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ValueError(f"attempts must be an int >= 1, got {attempts!r}")
    required = required_successes(at_least, attempts)
    given = {unit: value for unit, value in (("turns", turns), ("calls", calls), ("tokens", tokens))
             if value is not None}
    if len(given) > 1:
        raise ValueError(f"give the budget in one unit (turns, calls or tokens), got {', '.join(given)}")
    unit, budget = next(iter(given.items())) if given else ("turns", None)
    if budget is not None:
        budget = as_budget(budget, unit)
    env = budgetgym.make(env_id, budget=1.0 if budget is None else budget, unit=unit, reveal=reveal,
                         tokenizer=tokenizer, **env_kwargs)
    try:
        available = env.unwrapped.tasks.ids
        if tasks is None:
            task_ids = list(available)
        elif isinstance(tasks, int) and not isinstance(tasks, bool):
            task_ids = list(available[:tasks])
        else:
            task_ids = [tasks] if isinstance(tasks, str) else list(tasks)
        if not task_ids:
            raise ValueError("no tasks to play")
        report = SolveReport(env_id, budget, attempts, required,
                             run_attempts(agent, env, task_ids, attempts=attempts, seed=seed), unit)
    finally:
        env.close()
    failing = report.failing
    if failing:
        within = describe_budget(budget, unit)
        parts = [f"{len(failing)} of {len(report.tasks)} tasks of {env_id} not solved within {within} "
                 f"in at least {required} of {attempts} attempts:"]
        for task in failing:
            parts.append(f"  {task.task_id}: solved {task.solved} of {attempts}")
        first = failing[0]
        episode = next(e for e in first.episodes if not e.success)
        index = first.episodes.index(episode)
        parts.append(f"\nTranscript of {first.task_id}, attempt {index + 1} (seed {seed + index}):")
        parts.append(format_transcript(episode))
        raise AssertionError("\n".join(parts))
    return report


__all__ = ["SolveReport", "TaskResult", "as_policy", "assert_solves", "format_transcript", "required_successes",
           "run_attempts"]
