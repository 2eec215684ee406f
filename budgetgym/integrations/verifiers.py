"""budgetgym in verifiers: a taskset and an env (``pip install budgetgym[integrations]``: ``verifiers``).

verifiers finds a taskset (and its env) by a top-level module name; the id ``budgetgym-verifiers``
(the module ``budgetgym_verifiers``, installed with budgetgym) re-exports this one's classes::

    vf-eval budgetgym-verifiers --env.taskset.env-id budgetgym/FunctionCalling-v0 \\
        --env.taskset.split test --env.taskset.budget-mix '[0.25,0.5,1.0]' --env.taskset.reveal remaining \\
        -m MODEL --client.base-url http://127.0.0.1:8000/v1 -r 8

:class:`BudgetgymTaskset` yields one task per budgetgym task, built from ``budgetgym export``'s rows
(no env reset per task): the system prompt (instructions and tools in text form), the first
observation as the prompt, and in ``info`` the env id and arguments, task id, seed and full budget.
:class:`BudgetgymEnv` plays one task as one episode the way verifiers' own game envs do: the model
replies (its player's harness, by default verifiers' tool-less ``null`` chat harness in a local
subprocess), each reply is one budgetgym step, each observation comes back as the next user turn,
and the episode ends when the task is solved, fails, or the turn budget runs out. The trace records
the reward ``budgetgym_reward`` (the env's: 1.0 when solved) and, in ``trace.info``, the episode's
budget (the cap; the budget ``drawn`` under ``budget_mix``), turns and success. With ``reveal`` other
than ``none`` the opening prompt is the episode's own, with its (possibly drawn) cap announced.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Literal

from budgetgym.core.extras import MissingExtra

try:
    import verifiers.v1 as vf
    from verifiers.v1.harnesses.null import NullHarnessConfig
    from verifiers.v1.runtimes import SubprocessConfig
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("integrations", "the verifiers adapter", missing="verifiers") from err

from budgetgym.integrations.episode import BudgetSpec, ChatEpisode
from budgetgym.integrations.export import task_rows


class BudgetgymConfig(vf.TasksetConfig):
    """Which budgetgym tasks load, and the budget of their episodes (``--env.taskset.*``)."""

    env_id: str = "budgetgym/FunctionCalling-v0"
    split: str | None = None
    task_ids: list[str] | None = None
    seed: int = 0
    budget: int | float | str | None = None
    """A fixed cap: an int, a share of each task's full budget (a float in (0, 1]) or a multiple of
    the shortest solution (``"1.5x"``)."""
    budget_mix: list[int | float | str] | None = None
    """Budgets in the same forms; one is drawn per episode (``BudgetMix``)."""
    unit: Literal["turns", "calls", "tokens"] = "turns"
    reveal: Literal["none", "total", "remaining"] = "none"

    def budget_spec(self) -> BudgetSpec:
        return BudgetSpec(budget=self.budget, mix=None if self.budget_mix is None else tuple(self.budget_mix),
                          unit=self.unit, reveal=self.reveal)


class BudgetgymData(vf.TaskData):
    info: dict
    """``env_id``, ``env_kwargs``, ``task_id``, ``seed``, ``full_budget``, ``oracle_turns``."""


class BudgetgymTask(vf.Task[BudgetgymData, vf.State, vf.TaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.info['env_id']}:{self.data.info['task_id']}"


class BudgetgymEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig())


class BudgetgymEnv(vf.Env[BudgetgymEnvConfig]):
    """Plays a task as a budgetgym episode. The k-th episode of a task in this env (k = 0, 1, ...)
    plays seed ``seed + k``, so the attempts of a group draw their own caps under ``budget_mix``."""

    def __init__(self, config: BudgetgymEnvConfig) -> None:
        super().__init__(config)
        self._attempts: dict[str, int] = {}

    async def run(self, task, agents):
        info = task.data.info
        spec = self.taskset.config.budget_spec()
        attempt = self._attempts[task.key] = self._attempts.get(task.key, -1) + 1
        episode = ChatEpisode(info["env_id"], spec, native=False, **json.loads(info["env_kwargs"]))
        try:
            messages, _ = episode.start(info["task_id"], seed=info["seed"] + attempt)
            # The episode's own opening: under a revealed (or drawn) cap it announces this episode's cap.
            task = task.with_data(system_prompt=messages[0]["content"], prompt=messages[1]["content"])
            step = None
            async with agents.player.interaction(task) as interaction:
                segment = await interaction.turn()
                while not segment.terminated:
                    step = episode.act(segment.last_reply)
                    if step.done:
                        break
                    segment = await interaction.turn(step.observation)
            trace = interaction.trace
            trace.record_reward("budgetgym_reward", episode.total_reward, 1.0)
            trace.info["seed"] = info["seed"] + attempt
            trace.info["budget"] = episode.budget
            trace.info["success"] = episode.success
            trace.info["turns"] = episode.budget.get("used", 0)
            trace.info["truncated"] = bool(step is not None and step.truncated)
        finally:
            episode.close()


class BudgetgymTaskset(vf.Taskset[BudgetgymTask, BudgetgymConfig]):
    def load(self) -> Iterator[BudgetgymTask]:
        config = self.config
        for row in task_rows(config.env_id, split=config.split, seed=config.seed, tool_mode="text",
                             task_ids=config.task_ids):
            yield BudgetgymTask(
                BudgetgymData(
                    id=row["task_id"], name=row["task_id"],
                    system_prompt=row["prompt"][0]["content"], prompt=row["prompt"][1]["content"],
                    info={key: row[key] for key in ("env_id", "env_kwargs", "task_id", "seed", "full_budget",
                                                    "oracle_turns")},
                ),
                config.task,
            )


__all__ = ["BudgetgymConfig", "BudgetgymData", "BudgetgymEnv", "BudgetgymEnvConfig", "BudgetgymTask",
           "BudgetgymTaskset"]
