"""Speed of budgetgym/BFCL-v0 beside BFCL's own executor and checker, on BFCL's multi_turn_base set.

Prints one JSON object; every figure comes from one run in one process, the rounds of ours and
BFCL's interleaved, in CPU time of this process (``time.process_time``: on a shared machine, wall
time counts other processes' turns), the best round of each reported:

* calls: BFCL's ground-truth calls of every entry, through the env (the oracle's steps, recorded
  once and replayed: parsing, schema validation, the call on BFCL's instances, the observation),
  timed step by step over the call steps only; and through BFCL's executor
  (``execute_multi_turn_func_call``, which ``eval``s each call string, fresh instances per entry).
  Target: the env at least as fast (``ratio_env_to_executor`` >= 1);
* whole_set_scoring: scoring every entry when the model's answer is the ground truth: BFCL's
  ``multi_turn_checker`` (executes the model's calls and the ground truth's, then checks state and
  responses each turn), against the env playing the same calls and answers from reset to the
  verdict. Warm: the process has played each entry twice before, as in training, where every
  episode after a task's second meets the reference kept per user turn (``backend.py``: the second
  episode keeps it); cold: a fresh env each round (made outside the timing) with the kept references
  forgotten, the first scoring of each entry, which replays every ground truth with BFCL's executor
  (as a one-pass evaluation does). Targets: warm within 1.2x of the checker's time, cold within 1.5x (issue 27).

Every figure is taken with ``benchmarks/timing.py``, and ``targets`` holds each target beside its
measured value and whether it is met.

    python benchmarks/bench_bfcl.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import platform
import time
from typing import Any

from timing import best, interleaved, play, record_oracle, seconds, target

CATEGORY = "multi_turn_base"


def load_entries() -> tuple[list[dict[str, Any]], dict[str, list[list[str]]]]:
    data = importlib.resources.files("bfcl_eval") / "data"
    entries = [json.loads(line) for line in (data / f"BFCL_v4_{CATEGORY}.json").read_text().splitlines() if line.strip()]
    answers = {a["id"]: a["ground_truth"] for a in map(json.loads, (data / "possible_answer" / f"BFCL_v4_{CATEGORY}.json")
                                                        .read_text().splitlines()) if a}
    return entries, answers


def starts(ids: list[str]) -> list[dict[str, Any]]:
    return [{"options": {"task_id": task_id}} for task_id in ids]


def env_call_seconds(env: Any, ids: list[str], solutions: list[list[str]]) -> float:
    """Seconds spent in the env's call steps (answers and resets are not counted)."""
    clock, elapsed = time.process_time, 0.0
    for start, actions in zip(starts(ids), solutions):
        env.reset(**start)
        for action in actions:
            if action.startswith("["):
                elapsed += seconds(lambda: env.step(action), clock)
            else:
                env.step(action)
    return elapsed


def env_whole_set_seconds(env: Any, ids: list[str], solutions: list[list[str]]) -> tuple[float, int]:
    """Seconds to play every entry from reset to the verdict, and how many were solved."""
    rewards: list[float] = []
    elapsed = seconds(lambda: rewards.extend(play(env, starts(ids), solutions)), time.process_time)
    return elapsed, sum(reward == 1.0 for reward in rewards)


def cold_whole_set_seconds(env: Any, ids: list[str], solutions: list[list[str]]) -> tuple[float, int]:
    """The same from a cold start: the process's kept references forgotten first (not timed)."""
    from budgetgym.envs.bfcl.backend import forget_references

    forget_references()
    return env_whole_set_seconds(env, ids, solutions)


def _drop_instances(module: Any, model: str) -> None:
    # BFCL's executor keeps every instance it builds in its module's globals, for good.
    for name in [n for n in vars(module) if n.startswith(model)]:
        delattr(module, name)


def executor_seconds(entries: list[dict[str, Any]], answers: dict[str, list[list[str]]], run: int) -> tuple[float, int]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    model, calls = f"budgetgym_bench_exec_{run}", [0]

    def execute() -> None:
        for entry in entries:
            for turn_calls in answers[entry["id"]]:
                multi_turn_utils.execute_multi_turn_func_call(
                    turn_calls, entry["initial_config"], entry["involved_classes"], model, entry["id"])
                calls[0] += len(turn_calls)

    elapsed = seconds(execute, time.process_time)
    _drop_instances(multi_turn_utils, model)
    return elapsed, calls[0]


def checker_seconds(entries: list[dict[str, Any]], answers: dict[str, list[list[str]]], run: int) -> tuple[float, int]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    model, valid = f"budgetgym_bench_check_{run}", [0]

    def check() -> None:
        for entry in entries:
            ground_truth = answers[entry["id"]]
            decoded = [[turn] if turn else [] for turn in ground_truth]  # the model's steps: one per turn
            result = multi_turn_checker.multi_turn_checker(decoded, ground_truth, entry, CATEGORY, model)
            valid[0] += bool(result["valid"])

    elapsed = seconds(check, time.process_time)
    _drop_instances(multi_turn_utils, model)
    return elapsed, valid[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    try:
        from budgetgym.envs.bfcl import BFCLEnv
        BFCLEnv(categories=("base",))
    except ImportError as err:
        print(json.dumps({"skipped": f"bfcl-eval is not installed ({err}); pip install --no-deps bfcl-eval mpmath"}))
        return

    entries, answers = load_entries()
    env = BFCLEnv(categories=("base",))
    ids = [entry["id"] for entry in entries]
    solutions = record_oracle(env, starts(ids))
    for _ in range(2):  # warm-up: per-task caches, imports; the second play keeps the references
        env_whole_set_seconds(env, ids, solutions)
    checker_seconds(entries[:5], answers, -1)

    fresh = [BFCLEnv(categories=("base",)) for _ in range(args.rounds)]  # one cold env per round
    counts: dict[str, int] = {}
    runs = iter(range(10**9))

    def counted(name: str, measured: tuple[float, int]) -> float:
        counts[name] = measured[1]
        return measured[0]

    rounds = interleaved({
        "env_calls_s": lambda: env_call_seconds(env, ids, solutions),
        "executor_s": lambda: counted("executor_calls", executor_seconds(entries, answers, next(runs))),
        "env_whole_set_s": lambda: counted("env_solved", env_whole_set_seconds(env, ids, solutions)),
        "env_whole_set_cold_s": lambda: counted("env_cold_solved", cold_whole_set_seconds(fresh.pop(), ids, solutions)),
        "checker_s": lambda: counted("checker_valid", checker_seconds(entries, answers, next(runs))),
    }, args.rounds)
    least = best(rounds)
    calls = counts["executor_calls"]
    result = {
        "set": CATEGORY, "entries": len(entries), "ground_truth_calls": calls, "rounds": args.rounds,
        "python": platform.python_version(), "machine": platform.machine(),
        "calls": {
            "env_calls_per_s": round(calls / least["env_calls_s"]), "executor_calls_per_s": round(calls / least["executor_s"]),
            "ratio_env_to_executor": round(least["executor_s"] / least["env_calls_s"], 2),
            "per_round_ratios": [round(e / c, 2) for c, e in zip(rounds["env_calls_s"], rounds["executor_s"])],
        },
        "whole_set_scoring": {
            "env_seconds": round(least["env_whole_set_s"], 3), "checker_seconds": round(least["checker_s"], 3),
            "env_cold_seconds": round(least["env_whole_set_cold_s"], 3),
            "env_solved": counts["env_solved"], "env_cold_solved": counts["env_cold_solved"],
            "checker_valid": counts["checker_valid"],
            "ratio_env_to_checker": round(least["env_whole_set_s"] / least["checker_s"], 2),
            "ratio_cold_env_to_checker": round(least["env_whole_set_cold_s"] / least["checker_s"], 2),
            "per_round_ratios": [round(e / c, 2) for e, c in zip(rounds["env_whole_set_s"], rounds["checker_s"])],
            "per_round_cold_ratios": [round(e / c, 2) for e, c in zip(rounds["env_whole_set_cold_s"], rounds["checker_s"])],
        },
    }
    result["targets"] = {
        "env_calls_vs_executor_at_least": target(1.0, result["calls"]["ratio_env_to_executor"], at_most=False),
        "env_scoring_vs_checker_at_most": target(1.2, result["whole_set_scoring"]["ratio_env_to_checker"]),
        "cold_env_scoring_vs_checker_at_most": target(1.5, result["whole_set_scoring"]["ratio_cold_env_to_checker"]),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
