"""budgetgym in GEM: a ``gem.Env`` (``pip install budgetgym[integrations]``: ``gem-llm``).

GEM's envs are text in, text out, with Gymnasium's five-tuple and ``reset(seed)``; its
``gem.make_vec`` builds a ``SyncVectorEnv``/``AsyncVectorEnv`` (autoreset on the same step), and its
wrappers (``EpisodeTrackingWrapper``, the observation wrappers) sit on top. :func:`register_gem`
registers every id of ``budgetgym.REGISTRY`` with GEM under the same name, so
``gem.make("budgetgym/FunctionCalling-v0", budget=0.5, reveal="remaining")`` works.

GEM has no system message: the first observation is the system prompt (the family's instructions
and the tools in text form) followed by the first observation. ``info`` is budgetgym's (``task_id``,
``turn``, ``full_budget``, ``success``, ``tools`` at reset) with ``info["budget"]`` (the cap; the
budget ``drawn`` under ``budget_mix``). The task is drawn from the reset seed (``task_ids`` restricts the
draw), and an unseeded reset draws the next one; the reward is the env's. Under GEM's same-step
autoreset, the finished episode's last ``info`` (its ``success``) is ``info["final_info"]`` of the reset.
"""

from __future__ import annotations

from typing import Any, Sequence

from budgetgym.core.extras import MissingExtra

try:
    import gem
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("integrations", "the GEM adapter", missing="gem-llm") from err

import budgetgym
from budgetgym.chat import system_prompt
from budgetgym.core.env import check_backend, text_env
from budgetgym.integrations.episode import BudgetSpec


class BudgetgymGemEnv(gem.Env):
    """A budgetgym env as a GEM env (see the module docstring).

    Args:
        budgetgym_id: a registered budgetgym id (GEM's ``make`` sets ``env_id`` itself).
        seed: the seed of the first ``reset`` without one (``gem.make_vec`` passes ``seed + index``).
        budget, budget_mix, unit, reveal: the budget (see :class:`~budgetgym.integrations.episode.BudgetSpec`).
        **env_kwargs: passed to ``gym.make`` (``split``, ``task_ids``, ``reward_mode``, ...).
    """

    def __init__(self, budgetgym_id: str, seed: int | None = None, budget: int | float | str | None = None,
                 budget_mix: Sequence[int | float | str] | None = None, reveal: str = "none", unit: str = "turns",
                 **env_kwargs: Any) -> None:
        super().__init__()
        spec = BudgetSpec(budget=budget, mix=None if budget_mix is None else tuple(budget_mix), unit=unit,
                          reveal=reveal)
        self.budgetgym_id = budgetgym_id
        self.env = spec.make(budgetgym_id, **env_kwargs)
        check_backend(self.env)  # once per id and process: a broken backend trains on zeros
        self._next_seed = seed
        self._final_info: dict[str, Any] | None = None

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """A new episode. The constructor's seed serves the first reset only, whether or not that
        one is given a seed; an unseeded reset after it draws the next task from the env's
        generator. After an episode ended, ``info["final_info"]`` is that episode's last info
        (``success`` in it): GEM's same-step autoreset returns the reset's info in place of the
        finished step's."""
        if seed is None:
            seed = self._next_seed
        self._next_seed = None
        observation, info = self.env.reset(seed=seed)
        if self._final_info is not None:
            info["final_info"], self._final_info = self._final_info, None
        base = text_env(self.env)
        prompt = system_prompt(base.instructions, info["tools"], native=False)
        return f"{prompt}\n\n{observation}", info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._final_info = dict(info) if terminated or truncated else None
        return observation, float(reward), bool(terminated), bool(truncated), info

    def sample_random_action(self) -> str:
        return self.env.action_space.sample()

    def close(self) -> None:
        self.env.close()


def register_gem() -> None:
    """Register every id of ``budgetgym.REGISTRY`` with GEM, under the same name (idempotent)."""
    from gem.envs.registration import ENV_REGISTRY

    for entry in budgetgym.REGISTRY:
        if entry.id not in ENV_REGISTRY:
            gem.register(entry.id, f"{__name__}:BudgetgymGemEnv", budgetgym_id=entry.id)


__all__ = ["BudgetgymGemEnv", "register_gem"]
