"""Group rollouts for GRPO-style training: K attempts of the same task in one vector env batch.

Each group is one task played by K sub-envs of ``gym.make_vec`` at once, each under ``BudgetMix``
(a cap drawn per episode from the episode's seed, announced to the agent). Every episode is recorded
with its drawn budget (the share drawn and the cap), its turns, success and reward, and the group's rewards are
turned into group-relative advantages ``(r - mean) / (std + 1e-6)``, as GRPO does. Each episode
also gets step-level advantages (GiGPO): the steps the group's episodes took from the same state
are compared by their discounted returns (``budgetgym.train.step_groups``, which replays the
recorded actions to recover each step's state), so even a group whose episodes all fail says which
step from a shared state did better. ``--reward`` picks the env's ``reward_mode`` (``sparse``,
``progress`` or ``oracle_distance``).

The policy here is a stand-in for a model: the env's oracle, except that each turn is, with
probability ``--p``, a wasted turn (an unknown tool call). With tight caps, some attempts of a group
succeed and some run out of turns, which is what gives a group its signal.

Autoreset: Gymnasium's vector envs reset a sub-env on the ``step`` call after its episode ended
(``AutoresetMode.NEXT_STEP``, the default); that step ignores the action, and the reset takes no
options, so the sub-env draws a task of its own. A group therefore ends when all K episodes have
ended; the loop ignores what finished sub-envs return meanwhile, and the next group starts with a
``reset`` that names its task.

    python examples/group_rollouts.py --env budgetgym/FunctionCalling-v0 --tasks 4 --k 8 --out runs/groups.jsonl
    python examples/group_rollouts.py --env budgetgym/Web-v0 --reward oracle_distance --tasks 4 --k 8
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core.jsonl import write_jsonl
from budgetgym.train.step_groups import episode_steps, group_steps, step_advantages
from budgetgym.wrappers import BudgetMix

WASTED_TURN = json.dumps({"name": "no_such_tool", "arguments": {}})


def collect_group(envs: gym.vector.VectorEnv, task_id: str, seed: int, p: float, rng: np.random.Generator) -> list[dict]:
    """Play K attempts of ``task_id`` (one per sub-env, seeds ``seed`` .. ``seed + K - 1``)."""
    k = envs.num_envs
    _, infos = envs.reset(seed=[seed + i for i in range(k)], options={"task_id": task_id})
    episodes = [{"task_id": task_id, "attempt": i, "seed": seed + i, "drawn": float(infos["budget"]["drawn"][i]),
                 "cap": int(infos["budget"]["cap"][i]), "full_budget": int(infos["full_budget"][i]),
                 "turns": 0, "success": False, "truncated": False, "reward": 0.0, "actions": []} for i in range(k)]
    active = np.ones(k, dtype=bool)
    while active.any():
        oracle = envs.call("oracle_action")  # the stand-in model reads the oracle; a real one reads observations
        actions = tuple(
            (WASTED_TURN if rng.random() < p or oracle[i] is None else oracle[i]) if active[i] else ""
            for i in range(k))
        _, rewards, terminated, truncated, _ = envs.step(actions)
        for i in np.flatnonzero(active):
            episode = episodes[i]
            episode["turns"] += 1
            episode["actions"].append(actions[i])
            episode["reward"] += float(rewards[i])
            if terminated[i] or truncated[i]:
                episode.update(success=bool(terminated[i] and rewards[i] > 0), truncated=bool(truncated[i]))
                active[i] = False
    rewards = [e["reward"] for e in episodes]
    mean, std = statistics.fmean(rewards), statistics.pstdev(rewards)
    for episode in episodes:
        episode["advantage"] = (episode["reward"] - mean) / (std + 1e-6)
    return episodes


def add_step_advantages(replay: gym.Env, episodes: list[dict]) -> int:
    """Give each episode of one group its step-level advantages; return how many states the group's
    episodes shared (states with two steps or more: the anchors that carry a step-level signal)."""
    steps = [episode_steps(replay, e["task_id"], e["seed"], e["actions"], episode=n) for n, e in enumerate(episodes)]
    for episode, advantages in zip(episodes, step_advantages(steps)):
        episode["step_advantages"] = advantages
    return sum(len(group) > 1 for group in group_steps(steps).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="budgetgym/FunctionCalling-v0")
    parser.add_argument("--split", default="test")
    parser.add_argument("--tasks", type=int, default=4, help="groups: the first N tasks of the split")
    parser.add_argument("--k", type=int, default=8, help="attempts per task (the group size)")
    parser.add_argument("--fractions", default="0.25,0.5,0.75,1.0", help="BudgetMix's shares of the full budget")
    parser.add_argument("--p", type=float, default=0.2, help="the stand-in policy's share of wasted turns")
    parser.add_argument("--mode", choices=("sync", "async"), default="sync")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reward", choices=("sparse", "progress", "oracle_distance"), default="sparse",
                        help="the env's reward_mode")
    parser.add_argument("--out", default=None, help="write the episodes as JSON lines here")
    args = parser.parse_args(argv)
    fractions = tuple(float(f) for f in args.fractions.split(","))
    vector_kwargs = {"shared_memory": False} if args.mode == "async" else {}
    listing = gym.make(args.env, split=args.split)
    task_ids = listing.unwrapped.tasks.ids[: args.tasks]
    listing.close()
    envs = gym.make_vec(args.env, num_envs=args.k, vectorization_mode=args.mode, vector_kwargs=vector_kwargs,
                        wrappers=[lambda env: BudgetMix(env, fractions, reveal="remaining")], split=args.split,
                        reward_mode=args.reward)
    replay = gym.make(args.env, split=args.split, reward_mode=args.reward)  # the steps' states, recovered
    rng = np.random.default_rng(args.seed)
    episodes, anchors = [], 0
    for number, task_id in enumerate(task_ids):
        group = collect_group(envs, task_id, args.seed + number * args.k, args.p, rng)
        anchors += add_step_advantages(replay, group)
        episodes += group
    envs.close()
    replay.close()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(Path(args.out), episodes)
    solved = sum(e["success"] for e in episodes)
    by_fraction = {f: [e["success"] for e in episodes if e["drawn"] == f] for f in fractions}
    print(json.dumps({"env": args.env, "groups": len(task_ids), "k": args.k, "episodes": len(episodes),
                      "reward": args.reward, "shared_states": anchors,
                      "solved": solved, "success_by_fraction": {str(f): (sum(v) / len(v) if v else None)
                                                                for f, v in by_fraction.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
