"""One budgetgym episode as a chat: the engine under every trainer adapter.

:class:`ChatEpisode` makes an env with its budget (``budgetgym.make``: ``TurnBudget`` with a cap and
a reveal mode, or ``BudgetMix`` drawing a cap per episode), views it through
:class:`budgetgym.chat.ChatView`, and answers in chat messages: ``start`` gives the system prompt and
the first user message, ``act`` takes the model's reply (text, or a chat-completion message) and
gives the message(s) that answer it, the reward and whether the episode is over. The adapters only
translate this into their package's shapes.

:class:`OracleChatPolicy` is the scripted "model" the adapters' tests play with: it reads the
assistant messages of a conversation, replays them in a shadow env of the same task, and answers
with that env's oracle action, so it plays through the chat interface alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import gymnasium as gym

import budgetgym
from budgetgym.chat import ChatView, action_from_message
from budgetgym.core.env import text_env
from budgetgym.core.budgets import as_budget, check_reveal, check_unit

#: An action no env accepts (an unknown tool): it costs a turn and changes nothing. Tests use it as
#: the policy that never solves, to see truncation at the cap.
STALL_ACTION = json.dumps({"name": "budgetgym_no_such_tool", "arguments": {}})


@dataclass(frozen=True)
class BudgetSpec:
    """The budget of the episodes an adapter serves, in the vocabulary of :mod:`budgetgym.core.budgets`.

    Attributes:
        budget: a fixed cap (``TurnBudget``) in any form: an int, a float in (0, 1] (a share of
            each task's full budget), ``"1.5x"`` (a multiple of the shortest solution), or the same
            as text (``"8"``); None with no ``mix`` or ``schedule``: the task's full budget.
        mix: budgets for ``BudgetMix``, in the same forms: one drawn afresh at every episode (from
            the episode's seed, so reproducible); excludes ``budget``.
        schedule: stages for ``HorizonSchedule``, ``((start, budget), ...)`` by episode count;
            excludes ``budget`` and ``mix``.
        unit: ``"turns"``, ``"calls"`` or ``"tokens"``.
        reveal: ``"none"`` (an unannounced cap), ``"total"`` or ``"remaining"``.
    """

    budget: int | float | str | None = None
    mix: tuple[int | float | str, ...] | None = None
    reveal: str = "none"
    unit: str = "turns"
    schedule: tuple[tuple[int, Any], ...] | None = None

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.budget, self.mix, self.schedule)) > 1:
            raise ValueError("give one of a budget, a budget mix and a schedule")
        check_unit(self.unit)
        if self.budget is not None:
            object.__setattr__(self, "budget", as_budget(self.budget, self.unit))
        if self.mix is not None:
            if isinstance(self.mix, (str, bytes)) or not self.mix:
                raise ValueError(f"a budget mix is a non-empty list of budgets, got {self.mix!r}")
            object.__setattr__(self, "mix", tuple(as_budget(b, self.unit) for b in self.mix))
        if self.schedule is not None:
            object.__setattr__(self, "schedule", tuple(tuple(stage) for stage in self.schedule))
        check_reveal(self.reveal)
        if self.budget is None and self.mix is None and self.schedule is None and self.unit != "turns":
            raise ValueError(f"a budget in {self.unit} needs a value (the bare env caps turns only)")

    def make(self, env_id: str, **env_kwargs: Any) -> gym.Env[str, str]:
        """``budgetgym.make`` with this budget; always under a budget wrapper, so every ``info``
        has ``info["budget"]`` (the full budget when no cap is set)."""
        budget = self.budget if any(x is not None for x in (self.budget, self.mix, self.schedule)) else 1.0
        return budgetgym.make(env_id, budget=budget, budget_mix=self.mix, schedule=self.schedule, unit=self.unit,
                              reveal=self.reveal, **env_kwargs)

    @classmethod
    def from_config(cls, config: Any) -> "BudgetSpec":
        """From a mapping or an object with ``budget``/``budget_mix``/``schedule``/``unit``/``reveal``
        (a trainer's config section, e.g. an OmegaConf ``DictConfig``); missing keys take the defaults."""
        def get(key: str, default: Any = None) -> Any:
            if config is None:
                return default
            if isinstance(config, Mapping) or hasattr(config, "get"):
                return config.get(key, default)
            return getattr(config, key, default)
        mix, schedule = get("budget_mix"), get("schedule")
        return cls(budget=get("budget"), mix=None if mix is None else tuple(mix),
                   schedule=None if schedule is None else tuple(tuple(stage) for stage in schedule),
                   unit=get("unit", "turns") or "turns", reveal=get("reveal", "none") or "none")


@dataclass
class ChatStep:
    """What one reply did: the messages that answer it, the reward, and the episode's state."""

    messages: list[dict[str, Any]]
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(repr=False)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class ChatEpisode:
    """A budgetgym env driven by chat messages (see the module docstring).

    Args:
        env_id: a registered id, e.g. ``"budgetgym/FunctionCalling-v0"``.
        budget: a :class:`BudgetSpec` (default: the full budget, unannounced).
        native: True for OpenAI tool calls and ``tool`` messages; False (default) for tools written
            in the system prompt and replies parsed as text, which every trainer's string loop takes.
        **env_kwargs: passed to ``gym.make`` (``split``, ``task_ids``, ``reward_mode``, ...).
    """

    def __init__(self, env_id: str, budget: BudgetSpec | None = None, *, native: bool = False,
                 **env_kwargs: Any) -> None:
        self.env_id = env_id
        self.budget_spec = budget or BudgetSpec()
        self.native = native
        self.env_kwargs = dict(env_kwargs)
        self.env = ChatView(self.budget_spec.make(env_id, **env_kwargs), native=native)
        self.info: dict[str, Any] = {}
        self.total_reward = 0.0
        self.done = False
        self._length = 0

    def start(self, task_id: str | None = None, seed: int | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Reset to ``task_id`` (None: drawn from ``seed``); the opening messages (a copy) and info."""
        options = {"task_id": task_id} if task_id is not None else None
        _, info = self.env.reset(seed=seed, options=options)
        self.info, self.total_reward, self.done = info, 0.0, False
        messages = info["messages"]
        self._length = len(messages)
        return [dict(m) for m in messages], info

    def act(self, reply: str | Mapping[str, Any] | Any) -> ChatStep:
        """Play one reply (text, or a chat-completion message: dict or SDK object). The answering
        ``tool`` messages carry the reply's own call ids; :attr:`messages` keeps the chat view's."""
        if self.done:
            raise RuntimeError("the episode is over: call start() for a new one")
        action = reply if isinstance(reply, str) else action_from_message(reply)
        observation, reward, terminated, truncated, info = self.env.step(action)
        messages = info["messages"]
        answer = [dict(m) for m in messages[self._length + 1:]]  # after the reply's own assistant message
        ids = reply_call_ids(reply)
        if ids:  # answer the model's own call ids (the chat view numbers calls itself)
            for message, call_id in zip((m for m in answer if m.get("role") == "tool"), ids):
                message["tool_call_id"] = call_id
        self._length = len(messages)
        self.info = info
        self.total_reward += float(reward)
        self.done = bool(terminated or truncated)
        return ChatStep(answer, observation, float(reward), bool(terminated), bool(truncated), info)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The whole conversation so far (a copy)."""
        return [dict(m) for m in self.info.get("messages", [])]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools' OpenAI function schemas now (they may change within an episode)."""
        base = text_env(self.env)
        return [tool.openai_schema() for tool in base.tools.values()]

    @property
    def budget(self) -> dict[str, Any]:
        """``info["budget"]``: ``{"unit", "cap", "remaining", "reveal", "used"}`` (plus ``drawn`` under
        a mix or a schedule)."""
        return dict(self.info.get("budget", {}))

    @property
    def success(self) -> bool:
        return bool(self.info.get("success", False))

    @property
    def task_id(self) -> str | None:
        return self.info.get("task_id")

    def close(self) -> None:
        self.env.close()


def reply_call_ids(reply: Any) -> list[str]:
    """The ids of a chat-completion message's tool calls (dict or SDK object); [] for text."""
    if isinstance(reply, str):
        return []
    calls = reply.get("tool_calls") if isinstance(reply, Mapping) else getattr(reply, "tool_calls", None)
    ids = [call.get("id") if isinstance(call, Mapping) else getattr(call, "id", None) for call in calls or []]
    return [str(i) for i in ids] if ids and all(ids) else []


def assistant_replies(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The actions of a conversation's assistant messages, in order."""
    return [action_from_message(m) for m in messages if m.get("role") == "assistant"]


class OracleChatPolicy:
    """The env's oracle as a chat "model" for one task: ``policy(messages) -> reply``.

    It replays the conversation's assistant messages in its own env of the same task and seed and
    answers with the oracle's next action (never reading the adapter's env).
    """

    def __init__(self, env_id: str, task_id: str, seed: int = 0, **env_kwargs: Any) -> None:
        self.env = budgetgym.make(env_id, **env_kwargs)
        self.task_id, self.seed = task_id, seed
        self._played: list[str] = []
        self.env.reset(seed=seed, options={"task_id": task_id})

    def __call__(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return self.next_action(assistant_replies(messages))

    def next_action(self, actions: Sequence[str]) -> str:
        """The reply after ``actions`` (the replies of this episode so far)."""
        actions = list(actions)
        if actions[:len(self._played)] != self._played:  # another conversation: start over
            self.env.reset(seed=self.seed, options={"task_id": self.task_id})
            self._played = []
        for action in actions[len(self._played):]:
            self.env.step(action)
            self._played.append(action)
        action = self.env.unwrapped.oracle_action()
        return STALL_ACTION if action is None else action

    def close(self) -> None:
        self.env.close()
