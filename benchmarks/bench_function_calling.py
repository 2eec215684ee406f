"""Speed of budgetgym/FunctionCalling-v0, and of BFCL's own executor on the same kind of calls.

Prints one JSON object. All figures come from one run in one process (but making the env, which
is timed in fresh processes):

* step: the least a function-calling text env does in a step (the floor: ``json.loads`` of the
  action, a message taken as it is, a dict update, the observation as JSON text and Gymnasium's
  5-tuple) beside the env's step on the same actions, in CPU time of this process, batches of the
  two alternating; ``step_to_floor`` is the env's over the floor's (the target is at most 3);
* rollouts: the oracle's solution of every shipped task, recorded once, then replayed (reset plus
  every step) on the bare env and through ``gym.make``'s wrappers; and live, asking the oracle
  before each step;
* latencies (microseconds of CPU time, each the best of a few batches): reset, snapshot (after
  every step of every oracle solution, mean and median of single calls, beside those steps' CPU:
  the target's figure, ``snapshot_to_step``; and after a reset, the smallest case), restore of every curated failure state by the fast
  path (the backend state; again with the env's memory of schema-checked digests cleared before
  each, as for a snapshot met the first time) and by replay, scoring one user turn, the oracle's next action (and
  how it grows with the calls already made in the user turn: it should not), and, within a step,
  the shared parser and the JSON Schema validation it runs on every call;
* make_env_ms: ``gym.make`` in a fresh process that has imported budgetgym and Gymnasium (the
  family's modules, its tasks and tools are loaded then), and again in a process that has one;
* backend_only: the same tool calls run straight on fresh backends, without parser or env;
* bfcl: BFCL's ground-truth calls for every multi_turn_base entry replayed through
  ``bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils.execute_multi_turn_func_call`` (fresh
  backend instances per entry, as an evaluation does), and our replay's speed as a ratio of it
  (``bench_bfcl.py`` measures the BFCL-v0 env itself against BFCL's executor and checker).

Every figure is taken with ``benchmarks/timing.py``, and ``targets`` holds each target beside its
measured value and whether it is met.

    python benchmarks/bench_function_calling.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Iterator

import gymnasium as gym
from timing import cpu_per_call_us, interleaved, play, play_oracle, rate, record_oracle, seconds, target, wall_stats_us

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_failure_states, parse_action
from budgetgym.envs.function_calling import FunctionCallingEnv
from budgetgym.core.state import copy_state
from budgetgym.core.tools import Tool, ToolError
from budgetgym.envs.function_calling import env as fc_env_module
from budgetgym.envs.function_calling.scoring import turn_problem

try:  # the check the env prepares once per task and user turn (absent from older revisions)
    from budgetgym.envs.function_calling.scoring import TurnCheck
except ImportError:  # pragma: no cover - compare_revisions.py runs this script on older packages
    TurnCheck = None

ENV_ID = "budgetgym/FunctionCalling-v0"


def forget_schema_checks(env: Any) -> None:
    """Forget which snapshot digests passed the state schema (absent from older revisions)."""
    getattr(env, "_schema_checked", {}).clear()


def starts(env: Any) -> list[dict[str, Any]]:
    """Every task of the env, by index (the reset arguments of each episode)."""
    return [{"options": {"task_index": index}} for index in range(len(env.unwrapped.tasks))]


def replay_rate(env: gym.Env, solutions: list[list[str]], repeats: int) -> dict[str, float]:
    steps = sum(map(len, solutions)) * repeats
    elapsed = seconds(lambda: [play(env, starts(env), solutions) for _ in range(repeats)])
    return rate(steps, elapsed)


def floor_step(action: str, state: dict[str, Any], turn: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """The least a function-calling text env does in a step: read the action (JSON; a message as it
    is), update the state dict, write the observation (a JSON result) and return the 5-tuple."""
    value = json.loads(action) if action[:1] in "{[" else action
    state[turn] = value
    observation = json.dumps({"ok": True, "turn": turn, "fields": len(state)})
    return observation, 0.0, False, False, {"turn": turn, "action_valid": True}


@contextlib.contextmanager
def without(parts: tuple[str, ...]) -> Iterator[None]:
    """The env with some of its own work taken out (an ablation: never how the env runs). ``answer
    check``: every message accepted unchecked (the oracle's are accepted anyway, so the episodes are
    the same); ``validation``: tool arguments taken unchecked; ``result encoding``: tool results not
    written as JSON."""
    saved = [(TurnCheck, "problem", TurnCheck.problem), (Tool, "validation_error", Tool.validation_error),
             (fc_env_module, "encode_result", fc_env_module.encode_result)]
    try:
        if "answer check" in parts:
            TurnCheck.problem = lambda self, domain, state, message: None
        if "validation" in parts:
            Tool.validation_error = lambda self, arguments: None
        if "result encoding" in parts:
            fc_env_module.encode_result = lambda result: "{}"
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


ABLATIONS = {"without_answer_check": ("answer check",),
             "without_answer_check_and_validation": ("answer check", "validation"),
             "without_answer_check_validation_and_result_encoding": ("answer check", "validation", "result encoding")}


def step_vs_floor(env: FunctionCallingEnv, solutions: list[list[str]], rounds: int) -> dict[str, Any]:
    """CPU time (``time.process_time``: on a shared machine, wall time counts others' turns) of a
    step, from batches: every task's resets and steps, less its resets alone; and of the floor on
    the same actions. The batches alternate within each round. ``ablation``: the same step with
    parts of the family's own work taken out (see ``without``), each as a ratio to the floor: what
    the target would need the family to stop doing."""
    clock, episodes = time.process_time, starts(env)
    steps = sum(map(len, solutions))

    def floor() -> None:
        for actions in solutions:
            state: dict[str, Any] = {}
            for turn, action in enumerate(actions):
                floor_step(action, state, turn)

    def step_us(parts: tuple[str, ...] = ()) -> float:
        with without(parts):
            played = seconds(lambda: play(env, episodes, solutions), clock)
            resets = seconds(lambda: [env.reset(**start) for start in episodes], clock)
        return (played - resets) / steps * 1e6

    measures: dict[str, Callable[[], float]] = {"step": step_us, "floor": lambda: seconds(floor, clock) / steps * 1e6}
    ablations = ABLATIONS if TurnCheck is not None else {}  # older revisions (compare_revisions.py) have no TurnCheck
    measures.update({name: (lambda parts=parts: step_us(parts)) for name, parts in ablations.items()})
    rounds_of = interleaved(measures, rounds)
    step_us_, floor_us = rounds_of["step"], rounds_of["floor"]
    ratios = [s / f for s, f in zip(step_us_, floor_us)]
    return {"step_us": round(min(step_us_), 2), "floor_us": round(min(floor_us), 2),
            "step_to_floor": round(min(step_us_) / min(floor_us), 2),
            "step_to_floor_median_of_rounds": round(statistics.median(ratios), 2),
            "ablation": {name: {"step_us": round(min(rounds_of[name]), 2),
                                "to_floor": round(min(rounds_of[name]) / min(floor_us), 2)} for name in ablations},
            "steps": steps, "rounds": rounds, "clock": "process_time"}


def step_latency(env: FunctionCallingEnv, solutions: list[list[str]], repeats: int) -> dict[str, Any]:
    """Wall-clock microseconds per step, for steps that call tools and for messages that answer a
    user turn, each step timed right after the floor on the same action."""
    times: dict[str, list[float]] = {"tool_call_step": [], "answer_step": []}
    floors: dict[str, list[float]] = {"tool_call_step": [], "answer_step": []}
    clock = time.perf_counter
    for _ in range(repeats):
        for index, actions in enumerate(solutions):
            env.reset(options={"task_index": index})
            state: dict[str, Any] = {}
            for turn, action in enumerate(actions):
                kind = "tool_call_step" if action.startswith(("{", "[")) else "answer_step"  # a batch is a list
                start = clock()
                floor_step(action, state, turn)
                middle = clock()
                env.step(action)
                end = clock()
                floors[kind].append(middle - start)
                times[kind].append(end - middle)
    result: dict[str, Any] = {kind: wall_stats_us(t) for kind, t in times.items()}
    result["floor"] = {kind: wall_stats_us(t) for kind, t in floors.items()}
    return result


def snapshot_latency(env: FunctionCallingEnv, solutions: list[list[str]], rounds: int) -> dict[str, Any]:
    """CPU microseconds of a snapshot taken after every step of every oracle solution (transcripts of
    every length, the state mid-turn and between turns) beside the CPU time of those steps, each
    call timed on its own; per round the mean of each, and the round with the least of each kept.
    ``to_step``, the target's figure, compares like with like: the same episodes, the same clock."""
    clock = time.process_time
    snapshots: list[list[float]] = []
    steps: list[list[float]] = []
    for _ in range(rounds):
        snapshot_times, step_times = [], []
        for index, actions in enumerate(solutions):
            env.reset(options={"task_index": index})
            for action in actions:
                start = clock()
                env.step(action)
                middle = clock()
                env.snapshot()
                end = clock()
                step_times.append(middle - start)
                snapshot_times.append(end - middle)
        snapshots.append(snapshot_times)
        steps.append(step_times)
    snapshot = min(snapshots, key=statistics.fmean)
    step = min(steps, key=statistics.fmean)
    return {**wall_stats_us(snapshot), "step_mean_us": round(statistics.fmean(step) * 1e6, 2),
            "to_step": round(statistics.fmean(snapshot) / statistics.fmean(step), 2), "rounds": rounds,
            "clock": "process_time"}


def oracle_latency(env: FunctionCallingEnv, repeats: int) -> dict[str, Any]:
    """``oracle_action()`` at each step of every task, and on one user turn whose lookups are not
    made yet, after 0, 32 and 64 other calls in the turn (constant time: no scan of the calls)."""
    samples = []
    for index in range(len(env.tasks)):
        env.reset(options={"task_index": index})
        while (action := env.oracle_action()) is not None:
            start = time.perf_counter()
            env.oracle_action()
            samples.append(time.perf_counter() - start)
            env.step(action)
    result: dict[str, Any] = {"every_step_wall": wall_stats_us(samples)}
    index = next(i for i, task in enumerate(env.tasks)
                 if task["domain"] == "filesystem" and task["turns"][0]["lookups"] and task.max_turns >= 3
                 and "list_directory" in task["tools"])
    growth = {}
    for made in (0, 32, 64):
        env.reset(options={"task_index": index})
        folder = env.task["initial_state"]["cwd"]
        for _ in range(made // 32):
            env.step(json.dumps([{"name": "list_directory", "arguments": {"path": folder, "show_hidden": bool(i % 2)}}
                                 for i in range(32)]))
        growth[f"after_{made}_calls_us"] = cpu_per_call_us([env.oracle_action] * 500, repeats)["us"]
    result["growth_with_calls_in_turn"] = growth
    result["ratio_64_to_0"] = round(growth["after_64_calls_us"] / growth["after_0_calls_us"], 2)
    return result


def make_env_ms(processes: int) -> dict[str, float]:
    """CPU milliseconds of ``gym.make`` in fresh processes (imports of budgetgym and Gymnasium done
    before the clock; bytecode caching on, as in any install), and of a second make in the same process."""
    code = ("import time, budgetgym, gymnasium as gym\n"
            "start = time.process_time(); env = gym.make(%r); first = time.process_time() - start\n"
            "start = time.process_time(); gym.make(%r); again = time.process_time() - start\n"
            "env.reset(seed=0); print(first * 1e3, again * 1e3)" % (ENV_ID, ENV_ID))
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    firsts, agains = [], []
    for run in range(processes + 1):  # the first run writes the bytecode caches
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ)
        first, again = map(float, out.stdout.split())
        if run:
            firsts.append(first)
            agains.append(again)
    return {"fresh_process_median_ms": round(statistics.median(firsts), 1), "fresh_process_min_ms": round(min(firsts), 1),
            "same_process_median_ms": round(statistics.median(agains), 2), "processes": processes}


def live_oracle_rate(env: FunctionCallingEnv, repeats: int) -> dict[str, float]:
    steps = [0]
    elapsed = seconds(lambda: [steps.append(play_oracle(env, starts(env))) for _ in range(repeats)])
    return rate(sum(steps), elapsed)


def scoring_samples(env: FunctionCallingEnv, solutions: list[list[str]]) -> list[Callable[[], Any]]:
    """For every user turn of every task, the check run on the answering message, at that moment (as
    the env runs it: the turn's check prepared once, where the package has one)."""
    samples = []
    for index, actions in enumerate(solutions):
        env.reset(options={"task_index": index})
        for action in actions:
            if not action.startswith("{"):
                domain, turn = env.domain, env.task["turns"][env.user_turn]
                state = json.loads(json.dumps(env.backend_state))  # frozen copy of the state at that moment
                if TurnCheck is None:
                    samples.append(lambda d=domain, s=state, t=turn, m=action: turn_problem(d, s, t, m))
                else:
                    samples.append(lambda d=domain, s=state, c=TurnCheck(turn), m=action: c.problem(d, s, m))
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
        tasks.append((env.domain.backend, env.task["initial_state"], calls))
    count = sum(len(calls) for _, _, calls in tasks) * repeats

    def run() -> None:
        for _ in range(repeats):
            for make_backend, initial, calls in tasks:
                backend = make_backend(copy_state(initial))
                for function, arguments in calls:
                    try:
                        function(backend, **arguments)
                    except ToolError:
                        pass

    return rate(count, seconds(run), "calls")


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
    calls = [0]

    def run() -> None:
        for run in range(repeats):
            model = f"budgetgym_bench_{run}"
            for entry in entries:
                for turn_calls in answers[entry["id"]]:
                    multi_turn_utils.execute_multi_turn_func_call(
                        turn_calls, entry["initial_config"], entry["involved_classes"], model, entry["id"])
                    calls[0] += len(turn_calls)
            # The executor caches backend instances in its module globals; drop this run's.
            for name in [n for n in vars(multi_turn_utils) if n.startswith(model)]:
                delattr(multi_turn_utils, name)

    elapsed = seconds(run)
    return {"entries": len(entries), **rate(calls[0], elapsed, "calls")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    bare = FunctionCallingEnv()
    solutions = record_oracle(bare, starts(bare))
    wrapped = gym.make(ENV_ID)
    replay_rate(bare, solutions, 1)  # warm up caches (tool sets, compiled regular expressions)

    snapshots = [dict(state["snapshot"]) for state in load_failure_states("function_calling")]
    replayed = [{**snapshot, "state": None} for snapshot in snapshots]
    parse, validate = parsing_samples(bare, solutions)
    resets = [lambda start=start: bare.reset(**start) for start in starts(bare)]

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
        "step": step_vs_floor(bare, solutions, max(3, args.repeats)),
        "make_env_ms": make_env_ms(5),
        "latency": {
            "reset": cpu_per_call_us(resets, args.repeats),
            "snapshot": cpu_per_call_us([lambda: bare.snapshot()], 2000),
            "snapshot_every_step": snapshot_latency(bare, solutions, max(3, args.repeats)),
            "restore_fast": cpu_per_call_us([lambda s=s: bare.reset(options={"snapshot": s}) for s in snapshots], args.repeats),
            # The same, but each snapshot as if met for the first time (its state's schema check not remembered).
            "restore_fast_first_time": cpu_per_call_us([lambda s=s: (forget_schema_checks(bare), bare.reset(options={"snapshot": s}))
                                                        for s in snapshots], args.repeats),
            "restore_replay": cpu_per_call_us([lambda s=s: bare.reset(options={"snapshot": s}) for s in replayed], 1),
            **step_latency(bare, solutions, args.repeats),
            "oracle_action": oracle_latency(bare, args.repeats),
            "score_user_turn": cpu_per_call_us(scoring_samples(bare, solutions), args.repeats),
            "parse_action": cpu_per_call_us(parse, args.repeats),
            "schema_validation_per_call": cpu_per_call_us(validate, args.repeats),
        },
        "bfcl_executor": bfcl_rate(max(1, args.repeats // 2)),
    }
    step = result["step"]
    latency = result["latency"]
    result["targets"] = {
        "step_to_floor_at_most": target(3.0, step["step_to_floor"],
                                        measured_median_of_rounds=step["step_to_floor_median_of_rounds"]),
        "reset_us_under": target(25, latency["reset"]["us"]),
        "make_env_cpu_ms_under": target(50, result["make_env_ms"]["fresh_process_median_ms"],
                                        measured_median=result["make_env_ms"]["fresh_process_median_ms"]),
        # Constant time: about as fast after 64 calls in the user turn as after none.
        "oracle_action_64_to_0_calls_about": target(1.0, latency["oracle_action"]["ratio_64_to_0"], slack=1.5),
        "restore_us_under": target(200, latency["restore_fast"]["us"]),
        # A fast restore at most half its replay path; a snapshot at most one step: after every step
        # of the oracle's solutions, CPU against those steps' CPU (a snapshot right after a reset,
        # ``latency.snapshot``, holds no transcript and the smallest state: it is not the target's figure).
        "restore_fast_to_replay_at_most": target(0.5, round(latency["restore_fast"]["us"]
                                                            / latency["restore_replay"]["us"], 2)),
        "snapshot_to_step_at_most": target(1.0, latency["snapshot_every_step"]["to_step"]),
        "score_user_turn_us_under": target(1000, latency["score_user_turn"]["us"]),
    }
    # Beside the target: a snapshot right after a reset to a tool-call step (wall median).
    result["snapshot_after_reset_to_tool_call_step"] = round(latency["snapshot"]["us"]
                                                             / latency["tool_call_step"]["median_us"], 2)
    # Beside the target: a restore of a snapshot this env has not schema-checked before.
    result["restore_fast_first_time_to_replay"] = round(latency["restore_fast_first_time"]["us"]
                                                        / latency["restore_replay"]["us"], 2)
    bfcl = result["bfcl_executor"]
    if "calls_per_s" in bfcl:
        result["ratio_replay_to_bfcl_executor"] = round(
            result["rollouts"]["replay_bare_env"]["steps_per_s"] / bfcl["calls_per_s"], 1)
        result["ratio_backend_calls_to_bfcl_executor"] = round(result["backend_only"]["calls_per_s"] / bfcl["calls_per_s"], 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
