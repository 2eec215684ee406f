"""The language-model study's cost: wall time and peak memory of a study run, tokens per second of
the LM's generation, and the share of training time in the env against the model. Prints JSON.

    python benchmarks/bench_study.py [--env budgetgym/FunctionCalling-v0] [--size tiny]

It runs the study at ``--size`` (tiny by default: a pipeline check of about a minute on an idle
core) into a temporary folder, counts the episodes it played from its files, and projects the
default size's time as (seconds per episode measured) x (episodes the default plays). The
projection is a lower bound: the default's model is larger, so its episodes cost more.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def played_episodes(out: Path) -> dict[str, int]:
    """Episodes a finished study played, per part, from its files."""
    from budgetgym.core import read_jsonl

    count = lambda pattern: sum(len(read_jsonl(path)) for path in sorted(out.glob(pattern)))
    training = sum(row["episodes"] for path in sorted(out.glob("train-*/curve.jsonl")) for row in read_jsonl(path))
    quality = json.loads((out / "action_quality.json").read_text())
    return {"training": training, "sweeps": count("episodes-*.jsonl"), "recovery": count("recovery-*.jsonl"),
            "quality": 2 * quality["states"]}


def planned_episodes(config, test_tasks: int, oracle_turns: float) -> dict[str, int]:
    """Episodes a study of ``config`` plays (the action-quality probe: its states x rollouts x 2 policies)."""
    from budgetgym.train.study import policy_names

    names = policy_names(config)
    tasks = test_tasks if config.eval_tasks == "test" else int(config.eval_tasks)
    return {"training": (len(names) - 1) * config.iterations * config.tasks_per_iteration * config.group_size,
            "sweeps": len(names) * tasks * len(config.budgets) * 2 * max(config.ks),
            "recovery": len(names) * config.recovery_states * config.recovery_attempts * 2,
            "quality": int(2 * config.quality_tasks * oracle_turns * config.quality_rollouts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="budgetgym/FunctionCalling-v0")
    parser.add_argument("--size", choices=("tiny", "default"), default="tiny")
    parser.add_argument("--rewards", default="sparse")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    import gymnasium as gym
    import torch

    from budgetgym.core import read_jsonl, text_env
    from budgetgym.train.study import StudyConfig, run_study

    rewards = tuple(args.rewards.split(","))
    config = replace(StudyConfig.tiny(args.env) if args.size == "tiny" else StudyConfig(env_id=args.env), rewards=rewards,
                     threads=args.threads)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        started, cpu = time.perf_counter(), time.process_time()
        run_study(out, config, log=lambda message: None)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        played = played_episodes(out)
        curves = [row for path in sorted(out.glob("train-*/curve.jsonl")) for row in read_jsonl(path)]
        sweeps = [row for path in sorted(out.glob("episodes-*.jsonl")) for row in read_jsonl(path)]
    env = gym.make(args.env, split="test")
    base = text_env(env)
    test_tasks = len(base.tasks.ids)
    env.close()
    mean_turns = sum(r["turns"] for r in sweeps) / max(len(sweeps), 1)
    default = planned_episodes(replace(StudyConfig(), env_id=args.env, rewards=rewards), test_tasks, mean_turns)
    per_episode = wall / max(sum(played.values()), 1)
    play = sum(row["play_seconds"] for row in curves)
    model = sum(row["model_seconds"] for row in curves)
    model_cpu = sum(row.get("model_cpu_seconds", 0.0) for row in curves)
    tokens = sum(row.get("generated_tokens", 0) for row in curves)
    print(json.dumps({
        "env": args.env, "size": args.size, "rewards": list(rewards), "threads": torch.get_num_threads(),
        "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "episodes": played, "seconds_per_episode": round(per_episode, 3),
        "training_play": {"seconds": round(play, 2), "model_share": round(model / play, 4) if play else None,
                          "env_share": round(1 - model / play, 4) if play else None,
                          "generated_tokens": tokens,
                          "tokens_per_second": round(tokens / model, 1) if model else None,
                          "tokens_per_cpu_second": round(tokens / model_cpu, 1) if model_cpu else None},
        "load_average": os.getloadavg(),
        "default_episodes": default,
        "default_projected_minutes_lower_bound": round(per_episode * sum(default.values()) / 60, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
