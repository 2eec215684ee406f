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
  verdict. Target: the env within 1.2x of the checker's time.

    python benchmarks/bench_bfcl.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import platform
import statistics
import time
from typing import Any

CATEGORY = "multi_turn_base"


def load_entries() -> tuple[list[dict[str, Any]], dict[str, list[list[str]]]]:
    data = importlib.resources.files("bfcl_eval") / "data"
    entries = [json.loads(line) for line in (data / f"BFCL_v4_{CATEGORY}.json").read_text().splitlines() if line.strip()]
    answers = {a["id"]: a["ground_truth"] for a in map(json.loads, (data / "possible_answer" / f"BFCL_v4_{CATEGORY}.json")
                                                        .read_text().splitlines()) if a}
    return entries, answers


def record_oracle(env: Any, ids: list[str]) -> list[list[str]]:
    solutions = []
    for task_id in ids:
        env.reset(options={"task_id": task_id})
        actions = []
        while (action := env.oracle_action()) is not None:
            actions.append(action)
            env.step(action)
        solutions.append(actions)
    return solutions


def env_call_seconds(env: Any, ids: list[str], solutions: list[list[str]]) -> float:
    """Seconds spent in the env's call steps (answers and resets are not counted)."""
    clock, seconds = time.process_time, 0.0
    for task_id, actions in zip(ids, solutions):
        env.reset(options={"task_id": task_id})
        for action in actions:
            if action.startswith("["):
                start = clock()
                env.step(action)
                seconds += clock() - start
            else:
                env.step(action)
    return seconds


def env_whole_set_seconds(env: Any, ids: list[str], solutions: list[list[str]]) -> tuple[float, int]:
    """Seconds to play every entry from reset to the verdict, and how many were solved."""
    solved = 0
    start = time.process_time()
    for task_id, actions in zip(ids, solutions):
        env.reset(options={"task_id": task_id})
        for action in actions:
            _, reward, terminated, truncated, _ = env.step(action)
        solved += reward == 1.0
    return time.process_time() - start, solved


def _drop_instances(module: Any, model: str) -> None:
    # BFCL's executor keeps every instance it builds in its module's globals, for good.
    for name in [n for n in vars(module) if n.startswith(model)]:
        delattr(module, name)


def executor_seconds(entries: list[dict[str, Any]], answers: dict[str, list[list[str]]], run: int) -> tuple[float, int]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    model, calls = f"budgetgym_bench_exec_{run}", 0
    start = time.process_time()
    for entry in entries:
        for turn_calls in answers[entry["id"]]:
            multi_turn_utils.execute_multi_turn_func_call(
                turn_calls, entry["initial_config"], entry["involved_classes"], model, entry["id"])
            calls += len(turn_calls)
    elapsed = time.process_time() - start
    _drop_instances(multi_turn_utils, model)
    return elapsed, calls


def checker_seconds(entries: list[dict[str, Any]], answers: dict[str, list[list[str]]], run: int) -> tuple[float, int]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    model, valid = f"budgetgym_bench_check_{run}", 0
    start = time.process_time()
    for entry in entries:
        ground_truth = answers[entry["id"]]
        decoded = [[turn] if turn else [] for turn in ground_truth]  # the model's steps: one per turn
        result = multi_turn_checker.multi_turn_checker(decoded, ground_truth, entry, CATEGORY, model)
        valid += bool(result["valid"])
    elapsed = time.process_time() - start
    _drop_instances(multi_turn_utils, model)
    return elapsed, valid


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
    solutions = record_oracle(env, ids)
    env_whole_set_seconds(env, ids, solutions)  # warm-up: per-task caches, imports
    checker_seconds(entries[:5], answers, -1)

    rounds: dict[str, list[float]] = {"env_calls_s": [], "executor_s": [], "env_whole_set_s": [], "checker_s": []}
    for run in range(args.rounds):
        rounds["env_calls_s"].append(env_call_seconds(env, ids, solutions))
        seconds, executor_calls = executor_seconds(entries, answers, run)
        rounds["executor_s"].append(seconds)
        seconds, env_solved = env_whole_set_seconds(env, ids, solutions)
        rounds["env_whole_set_s"].append(seconds)
        seconds, checker_valid = checker_seconds(entries, answers, run)
        rounds["checker_s"].append(seconds)
    best = {key: min(values) for key, values in rounds.items()}
    calls = executor_calls
    result = {
        "set": CATEGORY, "entries": len(entries), "ground_truth_calls": calls, "rounds": args.rounds,
        "python": platform.python_version(), "machine": platform.machine(),
        "calls": {
            "env_calls_per_s": round(calls / best["env_calls_s"]), "executor_calls_per_s": round(calls / best["executor_s"]),
            "ratio_env_to_executor": round(best["executor_s"] / best["env_calls_s"], 2),
            "per_round_ratios": [round(e / c, 2) for c, e in zip(rounds["env_calls_s"], rounds["executor_s"])],
        },
        "whole_set_scoring": {
            "env_seconds": round(best["env_whole_set_s"], 3), "checker_seconds": round(best["checker_s"], 3),
            "env_solved": env_solved, "checker_valid": checker_valid,
            "ratio_env_to_checker": round(best["env_whole_set_s"] / best["checker_s"], 2),
            "per_round_ratios": [round(e / c, 2) for e, c in zip(rounds["env_whole_set_s"], rounds["checker_s"])],
        },
        "targets": {
            "env_calls_vs_executor_at_least": {"target": 1.0, "measured": None},
            "env_scoring_vs_checker_at_most": {"target": 1.2, "measured": None},
        },
    }
    result["targets"]["env_calls_vs_executor_at_least"]["measured"] = result["calls"]["ratio_env_to_executor"]
    result["targets"]["env_scoring_vs_checker_at_most"]["measured"] = result["whole_set_scoring"]["ratio_env_to_checker"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
