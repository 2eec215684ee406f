"""budgetgym in TRL: an environment for ``GRPOTrainer(environment_factory=...)`` (``pip install
'budgetgym[train]'``: ``trl``, ``transformers``, ``torch``, ``accelerate``; tested with TRL 1.16).

TRL 1.x documents ``environment_factory`` for stateful multi-turn environments: a no-argument
callable that returns an environment object; the trainer keeps a pool of them, calls
``reset(**row)`` with each dataset row before a rollout (the string it returns is appended to the
row's last user message), exposes the object's public methods as tools in the chat template, runs
the tool calls the model writes until a reply makes none, and scores the rollout with
``get_reward()``. Here:

* :func:`trl_rows` gives the dataset: one row per task (``budgetgym export``'s rows), whose
  ``prompt`` is the system message (the family's instructions and tools, and :data:`ACT_NOTE`) and an
  empty user message; ``reset`` fills it with the episode's own first observation, so a revealed
  budget (``reveal="total"``/``"remaining"``) is the one of that episode's cap.
* :class:`BudgetgymTRLEnv` has one tool, :meth:`~BudgetgymTRLEnv.act`: one call is one turn of the
  env (its ``action`` is what the env takes: a tool call as JSON or call syntax, a bare command, or
  a message to the user). The budget is the env's: ``TurnBudget``/``BudgetMix`` truncate the episode
  at its cap; once the episode is over, further calls are answered without a step. A reply without
  a tool call ends the rollout (TRL stops generating).
* :meth:`~BudgetgymTRLEnv.get_reward` is the env's reward: the sum of what its steps paid (sparse:
  1.0 when solved; ``reward_mode="progress"``: the final progress).
* :class:`TRLEnvironmentFactory` is the factory: the budget (:class:`BudgetSpec`: a cap in turns,
  a share of the full budget or a multiple of the shortest solution such as ``"1.5x"``, or a
  ``BudgetMix``) and the reveal mode, for every env id its rows name. Episode seeds are derived
  from the row's ``seed``, the instance's number in the pool and its episode count, so the
  attempts of a GRPO group meet their own draws (a cap each under a mix), and a run repeats.
  :attr:`TRLEnvironmentFactory.episodes` records every episode the pool played (task, seed, cap,
  turns, actions, reward), for logs and for tests that compare the trainer's rewards with the env's.

A dict of factories (TRL's multi-environment form, rows with an ``environment`` column) mixes
families or budgets in one run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from budgetgym.chat import system_prompt
from budgetgym.integrations.episode import BudgetSpec, ChatEpisode
from budgetgym.integrations.export import task_rows

#: Appended to the system message: how actions reach the env through TRL's tool loop.
ACT_NOTE = ("Every turn goes through the `act` tool: call it once per reply with your action for the turn as its "
            "`action` argument (a tool call written as above, or a plain message to the user). A reply without a "
            "tool call ends the episode.")
#: The answer to a call made after the episode ended (no step is taken).
OVER = "The episode is over: no more turns. Reply without a tool call."
#: How many envs one pool instance keeps made (one per env id and arguments it was asked for).
MAX_KEPT_EPISODES = 8


def system_message(instructions: str, tools: Sequence[dict[str, Any]]) -> str:
    """The system message of a TRL episode: the family's instructions and tools as text (the chat
    view's text-mode system prompt), and :data:`ACT_NOTE`."""
    return f"{system_prompt(instructions, tools, native=False)}\n\n{ACT_NOTE}"


def trl_rows(env_id: str, *, split: str | None = None, seed: int = 0, limit: int | None = None,
             task_ids: Sequence[str] | None = None, environment: str | None = None) -> list[dict[str, Any]]:
    """The dataset rows of ``env_id``'s tasks for :class:`BudgetgymTRLEnv` (``datasets.Dataset.from_list``).

    Each is ``budgetgym export``'s row (``env_id``, ``env_kwargs``, ``task_id``, ``seed``, ...) with
    ``prompt`` = [system message with :data:`ACT_NOTE`, empty user message]. ``environment`` adds
    TRL's routing column for a dict of factories."""
    rows = []
    for row in task_rows(env_id, split=split, seed=seed, tool_mode="text", limit=limit, task_ids=task_ids):
        system = f"{row['prompt'][0]['content']}\n\n{ACT_NOTE}"  # export's text-mode system prompt: system_message()
        row = {**row, "prompt": [{"role": "system", "content": system},
                                 {"role": "user", "content": ""}]}
        if environment is not None:
            row["environment"] = environment
        rows.append(row)
    return rows


@dataclass
class TRLEpisode:
    """One episode a pool instance played: what the env gave, recorded as it happened."""

    env_id: str
    task_id: str
    seed: int
    instance: int
    cap: int  # the cap of this episode (info["budget"]["cap"] at reset)
    drawn: int | float | str | None  # the budget BudgetMix drew, None under a fixed cap
    actions: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    turns: int = 0
    success: bool = False
    terminated: bool = False
    truncated: bool = False
    calls_after_end: int = 0
    env_seconds: float = 0.0  # wall time spent in the env (reset and every act), for the model/env split

    @property
    def reward(self) -> float:
        return float(sum(self.rewards))

    def as_dict(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "task_id": self.task_id, "seed": self.seed, "instance": self.instance,
                "cap": self.cap, "drawn": self.drawn, "actions": list(self.actions),
                "rewards": list(self.rewards), "reward": self.reward, "turns": self.turns, "success": self.success,
                "terminated": self.terminated, "truncated": self.truncated, "calls_after_end": self.calls_after_end,
                "env_seconds": self.env_seconds}


class BudgetgymTRLEnv:
    """One pool instance of TRL's ``environment_factory`` (see the module docstring). Made by
    :class:`TRLEnvironmentFactory`; its public methods other than ``reset`` and ``get_reward`` are
    the model's tools, so it has exactly one: ``act``."""

    def __init__(self, factory: "TRLEnvironmentFactory", instance: int) -> None:
        self._factory = factory
        self._instance = instance
        self._made: dict[str, ChatEpisode] = {}
        self._episode: ChatEpisode | None = None
        self._record: TRLEpisode | None = None
        self._count = 0

    def reset(self, **row: Any) -> str:
        """Start the row's task (``env_id``, ``task_id``; ``env_kwargs`` and ``seed`` optional) and
        return its first observation. A row without ``env_id``/``task_id`` is a malformed dataset
        (raises ``ValueError``)."""
        started = time.perf_counter()
        missing = [key for key in ("env_id", "task_id") if row.get(key) is None]
        if missing:
            raise ValueError(f"a budgetgym TRL row needs {', '.join(missing)} (trl_rows() makes them)")
        env_kwargs = row.get("env_kwargs") or {}
        if isinstance(env_kwargs, str):
            env_kwargs = json.loads(env_kwargs)
        env_kwargs = {**self._factory.env_kwargs, **env_kwargs}
        key = json.dumps([row["env_id"], env_kwargs], sort_keys=True)
        if key not in self._made:
            if len(self._made) >= MAX_KEPT_EPISODES:
                self._made.pop(next(iter(self._made))).close()
            self._made[key] = ChatEpisode(str(row["env_id"]), self._factory.budget, native=False, **env_kwargs)
        episode = self._made[key]
        seed = episode_seed(int(row.get("seed") or 0), self._instance, self._count)
        self._count += 1
        messages, info = episode.start(str(row["task_id"]), seed=seed)
        budget = info["budget"]
        self._episode = episode
        self._record = TRLEpisode(str(row["env_id"]), str(info["task_id"]), seed, self._instance,
                                  int(budget["cap"]), budget.get("drawn"))
        self._factory.episodes.append(self._record)
        self._record.env_seconds += time.perf_counter() - started
        return messages[-1]["content"]

    def act(self, action: str) -> str:
        """Take one turn in the environment.

        Args:
            action: Your action for this turn: a tool call written as JSON or call syntax, a command, or a message to the user.

        Returns:
            What the environment shows after the action.
        """
        episode, record = self._episode, self._record
        if episode is None or record is None:
            return "No episode is running."
        if episode.done:
            record.calls_after_end += 1
            return OVER
        started = time.perf_counter()
        if not isinstance(action, str):  # an object the model wrote as the argument: its JSON is the action
            action = json.dumps(action, ensure_ascii=False)
        step = episode.act(action)
        record.actions.append(action)
        record.rewards.append(step.reward)
        record.turns = int(step.info.get("turn", record.turns + 1))
        record.success = bool(step.info.get("success", False))
        record.terminated, record.truncated = step.terminated, step.truncated
        text = answer_text(step.observation, step.info, step.done)
        record.env_seconds += time.perf_counter() - started
        return text

    def get_reward(self) -> float:
        """The env's reward for the episode: the sum of what its steps paid."""
        return self._record.reward if self._record is not None else 0.0

    # Not tools: TRL exposes every public *function* of the class, so these are properties.
    @property
    def episode(self) -> ChatEpisode | None:
        """The running episode's :class:`ChatEpisode` (its env and info), for scripted players and logs."""
        return self._episode


def answer_text(observation: str, info: dict[str, Any], done: bool) -> str:
    """What ``act`` returns for a step: the observation, the tools when the family changed them
    mid-episode (the system message lists the first ones only), and :data:`OVER` at the end."""
    text = observation
    if "tools" in info:
        text += "\n\n" + system_prompt("", info["tools"], native=False)
    return text + "\n\n" + OVER if done else text


def episode_seed(seed: int, instance: int, count: int) -> int:
    """The seed of pool instance ``instance``'s ``count``-th episode of a row with ``seed``."""
    return int(np.random.SeedSequence([seed, instance, count]).generate_state(1)[0] & 0x7FFFFFFF)


class TRLEnvironmentFactory:
    """``GRPOTrainer(environment_factory=TRLEnvironmentFactory(...))``: makes the pool's envs.

    Args:
        budget: a :class:`BudgetSpec` (a cap, or ``mix`` fractions for ``BudgetMix``, and the
            reveal mode); default: the full budget, unannounced.
        **env_kwargs: ``gym.make`` arguments for every env (``reward_mode``, ...); a row's own
            ``env_kwargs`` (``split``) are added to them.
    """

    def __init__(self, budget: BudgetSpec | None = None, **env_kwargs: Any) -> None:
        self.budget = budget or BudgetSpec()
        self.env_kwargs = dict(env_kwargs)
        self.instances: list[BudgetgymTRLEnv] = []
        self.episodes: list[TRLEpisode] = []

    def __call__(self) -> BudgetgymTRLEnv:
        instance = BudgetgymTRLEnv(self, len(self.instances))
        self.instances.append(instance)
        return instance

    def close(self) -> None:
        """Close every env the pool made (the instances stay usable: they make them again)."""
        for instance in self.instances:
            for episode in instance._made.values():
                episode.close()
            instance._made.clear()


__all__ = ["ACT_NOTE", "BudgetgymTRLEnv", "OVER", "answer_text", "TRLEnvironmentFactory", "TRLEpisode", "episode_seed", "trl_rows"]
