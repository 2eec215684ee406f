"""Group-relative policy gradient for :class:`LinearSoftmaxPolicy`, in two budget regimes.

Each iteration draws tasks from the training split; each task is attempted ``group_size`` times
(a group), and each attempt's advantage is its return minus the group's mean return (GRPO without
the learned critic). The return is exactly what the env pays under the chosen reward
(:data:`REWARDS`): ``sparse`` (1.0 when solved), ``milestone`` (the env's ``reward_mode="progress"``)
or ``oracle-distance`` (potential-based shaping from the oracle's distance,
:mod:`budgetgym.core.process_reward`). Success in the curve is always the env's ``success``,
whichever reward trained. The two regimes differ only in the turn cap, never in the reward:

* ``full``: every episode at the task's full budget, the remaining turns shown
  (``BudgetMix(budgets=(1.0,), reveal="remaining")``);
* ``mix``: a cap drawn per episode from ``MIX_FRACTIONS`` of the full budget (1x, 1.25x, 1.5x and
  2x the oracle's turns, as the full budget is twice them), the remaining turns shown.

Training is resumable: each iteration's random draws come from ``(seed, iteration)`` alone, the
weights are checkpointed with the iteration they reached, and ``curve.jsonl`` is cut back to the
checkpoint on resume, so an interrupted run ends exactly like an uninterrupted one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from budgetgym.core import agent_view, read_jsonl, rollout, text_env, write_jsonl
from budgetgym.core.jsonl import dumps_line
from budgetgym.train.policy import LinearSoftmaxPolicy
from budgetgym.wrappers import BudgetMix

FULL_FRACTIONS = (1.0,)
MIX_FRACTIONS = (0.5, 0.625, 0.75, 1.0)
REGIMES = {"full": FULL_FRACTIONS, "mix": MIX_FRACTIONS}
#: The study's reward names and the env's ``reward_mode`` each one is (both learners train with them).
REWARDS = {"sparse": "sparse", "milestone": "progress", "oracle-distance": "oracle_distance"}


@dataclass(frozen=True)
class TrainConfig:
    env_id: str
    regime: str
    iterations: int = 40
    tasks_per_iteration: int = 8
    group_size: int = 8
    learning_rate: float = 0.5
    seed: int = 0
    checkpoint_every: int = 5
    env_kwargs: dict[str, Any] = field(default_factory=lambda: {"split": "train"})
    reward: str = "sparse"

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {self.regime!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        if "reward_mode" in self.env_kwargs:
            raise ValueError("env_kwargs: give the reward as reward=..., not reward_mode (one way to say it)")
        for name in ("iterations", "tasks_per_iteration", "group_size", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are taken against the group's mean")


def training_env(env_id: str, regime: str, reward: str = "sparse", **env_kwargs: Any) -> gym.Env:
    """The env a learner trains in: ``env_id`` paying ``reward`` under ``regime``'s caps, remaining
    turns shown (``env_kwargs`` default to the training split)."""
    env = gym.make(env_id, **{"split": "train", **env_kwargs, "reward_mode": REWARDS[reward]})
    return BudgetMix(env, budgets=REGIMES[regime], reveal="remaining")


def train(config: TrainConfig, out: str | Path, *, policy: LinearSoftmaxPolicy | None = None,
          name: str | None = None, progress: Any = None) -> LinearSoftmaxPolicy:
    """Train (or resume training) into ``out``: ``config.json``, ``curve.jsonl``, ``policy.npz``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    saved_config = out / "config.json"
    checkpoint = out / "policy.npz"
    state_file = out / "state.json"
    wanted = asdict(config)
    start = 0
    policy = policy or LinearSoftmaxPolicy.base(name=name or f"grpo-{config.regime}")
    if saved_config.exists():
        existing = json.loads(saved_config.read_text())
        existing.setdefault("reward", "sparse")  # runs saved before the reward was a choice trained on it
        if existing != wanted:
            changed = sorted(k for k in set(existing) | set(wanted) if existing.get(k) != wanted.get(k))
            raise ValueError(f"{out} holds a run with another configuration ({', '.join(changed)} differ): "
                             "use another folder or the same configuration")
        if checkpoint.exists() and state_file.exists():
            start = json.loads(state_file.read_text())["iteration"]
            policy = LinearSoftmaxPolicy.load(checkpoint, name=policy.name)
    else:
        saved_config.write_text(json.dumps(wanted, indent=2, sort_keys=True))
    curve_path = out / "curve.jsonl"
    curve = [r for r in read_jsonl(curve_path) if r["iteration"] < start] if curve_path.exists() else []
    write_jsonl(curve_path, curve)

    env = training_env(config.env_id, config.regime, config.reward, **config.env_kwargs)
    try:
        task_ids = list(text_env(env).tasks.ids)
        with open(curve_path, "a", encoding="utf-8") as handle:
            for iteration in range(start, config.iterations):
                row = _iteration(env, policy, task_ids, config, iteration)
                handle.write(dumps_line(row))
                handle.flush()
                if progress is not None:
                    progress(row)
                if (iteration + 1) % config.checkpoint_every == 0 or iteration + 1 == config.iterations:
                    policy.save(checkpoint)
                    state_file.write_text(json.dumps({"iteration": iteration + 1}))
    finally:
        env.close()
    return policy


def _iteration(env: gym.Env, policy: LinearSoftmaxPolicy, task_ids: list[str], config: TrainConfig,
               iteration: int) -> dict[str, Any]:
    rng = np.random.default_rng([config.seed, iteration])
    chosen = rng.choice(len(task_ids), size=min(config.tasks_per_iteration, len(task_ids)), replace=False)
    gradient = np.zeros_like(policy.weights)
    returns_all, successes, turns_all, caps = [], [], [], []
    for index in chosen:
        task_id = task_ids[int(index)]
        group = []
        for attempt in range(config.group_size):
            seed = int(rng.integers(2**31 - 1))
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            policy.reset(env, observation, agent_view(info), seed)
            played = rollout(env, lambda o, i, e: policy.act(o, agent_view(i)), start=(observation, info))
            group.append((played.total_reward, list(policy.trace)))
            successes.append(played.success)
            turns_all.append(played.turns)
            caps.append(info["budget"]["cap"])
        returns = np.array([episode_return for episode_return, _ in group])
        returns_all.extend(returns.tolist())
        for (_, trace), advantage in zip(group, returns - returns.mean()):
            if advantage != 0.0:
                gradient += advantage * policy.log_prob_gradient(trace)
    policy.weights += config.learning_rate * gradient / (len(chosen) * config.group_size)
    return {"iteration": iteration, "mean_reward": float(np.mean(returns_all)),
            "success_rate": float(np.mean(successes)), "mean_turns": float(np.mean(turns_all)),
            "mean_cap": float(np.mean(caps)), "episodes": len(returns_all)}
