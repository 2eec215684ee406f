"""The language-model path on CPU: a tiny causal LM (made here, nothing downloaded) playing budgetgym
through TRL's GRPOTrainer (``environment_factory``) and as an evaluation agent (``LMAgent``, sampling
with the KV cache). Prints JSON: tokens per second of generation, and the share of each path's
time spent in the env against the model.

    python benchmarks/bench_trl.py [--quick] [--env budgetgym/Web-v0] [--steps 2]

The model is untrained (speed does not depend on its weights): what it writes is mostly invalid
actions, which cost the env a turn each, as a weak policy's do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import target  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="budgetgym/Web-v0")
    parser.add_argument("--steps", type=int, default=2, help="GRPO steps")
    parser.add_argument("--episodes", type=int, default=4, help="LMAgent episodes")
    parser.add_argument("--quick", action="store_true", help="one GRPO step, two episodes")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.episodes = 1, 2
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    import budgetgym
    from budgetgym.core.rollout import rollout
    from budgetgym.integrations.episode import BudgetSpec
    from budgetgym.integrations.trl import TRLEnvironmentFactory, trl_rows
    from budgetgym.train import lm

    torch.manual_seed(0)
    budget = BudgetSpec(budget="1.5x", reveal="remaining")
    conversations = lm.scripted_conversations([args.env], agent_p=0.3, tasks=4, budget=budget)
    with tempfile.TemporaryDirectory() as folder:
        model, tokenizer = lm.load(lm.make_tiny_lm(Path(folder) / "tiny", conversations, size="tiny"))
        # GRPO through TRL: the env's time is what the pool's episodes spent in reset and act.
        factory = TRLEnvironmentFactory(budget, reward_mode="progress")
        rows = trl_rows(args.env, split="train", limit=2)
        config = GRPOConfig(output_dir=str(Path(folder) / "grpo"), use_cpu=True, per_device_train_batch_size=8,
                            num_generations=4, max_completion_length=256, max_steps=args.steps, logging_steps=1,
                            report_to="none", save_strategy="no", max_tool_calling_iterations=8, beta=0.0,
                            disable_tqdm=True)
        trainer = GRPOTrainer(model=model, args=config, train_dataset=Dataset.from_list(rows),
                              processing_class=tokenizer, environment_factory=factory)
        trainer.remove_callback(PrinterCallback)  # stdout carries the JSON only
        started = time.perf_counter()
        trainer.train()
        grpo_seconds = time.perf_counter() - started
        grpo_env = sum(e.env_seconds for e in factory.episodes)
        completion_tokens = sum(h.get("num_tokens", 0) for h in trainer.state.log_history[-2:-1])
        factory.close()
        # Evaluation: LMAgent through the one rollout loop.
        agent = lm.LMAgent(model, tokenizer, name="tiny", max_new_tokens=64)
        env = budgetgym.make(args.env, budget="1.5x", reveal="remaining", split="test")
        started = time.perf_counter()
        turns = 0
        for seed in range(args.episodes):
            observation, info = env.reset(seed=seed)
            agent.reset(env, observation, info, seed)
            turns += rollout(env, lambda o, i, e: agent.act(o, i), start=(observation, info)).turns
        eval_seconds = time.perf_counter() - started
        env.close()
    model_share = agent.stats["seconds"] / eval_seconds
    print(json.dumps({
        "env": args.env, "model_parameters": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
        "grpo": {"steps": args.steps, "seconds": round(grpo_seconds, 2), "episodes": len(factory.episodes),
                 "env_seconds": round(grpo_env, 3), "env_share": round(grpo_env / grpo_seconds, 4),
                 "tokens_seen_last_step": completion_tokens},
        "lm_agent": {"episodes": args.episodes, "turns": turns, "seconds": round(eval_seconds, 2),
                     "generated_tokens": agent.stats["tokens"],
                     "tokens_per_second": round(agent.stats["tokens"] / agent.stats["seconds"], 1),
                     "model_share": round(model_share, 4), "env_share": round(1 - model_share, 4),
                     "kv_cache": True},
        "targets": {"env_share_of_grpo": target(0.05, round(grpo_env / grpo_seconds, 4))},
    }, indent=1))


if __name__ == "__main__":
    main()
