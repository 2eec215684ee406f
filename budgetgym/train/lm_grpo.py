"""Group-relative policy gradient for a causal language model that writes its actions as text.

The study's language-model learner (:mod:`budgetgym.train.study`): the model plays episodes as an
:class:`~budgetgym.train.lm.LMAgent` (sampling with the KV cache), sees only the conversation, and
is given no candidate actions. Each iteration draws tasks of the training split; each task is
attempted ``group_size`` times, each attempt's advantage is its return minus the group's mean
(GRPO without a critic), and the loss is ``-advantage * mean log-probability`` of the tokens the
model wrote in that episode (every turn's reply given its prompt), one AdamW step per iteration.

The return is what the env pays under the chosen reward (:data:`REWARDS`): ``sparse`` (1.0 when
solved), ``milestone`` (``reward_mode="progress"``) or ``oracle-distance`` (potential-based shaping
from the oracle's distance, :mod:`budgetgym.core.process_reward`). The regimes are those of
:mod:`budgetgym.train.grpo` (``full`` and ``mix``, remaining turns shown): they differ only in the cap.
Success in the curve is always the env's ``success``, whichever reward trained.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from budgetgym.core import read_jsonl, rollout, text_env, write_jsonl
from budgetgym.core.jsonl import dumps_line
from budgetgym.train.grpo import REGIMES
from budgetgym.train.lm import LMAgent

#: The study's reward names and the env's ``reward_mode`` each one is.
REWARDS = {"sparse": "sparse", "milestone": "progress", "oracle-distance": "oracle_distance"}


@dataclass(frozen=True)
class LMTrainConfig:
    env_id: str
    regime: str
    reward: str = "sparse"
    iterations: int = 8
    tasks_per_iteration: int = 4
    group_size: int = 4
    learning_rate: float = 1e-4
    temperature: float = 1.0
    max_new_tokens: int = 48
    seed: int = 0

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {self.regime!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are taken against the group's mean")


def training_env(env_id: str, regime: str, reward: str) -> Any:
    import gymnasium as gym

    from budgetgym.wrappers import BudgetMix

    return BudgetMix(gym.make(env_id, split="train", reward_mode=REWARDS[reward]), budgets=REGIMES[regime],
                     reveal="remaining")


def sequence_log_prob(model: Any, trace: list[tuple[list[int], list[int]]]) -> Any:
    """Mean log-probability of the reply tokens of an episode's turns, each given its own prompt."""
    import torch

    device = next(model.parameters()).device
    total, count = torch.zeros((), device=device), 0
    for prompt, reply in trace:
        if not reply:
            continue
        ids = torch.tensor([prompt + reply], device=device)
        logits = model(input_ids=ids).logits[0, len(prompt) - 1:-1]
        log_probs = torch.log_softmax(logits.float(), -1)
        total = total + log_probs.gather(1, torch.tensor(reply, device=device)[:, None]).sum()
        count += len(reply)
    return total / max(count, 1)


def train_lm(config: LMTrainConfig, model: Any, tokenizer: Any, out: str | Path, *, name: str,
             progress: Any = None) -> LMAgent:
    """Train ``model`` in place with GRPO into ``out`` (``config.json``, ``curve.jsonl``, the model);
    a finished run in ``out`` with the same configuration is loaded, not trained again."""
    import torch

    from budgetgym.train.lm import load

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = asdict(config)
    if (out / "done.json").exists():
        existing = json.loads((out / "config.json").read_text())
        if existing != wanted:
            raise ValueError(f"{out} holds a run with another configuration: use another folder or the same one")
        model, tokenizer = load(out / "model", device=str(next(model.parameters()).device))
        return LMAgent(model, tokenizer, name=name, temperature=config.temperature,
                       max_new_tokens=config.max_new_tokens)
    (out / "config.json").write_text(json.dumps(wanted, indent=2, sort_keys=True))
    agent = LMAgent(model, tokenizer, name=name, temperature=config.temperature, max_new_tokens=config.max_new_tokens)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    env = training_env(config.env_id, config.regime, config.reward)
    write_jsonl(out / "curve.jsonl", [])
    try:
        task_ids = list(text_env(env).tasks.ids)
        with open(out / "curve.jsonl", "a", encoding="utf-8") as handle:
            for iteration in range(config.iterations):
                row = _iteration(env, agent, optimizer, task_ids, config, iteration)
                handle.write(dumps_line(row))
                handle.flush()
                if progress is not None:
                    progress(row)
    finally:
        env.close()
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    (out / "done.json").write_text(json.dumps({"iterations": config.iterations}))
    model.eval()
    return agent


def _iteration(env: Any, agent: LMAgent, optimizer: Any, task_ids: list[str], config: LMTrainConfig,
               iteration: int) -> dict[str, Any]:
    rng = np.random.default_rng([config.seed, iteration])
    chosen = rng.choice(len(task_ids), size=min(config.tasks_per_iteration, len(task_ids)), replace=False)
    returns, successes, turns, caps, groups = [], [], [], [], []
    started, model_seconds = time.perf_counter(), agent.stats["seconds"]
    agent.model.eval()
    for index in chosen:
        group = []
        for attempt in range(config.group_size):
            seed = int(rng.integers(2**31 - 1))
            observation, info = env.reset(seed=seed, options={"task_id": task_ids[int(index)]})
            agent.reset(env, observation, info, seed)
            played = rollout(env, lambda o, i, e: agent.act(o, i), start=(observation, info))
            group.append((played.total_reward, list(agent.trace)))
            successes.append(played.success)
            turns.append(played.turns)
            caps.append(info["budget"]["cap"])
        rewards = np.array([reward for reward, _ in group])
        returns.extend(rewards.tolist())
        groups.append((group, rewards - rewards.mean()))
    play_seconds = time.perf_counter() - started
    losses = policy_gradient_step(agent.model, optimizer, groups)
    return {"iteration": iteration, "mean_reward": float(np.mean(returns)), "success_rate": float(np.mean(successes)),
            "mean_turns": float(np.mean(turns)), "mean_cap": float(np.mean(caps)), "episodes": len(returns),
            "loss": float(np.sum(losses)) if losses else 0.0, "updated_episodes": len(losses),
            "play_seconds": play_seconds, "model_seconds": agent.stats["seconds"] - model_seconds}


def policy_gradient_step(model: Any, optimizer: Any, groups: list[tuple[list[tuple[float, Any]], np.ndarray]]) -> list[float]:
    """One GRPO update from ``groups`` (each: its episodes as (return, trace), and their advantages);
    the per-episode losses. An episode whose advantage is 0 carries no signal and is skipped."""
    import torch

    model.train()
    optimizer.zero_grad()
    episodes = sum(len(group) for group, _ in groups)
    losses = []
    for group, advantages in groups:
        for (_, trace), advantage in zip(group, advantages):
            if advantage == 0.0 or not trace:
                continue
            loss = -float(advantage) * sequence_log_prob(model, trace) / episodes
            loss.backward()
            losses.append(float(loss.detach()))
    if losses:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    model.eval()
    return losses


def read_curve(out: str | Path) -> list[dict[str, Any]]:
    return read_jsonl(Path(out) / "curve.jsonl")


__all__ = ["LMTrainConfig", "REWARDS", "policy_gradient_step", "read_curve", "sequence_log_prob", "train_lm", "training_env"]
