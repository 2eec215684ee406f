"""Speed of budgetgym/Navigation-v0 beside the raw TextWorld engine doing the same work, in one run.

Prints one JSON object. For each benchmarked game, a 30-command walk of admissible commands that
does not end the game is recorded once; then, in interleaved rounds:

* step: the env plays the walk (a step with ``info["admissible_actions"]``, and the oracle's next
  command asked at every step) beside ``textworld.start`` on the same story and game record playing
  the same commands with the same infos requested (``admissible_commands`` and ``policy_commands``,
  which makes TextWorld track the quests as the env's oracle needs). A second raw baseline requests
  ``admissible_commands`` only (no quest tracking) and is reported for reference;
* reset: a new episode of an already loaded game, env vs raw;
* restore: the env restores the snapshot taken after the walk by its fast path, by replaying the
  transcript, and the raw engine replays the 30 commands after a reset.

* make: in fresh interpreters, ``gym.make("budgetgym/Navigation-v0")`` beside ``import budgetgym``
  (TextWorld is imported when the first game is loaded, not by ``make``).

Targets: the env adds under 10% to a raw step; restore at least 20x faster than replaying the
30-step history; reset of a loaded game under 5 ms; ``gym.make`` within 2x ``import budgetgym``.

Times are CPU time of this process (``time.process_time``): the Jericho engine runs inside it, so
both sides are fully counted, and on a shared machine wall time would also count other programs'
turns (wall-clock ratios on this 2-core machine ranged 0.45-1.77 between runs of the same code).

    python benchmarks/bench_navigation.py [--rounds 5] [--games nav-easy-001,nav-hard-003] [--make-only]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budgetgym.core import TaskSet, load_tasks
from budgetgym.envs.navigation import NavigationEnv, games

WALK = 30


def record_walk(env: NavigationEnv, game: str, seed: int) -> list[str]:
    """WALK admissible commands from the start that leave the game running."""
    rng = random.Random(seed)
    env.reset(seed=0, options={"task_id": game})
    walk: list[str] = []
    while len(walk) < WALK:
        snap = env.snapshot()
        command = rng.choice(env.admissible_actions())
        _, _, terminated, truncated, _ = env.step(command)
        if terminated or truncated:
            env.reset(options={"snapshot": snap})
            continue
        walk.append(command)
    return walk


def bench_game(game: str, rounds: int, workdir: Path) -> dict:
    import textworld

    clock = time.process_time
    story = workdir / f"{game}.z8"
    shutil.copyfile(games.story_path(game), story)
    shutil.copyfile(games.GAMES_DIR / f"{game}.json", workdir / f"{game}.json")
    full = textworld.EnvInfos(admissible_commands=True, policy_commands=True, score=True, won=True, lost=True)
    light = textworld.EnvInfos(admissible_commands=True, score=True, won=True, lost=True)
    raw_full = textworld.start(str(story), request_infos=full)
    raw_light = textworld.start(str(story), request_infos=light)
    # The task with a budget past the walk: the benchmark measures steps, not truncation.
    env = NavigationEnv(tasks=TaskSet([dict(load_tasks("navigation").get(game).data, max_turns=10 * WALK)]))
    walk = record_walk(env, game, seed=1)
    times: dict[str, list[float]] = {k: [] for k in (
        "env_step", "raw_step", "raw_light_step", "env_reset", "raw_reset", "env_restore_fast", "env_restore_replay",
        "raw_replay")}
    for _ in range(rounds):
        # step
        env.reset(seed=0, options={"task_id": game})
        start = clock()
        for command in walk:
            env.step(command)
            env.oracle_action()
        times["env_step"].append((clock() - start) / len(walk))
        snap = env.snapshot()
        for raw, key in ((raw_full, "raw_step"), (raw_light, "raw_light_step")):
            raw.reset()
            start = clock()
            for command in walk:
                raw.step(command)
            times[key].append((clock() - start) / len(walk))
        # reset
        start = clock()
        for _ in range(20):
            env.reset(seed=0, options={"task_id": game})
        times["env_reset"].append((clock() - start) / 20)
        start = clock()
        for _ in range(20):
            raw_full.reset()
        times["raw_reset"].append((clock() - start) / 20)
        # restore
        start = clock()
        for _ in range(10):
            env.reset(options={"snapshot": snap})
        times["env_restore_fast"].append((clock() - start) / 10)
        replay = dict(snap, state=None)
        start = clock()
        env.reset(options={"snapshot": replay})
        times["env_restore_replay"].append(clock() - start)
        start = clock()
        raw_full.reset()
        for command in walk:
            raw_full.step(command)
        times["raw_replay"].append(clock() - start)
    env.close()
    raw_full.close()
    raw_light.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    ms = {k: round(v * 1000, 3) for k, v in med.items()}
    return {
        "game": game,
        "walk": len(walk),
        "ms": ms,
        "steps_per_s": {"env": round(1 / med["env_step"], 1), "raw": round(1 / med["raw_step"], 1),
                        "raw_admissible_only": round(1 / med["raw_light_step"], 1)},
        "ratios": {
            "env_step_over_raw_step": round(med["env_step"] / med["raw_step"], 3),
            "env_step_over_raw_admissible_only": round(med["env_step"] / med["raw_light_step"], 3),
            "replay_30_over_fast_restore": round(med["env_restore_replay"] / med["env_restore_fast"], 1),
            "raw_replay_30_over_fast_restore": round(med["raw_replay"] / med["env_restore_fast"], 1),
            "env_reset_over_raw_reset": round(med["env_reset"] / med["raw_reset"], 3),
        },
    }


MAKE_PROBE = """
import json, time
clock = time.process_time
start = clock()
import budgetgym
imported = clock() - start
import gymnasium as gym
start = clock()
env = gym.make("budgetgym/Navigation-v0")
made = clock() - start
import sys
print(json.dumps({"import": imported, "make": made, "textworld_imported": "textworld" in sys.modules}))
"""


def bench_make(rounds: int) -> dict:
    """``gym.make`` of the id beside ``import budgetgym``, each in a fresh interpreter (CPU time)."""
    runs = [json.loads(subprocess.run([sys.executable, "-c", MAKE_PROBE], check=True, capture_output=True,
                                      text=True).stdout.splitlines()[-1]) for _ in range(rounds)]
    imported = statistics.median(r["import"] for r in runs)
    made = statistics.median(r["make"] for r in runs)
    return {"import_budgetgym_ms": round(imported * 1000, 1), "gym_make_ms": round(made * 1000, 1),
            "make_over_import": round(made / imported, 3),
            "textworld_imported_by_make": any(r["textworld_imported"] for r in runs)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--games", default="nav-easy-001,nav-medium-003,nav-hard-003,nav-long-001")
    parser.add_argument("--make-only", action="store_true", help="measure gym.make beside import budgetgym only")
    args = parser.parse_args()
    make = bench_make(args.rounds)
    make_target = {"target": "< 2", "measured": make["make_over_import"], "met": make["make_over_import"] < 2}
    if args.make_only:
        print(json.dumps({"benchmark": "navigation", "python": platform.python_version(), "make": make,
                          "targets": {"make_over_import": make_target}}, indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="bench-nav-") as tmp:
        results = [bench_game(game, args.rounds, Path(tmp)) for game in args.games.split(",")]
    worst_step = max(r["ratios"]["env_step_over_raw_step"] for r in results)
    worst_restore = min(r["ratios"]["replay_30_over_fast_restore"] for r in results)
    worst_reset = max(r["ms"]["env_reset"] for r in results)
    print(json.dumps({
        "benchmark": "navigation",
        "python": platform.python_version(),
        "games": results,
        "make": make,
        "targets": {
            "make_over_import": make_target,
            "env_step_over_raw_step": {"target": "< 1.10", "measured_worst": worst_step, "met": worst_step < 1.10},
            "replay_30_over_fast_restore": {"target": ">= 20", "measured_worst": worst_restore,
                                            "met": worst_restore >= 20},
            "env_reset_ms": {"target": "< 5", "measured_worst": worst_reset, "met": worst_reset < 5},
        },
    }, indent=2))


if __name__ == "__main__":
    main()
