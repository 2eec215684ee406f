"""Dataset export: a task's first observation from ``initial_observation`` against a reset.

Prints JSON. For each shipped family id: the time per task of ``TextEnv.initial_observation`` (the
export's path) and of a ``reset`` to the task (the path the export avoids), on one env, and their
ratio (the same, give or take a tenth, where a family has no ``initial_observation`` of its own and
it resets); the time per row of the whole export (``task_rows``: the chat prompt and JSON tools too). Also the
per-step cost the chat engine under the trainer adapters (``ChatEpisode``) adds over the bare env
on an oracle episode. All figures come from one run, rounds interleaved.

    python benchmarks/bench_export.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Callable

import gymnasium as gym
from timing import target

import budgetgym
from budgetgym.core.rollout import rollout
from budgetgym.integrations import ChatEpisode
from budgetgym.integrations.export import task_rows


def rows_time(env_id: str) -> tuple[float, int]:
    start = time.perf_counter()
    count = sum(1 for _ in task_rows(env_id))
    return time.perf_counter() - start, count


def in_turn(first: Callable[[], float], second: Callable[[], float], second_first: bool) -> tuple[float, float]:
    """Both measurements, as (first's, second's), ``second`` taken first when ``second_first``."""
    if second_first:
        later = second()
        return first(), later
    earlier = first()
    return earlier, second()


def first_observation_times(env_id: str, hook_first: bool) -> tuple[float, float]:
    """Seconds for every task's first observation: by ``initial_observation``, and by ``reset``, on
    one env warmed by a pass of each (a family without its own ``initial_observation`` resets: the
    first pass over its tasks loads what later ones reuse); ``hook_first`` says which is timed first."""
    env = gym.make(env_id)
    base = env.unwrapped

    def hooks() -> float:
        start = time.perf_counter()
        for task in base.tasks:
            base.initial_observation(task, 0)
        return time.perf_counter() - start

    def resets() -> float:
        start = time.perf_counter()
        for task in base.tasks:
            env.reset(seed=0, options={"task_id": task.id})
        return time.perf_counter() - start

    hooks(), resets()
    hook, reset = in_turn(hooks, resets, second_first=not hook_first)
    env.close()
    return hook, reset


def episode_steps(env_id: str, task_ids: list[str], chat_first: bool) -> tuple[float, float, int]:
    """Seconds to replay the oracle's episodes on the bare env and through ChatEpisode, and the step
    count; ``chat_first`` says which side is timed first (the first pays for what is still cold)."""
    bare = gym.make(env_id)
    actions = {task_id: rollout(bare, "oracle", seed=0, options={"task_id": task_id}).actions for task_id in task_ids}
    steps = sum(len(a) for a in actions.values())

    def bare_time() -> float:
        start = time.perf_counter()
        for task_id in task_ids:
            bare.reset(seed=0, options={"task_id": task_id})
            for action in actions[task_id]:
                bare.step(action)
        return time.perf_counter() - start

    def chat_time() -> float:
        episode = ChatEpisode(env_id)
        start = time.perf_counter()
        for task_id in task_ids:
            episode.start(task_id, seed=0)
            for action in actions[task_id]:
                episode.act(action)
        elapsed = time.perf_counter() - start
        episode.close()
        return elapsed

    plain, chat = in_turn(bare_time, chat_time, second_first=chat_first)
    bare.close()
    return plain, chat, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {}
    for entry in budgetgym.REGISTRY:
        if entry.adapter:
            continue
        task_ids = list(gym.make(entry.id).unwrapped.tasks.ids[:50])
        rows, hooks, resets, bare, chat = [], [], [], [], []
        for round_ in range(args.rounds):
            elapsed, count = rows_time(entry.id)
            rows.append(elapsed)
            hook, reset = first_observation_times(entry.id, hook_first=round_ % 2 == 0)
            hooks.append(hook)
            resets.append(reset)
            bare_time, chat_time, steps = episode_steps(entry.id, task_ids, chat_first=round_ % 2 == 1)
            bare.append(bare_time / steps)
            chat.append(chat_time / steps)
        hook_us = statistics.median(hooks) / count * 1e6
        reset_us = statistics.median(resets) / count * 1e6
        results[entry.id] = {
            "tasks": count,
            "export_row_us": round(statistics.median(rows) / count * 1e6, 1),
            "initial_observation_us": round(hook_us, 1),
            "reset_us": round(reset_us, 1),
            "initial_observation_over_reset": target(1.0, round(hook_us / reset_us, 2), slack=1.1),
            # The least of the rounds: sides alternate which goes first, so each has a warm round.
            "bare_step_us": round(min(bare) * 1e6, 1),
            "chat_episode_step_us": round(min(chat) * 1e6, 1),
            "chat_over_bare_step": target(3.0, round(min(chat) / min(bare), 2)),
        }
    print(json.dumps({"benchmark": "export", "python": platform.python_version(), "rounds": args.rounds,
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
