"""What the evaluation harness adds per episode over stepping the env directly; prints JSON.

The same episodes two ways, in one process, in turn round after round (CPU time of this process):

* ``direct``: the loop an RL user writes by hand: ``gym.make`` once, then per episode
  ``agent.reset``, ``env.reset(seed, task)``, and ``agent.act`` / ``env.step`` until it ends,
  the episode's actions kept;
* ``sweep``: ``run_sweep`` of the same agent, tasks and seeds with the serial executor, writing the
  episodes file (planning, the budget facts, per-turn details, the record and its JSON line, the
  file), as ``budgetgym eval`` runs it.

The workload: the noisy oracle on the first ``--tasks`` tasks of ``--env``, ``--attempts`` each, at
the full budget (``reveal="none"``: the sweep's single-run shortcut, so one episode per task and
attempt on both sides). The target (issue 27): the sweep within 1.15x of the direct loop.

    python benchmarks/bench_harness.py [--env ID] [--tasks N] [--attempts N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))

import budgetgym  # noqa: E402,F401  (registers the ids)
from budgetgym.core.env import text_env  # noqa: E402
from budgetgym.eval.agents import NoisyOracleAgent  # noqa: E402
from budgetgym.eval.sweep import derive_seed, run_sweep  # noqa: E402
from timing import best, interleaved, target  # noqa: E402

TARGET_SWEEP_OVER_DIRECT = 1.15


def direct(env_id: str, task_ids: list[str], attempts: int, seed: int) -> tuple[float, int]:
    """CPU seconds of the hand-written loop, and the episodes it played."""
    env = gym.make(env_id)
    agent = NoisyOracleAgent()
    started = time.process_time()
    episodes = 0
    for task_id in task_ids:
        for attempt in range(attempts):
            episode_seed = derive_seed(seed, env_id, task_id, attempt)
            observation, info = env.reset(seed=episode_seed, options={"task_id": task_id})
            agent.reset(env, observation, info, episode_seed)
            actions = []
            while True:
                action = agent.act(observation, info)
                actions.append(action)
                observation, reward, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            episodes += 1
    elapsed = time.process_time() - started
    env.close()
    return elapsed, episodes


def sweep(env_id: str, task_ids: list[str], attempts: int, seed: int) -> tuple[float, int]:
    """CPU seconds of ``run_sweep`` (serial, with its episodes file), and the episodes it ran."""
    with tempfile.TemporaryDirectory() as folder:
        started = time.process_time()
        result = run_sweep(env_id, NoisyOracleAgent(), tasks=task_ids, k=[1], n=attempts, reveal="none",
                           seed=seed, executor="serial", out=Path(folder) / "episodes.jsonl")
        elapsed = time.process_time() - started
    return elapsed, result.ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="budgetgym/FunctionCalling-v0")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    probe = gym.make(args.env)
    task_ids = [task.id for task in text_env(probe).tasks][: args.tasks]
    probe.close()
    counts: dict[str, int] = {}

    def measure(name: str, run):  # type: ignore[no-untyped-def]
        def once() -> float:
            elapsed, episodes = run(args.env, task_ids, args.attempts, args.seed)
            counts[name] = episodes
            return elapsed
        return once

    measure("direct", direct)()  # warm both paths (imports, caches) before the clock
    values = interleaved({"direct": measure("direct", direct), "sweep": measure("sweep", sweep)}, args.rounds)
    if counts["direct"] != counts["sweep"]:
        raise SystemExit(f"the two sides ran different episodes: {counts}")
    fastest = best(values)
    ratio = round(fastest["sweep"] / fastest["direct"], 3)
    print(json.dumps({
        "env": args.env, "episodes": counts["sweep"], "rounds": args.rounds,
        "cpu_s": {name: [round(v, 3) for v in series] for name, series in values.items()},
        "per_episode_ms": {name: round(1000 * v / counts[name], 3) for name, v in fastest.items()},
        "targets": {"sweep_over_direct_at_most": target(TARGET_SWEEP_OVER_DIRECT, ratio)},
    }, indent=2))


if __name__ == "__main__":
    main()
