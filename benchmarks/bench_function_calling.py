"""Speed of budgetgym/FunctionCalling-v0, and of BFCL's own executor on the same kind of calls.

Prints one JSON object. All figures come from one run in one process:

* rollouts: the oracle's solution of every shipped task, recorded once, then replayed (reset plus
  every step) on the bare env and through ``gym.make``'s wrappers; and live, asking the oracle
  before each step;
* latencies (microseconds): reset, snapshot, restore of every curated failure state by the fast
  path (the backend state) and by replay, scoring one user turn, and, within a step, the shared
  parser and the JSON Schema validation it runs on every call;
* backend_only: the same tool calls run straight on fresh backends, without parser or env;
* bfcl: BFCL's ground-truth calls for every multi_turn_base entry replayed through
  ``bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils.execute_multi_turn_func_call`` (fresh
  backend instances per entry, as an evaluation does), and our replay's speed as a ratio of it.

    python benchmarks/bench_function_calling.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable

import gymnasium as gym

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_failure_states, parse_action
from budgetgym.envs.function_calling import FunctionCallingEnv
from budgetgym.core.state import copy_state
from budgetgym.core.tools import ToolError
from budgetgym.envs.function_calling.scoring import turn_problem

ENV_ID = "budgetgym/FunctionCalling-v0"


def _per_call_us(samples: list[Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Mean and median microseconds of each sample function, over ``repeats`` passes."""
    times = []
    for _ in range(repeats):
        for sample in samples:
            start = time.perf_counter()
            sample()
            times.append(time.perf_counter() - start)
    return {"mean_us": round(statistics.fmean(times) * 1e6, 2), "median_us": round(statistics.median(times) * 1e6, 2),
            "n": len(times)}


def record_oracle(env: FunctionCallingEnv) -> list[list[str]]:
    solutions = []
    for index in range(len(env.tasks)):
        env.reset(options={"task_index": index})
        actions = []
        while (action := env.oracle_action()) is not None:
            actions.append(action)
            env.step(action)
        solutions.append(actions)
    return solutions


def replay_rate(env: gym.Env, solutions: list[list[str]], repeats: int) -> dict[str, float]:
    steps = sum(map(len, solutions)) * repeats
    start = time.perf_counter()
    for _ in range(repeats):
        for index, actions in enumerate(solutions):
            env.reset(options={"task_index": index})
            for action in actions:
                env.step(action)
    elapsed = time.perf_counter() - start
    return {"steps": steps, "seconds": round(elapsed, 4), "steps_per_s": round(steps / elapsed)}


def step_latency(env: FunctionCallingEnv, solutions: list[list[str]], repeats: int) -> dict[str, dict[str, float]]:
    """Microseconds per step, for steps that call tools and for messages that answer a user turn."""
    times: dict[str, list[float]] = {"tool_call_step": [], "answer_step": []}
    for _ in range(repeats):
        for index, actions in enumerate(solutions):
            env.reset(options={"task_index": index})
            for action in actions:
                start = time.perf_counter()
                env.step(action)
                times["answer_step" if not action.startswith("{") else "tool_call_step"].append(time.perf_counter() - start)
    return {kind: {"mean_us": round(statistics.fmean(t) * 1e6, 2), "median_us": round(statistics.median(t) * 1e6, 2),
                   "n": len(t)} for kind, t in times.items()}


def live_oracle_rate(env: FunctionCallingEnv, repeats: int) -> dict[str, float]:
    steps = 0
    start = time.perf_counter()
    for _ in range(repeats):
        for index in range(len(env.tasks)):
            env.reset(options={"task_index": index})
            while (action := env.oracle_action()) is not None:
                env.step(action)
                steps += 1
    elapsed = time.perf_counter() - start
    return {"steps": steps, "seconds": round(elapsed, 4), "steps_per_s": round(steps / elapsed)}


def scoring_samples(env: FunctionCallingEnv, solutions: list[list[str]]) -> list[Callable[[], Any]]:
    """For every user turn of every task, the check run on the answering message, at that moment."""
    samples = []
    for index, actions in enumerate(solutions):
        env.reset(options={"task_index": index})
        for action in actions:
            if not action.startswith("{"):
                domain, turn = env._domain, env.task["turns"][env.user_turn]
                state = json.loads(json.dumps(env.backend_state))  # frozen copy of the state at that moment
                samples.append(lambda d=domain, s=state, t=turn, m=action: turn_problem(d, s, t, m))
            env.step(action)
    return samples


def parsing_samples(env: FunctionCallingEnv, solutions: list[list[str]]) -> tuple[list, list]:
    """The shared parser on every oracle action, and the schema validation alone on every call."""
    parse, validate = [], []
    for index, actions in enumerate(solutions):
        env.reset(options={"task_index": index})
        tools = env.tools
        for action in actions:
            parse.append(lambda a=action, t=tools: parse_action(a, t, allow_message=True))
            for call in parse_action(action, tools, allow_message=True).calls:
                validate.append(lambda tool=tools[call.name], args=call.arguments: tool.validation_error(args))
            env.step(action)
    return parse, validate


def backend_rate(env: FunctionCallingEnv, solutions: list[list[str]], repeats: int) -> dict[str, float]:
    """The oracle's tool calls run straight on fresh backends: no parser, no env (BFCL's executor's job)."""
    tasks = []
    for index, actions in enumerate(solutions):
        env.reset(options={"task_index": index})
        calls = [(env.tools[c.name].function, c.arguments) for a in actions
                 for c in parse_action(a, env.tools, allow_message=True).calls]
        tasks.append((env._domain.backend, env.task["initial_state"], calls))
    count = sum(len(calls) for _, _, calls in tasks) * repeats
    start = time.perf_counter()
    for _ in range(repeats):
        for make_backend, initial, calls in tasks:
            backend = make_backend(copy_state(initial))
            for function, arguments in calls:
                try:
                    function(backend, **arguments)
                except ToolError:
                    pass
    elapsed = time.perf_counter() - start
    return {"calls": count, "seconds": round(elapsed, 4), "calls_per_s": round(count / elapsed)}


def bfcl_rate(repeats: int) -> dict[str, Any]:
    try:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    except ImportError as err:
        return {"skipped": f"bfcl-eval is not installed ({err}); pip install --no-deps bfcl-eval mpmath"}
    import importlib.resources

    data = importlib.resources.files("bfcl_eval") / "data"
    entries = [json.loads(line) for line in (data / "BFCL_v4_multi_turn_base.json").read_text().splitlines() if line.strip()]
    answers = {a["id"]: a["ground_truth"] for a in map(json.loads, (data / "possible_answer" / "BFCL_v4_multi_turn_base.json")
                                                        .read_text().splitlines()) if a}
    calls = 0
    start = time.perf_counter()
    for run in range(repeats):
        model = f"budgetgym_bench_{run}"
        for entry in entries:
            for turn_calls in answers[entry["id"]]:
                multi_turn_utils.execute_multi_turn_func_call(
                    turn_calls, entry["initial_config"], entry["involved_classes"], model, entry["id"])
                calls += len(turn_calls)
        # The executor caches backend instances in its module globals; drop this run's.
        for name in [n for n in vars(multi_turn_utils) if n.startswith(model)]:
            delattr(multi_turn_utils, name)
    elapsed = time.perf_counter() - start
    return {"entries": len(entries), "calls": calls, "seconds": round(elapsed, 4), "calls_per_s": round(calls / elapsed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    bare = FunctionCallingEnv()
    solutions = record_oracle(bare)
    wrapped = gym.make(ENV_ID)
    replay_rate(bare, solutions, 1)  # warm up caches (tool sets, compiled regular expressions)

    snapshots = [dict(state["snapshot"]) for state in load_failure_states("function_calling")]
    replayed = [{**snapshot, "state": None} for snapshot in snapshots]
    parse, validate = parsing_samples(bare, solutions)
    resets = [lambda i=index: bare.reset(options={"task_index": i}) for index in range(len(solutions))]

    result = {
        "env": ENV_ID,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "tasks": len(solutions),
        "rollouts": {
            "replay_bare_env": replay_rate(bare, solutions, args.repeats),
            "replay_gym_make": replay_rate(wrapped, solutions, args.repeats),
            "live_oracle_bare_env": live_oracle_rate(bare, args.repeats),
        },
        "backend_only": backend_rate(bare, solutions, args.repeats),
        "latency": {
            "reset": _per_call_us(resets, args.repeats),
            "snapshot": _per_call_us([lambda: bare.snapshot()], 2000),
            "restore_fast": _per_call_us([lambda s=s: bare.reset(options={"snapshot": s}) for s in snapshots], args.repeats),
            "restore_replay": _per_call_us([lambda s=s: bare.reset(options={"snapshot": s}) for s in replayed], 1),
            **step_latency(bare, solutions, args.repeats),
            "score_user_turn": _per_call_us(scoring_samples(bare, solutions), args.repeats),
            "parse_action": _per_call_us(parse, args.repeats),
            "schema_validation_per_call": _per_call_us(validate, args.repeats),
        },
        "bfcl_executor": bfcl_rate(max(1, args.repeats // 2)),
        "targets": {"steps_per_s": 30000, "reset_us": 200, "restore_us": 200, "score_user_turn_us": 1000},
    }
    bfcl = result["bfcl_executor"]
    if "calls_per_s" in bfcl:
        result["ratio_replay_to_bfcl_executor"] = round(
            result["rollouts"]["replay_bare_env"]["steps_per_s"] / bfcl["calls_per_s"], 1)
        result["ratio_backend_calls_to_bfcl_executor"] = round(result["backend_only"]["calls_per_s"] / bfcl["calls_per_s"], 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
