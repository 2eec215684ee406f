"""How the benchmark scripts take their figures (bench_function_calling, bench_bfcl, bench_web).

One module, so that every script measures the same way and states it the same way:

* ``record_oracle(env, starts)``: the oracle's actions from each start (keyword arguments of
  ``reset``), recorded once; ``play(env, starts, solutions)`` replays them (reset plus every step).
* ``seconds(fn, clock)``: the time of one call of ``fn``; ``rate(count, elapsed, unit)``: a count, its
  seconds and the count per second, as the scripts print them.
* ``cpu_per_call_us(samples, repeats)``: CPU microseconds per sample function, each pass over the
  samples timed as one batch (a clock read costs about as much as a short call), the best pass.
* ``wall_each_us(samples, repeats)`` and ``wall_stats_us(times)``: wall-clock time of each sample on
  its own, as mean, median and (optionally) the 99th percentile.
* ``interleaved(measures, rounds)``: named measurements run in turn, round after round, so that a
  shared machine's drifting speed weighs on all of them alike; ``best(rounds)``, the least of each.
* ``target(target, measured, at_most)``: a target beside its measured value and whether it is met:
  every script prints a ``targets`` object of these.

CPU time (``time.process_time``) is the clock where a figure is compared with another of the same
run: on a shared machine wall time counts other processes' turns.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

Start = Mapping[str, Any]  # keyword arguments of env.reset


def record_oracle(env: Any, starts: Iterable[Start]) -> list[list[str]]:
    """The oracle's actions from each start, played to the end of the episode."""
    solutions = []
    for start in starts:
        env.reset(**start)
        actions = []
        while (action := env.oracle_action()) is not None:
            actions.append(action)
            env.step(action)
        solutions.append(actions)
    return solutions


def play(env: Any, starts: Sequence[Start], solutions: Sequence[Sequence[str]]) -> list[float]:
    """Every recorded solution replayed from its start; the last reward of each episode."""
    rewards = []
    for start, actions in zip(starts, solutions):
        env.reset(**start)
        reward = 0.0
        for action in actions:
            reward = env.step(action)[1]
        rewards.append(reward)
    return rewards


def play_oracle(env: Any, starts: Iterable[Start]) -> int:
    """Every start played live, asking the oracle before each step; returns the steps taken."""
    steps = 0
    for start in starts:
        env.reset(**start)
        while (action := env.oracle_action()) is not None:
            env.step(action)
            steps += 1
    return steps


def seconds(fn: Callable[[], Any], clock: Callable[[], float] = time.perf_counter) -> float:
    """The time of one call of ``fn`` on ``clock``."""
    start = clock()
    fn()
    return clock() - start


def rate(count: int, elapsed: float, unit: str = "steps") -> dict[str, Any]:
    """``{unit: count, "seconds": ..., unit_per_s: ...}``."""
    return {unit: count, "seconds": round(elapsed, 4), f"{unit}_per_s": round(count / elapsed)}


def cpu_per_call_us(samples: Sequence[Callable[[], Any]], repeats: int) -> dict[str, float]:
    """CPU microseconds per sample function: each pass over the samples is one batch; the best pass."""
    clock, passes = time.process_time, []
    for _ in range(max(1, repeats)):
        start = clock()
        for sample in samples:
            sample()
        passes.append((clock() - start) / len(samples))
    return {"us": round(min(passes) * 1e6, 2), "n": len(samples), "passes": len(passes)}


def wall_stats_us(times: Sequence[float], p99: bool = False) -> dict[str, float]:
    """Mean and median (and the 99th percentile) of ``times`` (seconds), in microseconds."""
    stats = {"mean_us": round(statistics.fmean(times) * 1e6, 2), "median_us": round(statistics.median(times) * 1e6, 2)}
    if p99:
        stats["p99_us"] = round(sorted(times)[int(len(times) * 0.99)] * 1e6, 2)
    stats["n"] = len(times)
    return stats


def wall_each_us(samples: Sequence[Callable[[], Any]], repeats: int, p99: bool = True) -> dict[str, float]:
    """Wall-clock time of each sample call on its own, over ``repeats`` passes."""
    clock, times = time.perf_counter, []
    for _ in range(repeats):
        for sample in samples:
            start = clock()
            sample()
            times.append(clock() - start)
    return wall_stats_us(times, p99=p99)


def interleaved(measures: Mapping[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each named measurement (a function returning its figure) once a round, in turn, for ``rounds``."""
    values: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(rounds):
        for name, measure in measures.items():
            values[name].append(measure())
    return values


def best(values: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """The least value of each measurement (the run least disturbed by the rest of the machine)."""
    return {name: min(series) for name, series in values.items()}


def target(goal: float, measured: float | None, at_most: bool = True, slack: float = 1.0, **more: Any) -> dict[str, Any]:
    """A target beside its measured value: ``met`` when ``measured`` is at most (or at least) ``goal``,
    give or take the factor ``slack`` (for a target of "about" a value, such as no growth: 1.0)."""
    met = None if measured is None else (measured <= goal * slack if at_most else measured >= goal / slack)
    entry = {"target": goal, "measured": measured, **more, "met": met}
    if slack != 1.0:
        entry["slack"] = slack
    return entry
