"""budgetgym in SkyRL: a SkyRL-Gym text env (``pip install budgetgym[integrations]``: ``skyrl-gym``).

SkyRL's generator makes one env per trajectory with ``skyrl_gym.make(env_class, env_config=...,
extras=row)``, where ``row`` is the dataset row minus its ``prompt``, calls ``env.init(prompt)`` for
the opening chat, then for each model output ``env.step(text)`` and appends the assistant message
and the returned ``observations`` to the chat until ``done``. :func:`register_skyrl` registers
:class:`BudgetgymSkyRLEnv` as ``env_class="budgetgym"``, the value ``budgetgym export`` writes in
every row; the row's ``env_id``, ``env_kwargs``, ``task_id`` and ``seed`` pick the episode.

The budget comes from ``env_config`` (SkyRL's ``environment.skyrl_gym.budgetgym`` section):
``budget`` (a cap: turns, a share of the full budget or ``"1.5x"``), ``unit``, ``budget_mix`` (budgets: ``BudgetMix``
draws a cap per trajectory from its seed) and ``reveal`` (``none``/``total``/``remaining``). The
opening chat ``init`` returns is the env's own (a revealed budget is in it), not the row's copy; its
metadata adds the tools' OpenAI schemas (for chat templates that take ``tools``).
``metadata`` on each step carries the budget, the turn, success and the task id; the reward is the
env's (sparse: 1.0 on the step that solves the task).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from budgetgym.core.extras import MissingExtra

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("integrations", "the SkyRL adapter", missing="skyrl-gym") from err

from budgetgym.core.env import check_backend
from budgetgym.integrations.episode import BudgetSpec, ChatEpisode

ENV_CLASS = "budgetgym"


class BudgetgymSkyRLEnv(BaseTextEnv):
    """One budgetgym episode as a SkyRL-Gym ``BaseTextEnv`` (see the module docstring).

    Args:
        env_config: the budget settings (a mapping or an OmegaConf section), or None.
        extras: the dataset row: ``env_id`` and ``task_id`` required; ``env_kwargs`` (a dict or its
            JSON text), ``seed`` optional.
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        missing = [key for key in ("env_id", "task_id") if key not in extras]
        if missing:
            raise ValueError(f"a budgetgym row needs {', '.join(missing)} (rows from `budgetgym export` have them)")
        env_kwargs = extras.get("env_kwargs") or {}
        if isinstance(env_kwargs, str):
            env_kwargs = json.loads(env_kwargs)
        self.task_id = str(extras["task_id"])
        self.seed = int(extras.get("seed") or 0)
        self.episode = ChatEpisode(str(extras["env_id"]), BudgetSpec.from_config(env_config), native=False,
                                   **dict(env_kwargs))
        check_backend(self.episode.env)  # once per id and process: a broken backend trains on zeros
        self.chat_history: list[dict[str, Any]] = []

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        messages, info = self.episode.start(self.task_id, seed=self.seed)
        self.turns = 0
        self.max_turns = self.episode.budget["cap"]
        self.chat_history = list(messages)
        return messages, {**self._metadata(), "tools": self.episode.tools}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        result = self.episode.act(action)
        self.turns += 1
        self.chat_history += [{"role": "assistant", "content": action}, *result.messages]
        return BaseTextEnvStepOutput(observations=[] if result.done else result.messages, reward=result.reward,
                                     done=result.done, metadata={**self._metadata(), "terminated": result.terminated,
                                                                 "truncated": result.truncated},
                                     postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        budget = self.episode.budget
        return {"success": float(self.episode.success), "turns": self.turns, "cap": budget["cap"],
                "budget_drawn": budget.get("drawn", self.episode.budget_spec.budget)}

    def close(self) -> None:
        self.episode.close()

    def _metadata(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "budget": self.episode.budget, "turn": self.turns,
                "success": self.episode.success}


def register_skyrl(env_class: str = ENV_CLASS) -> None:
    """Register :class:`BudgetgymSkyRLEnv` with SkyRL-Gym as ``env_class`` (idempotent)."""
    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point=f"{__name__}:BudgetgymSkyRLEnv")


__all__ = ["BudgetgymSkyRLEnv", "ENV_CLASS", "register_skyrl"]
