"""Group-relative policy gradient for a causal language model that writes its actions as text.

The study's language-model learner (:mod:`budgetgym.train.study`): the model plays episodes as an
:class:`~budgetgym.train.lm.LMAgent` (sampling with the KV cache), sees only the conversation, and
is given no candidate actions. Each iteration draws tasks of the training split; each task is
attempted ``group_size`` times, each attempt's advantage is its return minus the group's mean
(GRPO without a critic), and the loss is ``-advantage * mean log-probability`` of the tokens the
model wrote in that episode (every turn's reply given its prompt), one AdamW step per iteration.

The return is what the env pays under the chosen reward, and the regimes are those of
:mod:`budgetgym.train.grpo` (its :data:`~budgetgym.train.grpo.REWARDS` and
:func:`~budgetgym.train.grpo.training_env`: ``full`` and ``mix``, remaining turns shown, differing only
in the cap).
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
from budgetgym.train.grpo import REGIMES, REWARDS, training_env
from budgetgym.train.lm import ChatBatch, LMAgent, logits_at, release, train_top_layers


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
    #: Train on the tasks whose oracle needs at most this many turns (None: every training task).
    max_oracle_turns: int | None = None
    #: Update only the model's top this many decoder layers (None: all; :func:`~budgetgym.train.lm.train_top_layers`).
    train_layers: int | None = None

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {self.regime!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {sorted(REWARDS)}, got {self.reward!r}")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages are taken against the group's mean")


def sequence_log_prob(model: Any, trace: list[tuple[list[int], list[bool]]]) -> Any:
    """Mean log-probability of the tokens the model sampled in an episode (its trace: segments of
    token ids and sampled flags, :class:`~budgetgym.train.lm.TokenRows`), one forward pass a segment:
    each sampled token given everything before it, exactly the context it was drawn in."""
    import torch

    device = next(model.parameters()).device
    total, count = torch.zeros((), device=device), 0
    for ids, sampled in trace:
        targets = [i for i in range(1, len(ids)) if sampled[i]]
        if not targets:
            continue
        where = torch.zeros((1, len(ids)), dtype=torch.bool, device=device)
        where[0, [i - 1 for i in targets]] = True  # the positions that predicted each sampled token
        log_probs = torch.log_softmax(logits_at(model, torch.tensor([ids], device=device), where), -1)
        total = total + log_probs.gather(1, torch.tensor([ids[i] for i in targets], device=device)[:, None]).sum()
        count += len(targets)
    return total / max(count, 1)


def tasks_within(env: Any, max_oracle_turns: int | None) -> list[str]:
    """The env split's task ids, those whose oracle needs at most ``max_oracle_turns`` turns
    when given (the task's ``oracle_turns``, as the env reports it at reset)."""
    ids = list(text_env(env).tasks.ids)
    if max_oracle_turns is None:
        return ids
    kept = [t for t in ids if (turns := env.reset(seed=0, options={"task_id": t})[1].get("oracle_turns")) is not None
            and turns <= max_oracle_turns]
    if not kept:
        raise ValueError(f"no task of the split has an oracle that needs {max_oracle_turns} turns or fewer")
    return kept


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
    chat = ChatBatch(model, tokenizer, temperature=config.temperature, max_new_tokens=config.max_new_tokens)
    optimizer = torch.optim.AdamW(train_top_layers(model, config.train_layers), lr=config.learning_rate, weight_decay=0.0)
    envs = [training_env(config.env_id, config.regime, config.reward) for _ in range(config.group_size)]
    write_jsonl(out / "curve.jsonl", [])
    try:
        task_ids = tasks_within(envs[0], config.max_oracle_turns)
        with open(out / "curve.jsonl", "a", encoding="utf-8") as handle:
            for iteration in range(config.iterations):
                row = _iteration(envs, chat, optimizer, task_ids, config, iteration)
                handle.write(dumps_line(row))
                handle.flush()
                if progress is not None:
                    progress(row)
    finally:
        release(model)
        for env in envs:
            env.close()
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    (out / "done.json").write_text(json.dumps({"iterations": config.iterations}))
    model.eval()
    return agent


def play_group(envs: list[Any], chat: Any, task_id: str, seeds: list[int]) -> list[Any]:
    """One attempt of ``task_id`` per env, played in lockstep by ``chat`` (a
    :class:`~budgetgym.train.lm.ChatBatch`: the K replies of a turn in one batch); the rollouts."""
    from budgetgym.core.rollout import rollout_batch
    from budgetgym.train.lm import opening_messages

    starts = [env.reset(seed=seed, options={"task_id": task_id}) for env, seed in zip(envs, seeds)]
    chat.start([opening_messages(env, o, i) for env, (o, i) in zip(envs, starts)], seeds)
    return rollout_batch(envs, chat.act, starts)


def _iteration(envs: list[Any], chat: Any, optimizer: Any, task_ids: list[str], config: LMTrainConfig,
               iteration: int) -> dict[str, Any]:
    rng = np.random.default_rng([config.seed, iteration])
    chosen = rng.choice(len(task_ids), size=min(config.tasks_per_iteration, len(task_ids)), replace=False)
    returns, successes, turns, caps, groups = [], [], [], [], []
    started, model_seconds, model_cpu, tokens = (time.perf_counter(), chat.stats["seconds"], chat.stats["cpu_seconds"],
                                                 chat.stats["tokens"])
    chat.model.eval()
    for index in chosen:
        seeds = [int(rng.integers(2**31 - 1)) for _ in range(config.group_size)]
        played = play_group(envs, chat, task_ids[int(index)], seeds)
        rewards = np.array([episode.total_reward for episode in played])
        returns.extend(rewards.tolist())
        successes.extend(episode.success for episode in played)
        turns.extend(episode.turns for episode in played)
        caps.extend(episode.info["budget"]["cap"] for episode in played)
        groups.append(([(float(r), chat.trace(row)) for row, r in enumerate(rewards)], rewards - rewards.mean()))
    play_seconds = time.perf_counter() - started
    losses = policy_gradient_step(chat.model, optimizer, groups)
    return {"iteration": iteration, "mean_reward": float(np.mean(returns)), "success_rate": float(np.mean(successes)),
            "mean_turns": float(np.mean(turns)), "mean_cap": float(np.mean(caps)), "episodes": len(returns),
            "loss": float(np.sum(losses)) if losses else 0.0, "updated_episodes": len(losses),
            "play_seconds": play_seconds, "model_seconds": chat.stats["seconds"] - model_seconds,
            "model_cpu_seconds": chat.stats["cpu_seconds"] - model_cpu, "generated_tokens": chat.stats["tokens"] - tokens,
            "update_seconds": time.perf_counter() - started - play_seconds}


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
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
    model.eval()
    return losses


def read_curve(out: str | Path) -> list[dict[str, Any]]:
    return read_jsonl(Path(out) / "curve.jsonl")


__all__ = ["LMTrainConfig", "play_group", "policy_gradient_step", "read_curve", "tasks_within", "sequence_log_prob", "train_lm"]
