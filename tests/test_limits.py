"""The per-step bound on foreign code (budgetgym.core.limits): real loops, real threads, no mocks."""

from __future__ import annotations

import threading
import time

import pytest

from budgetgym.core.limits import Limits, SizeLimitExceeded, TimeLimitExceeded, measure

SHORT = Limits(seconds=0.05)


def spin() -> None:
    while True:
        pass


def recurse(depth: int = 0) -> int:
    return recurse(depth + 1) if depth < 10**9 else depth


def swallowing_loop() -> str:
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        try:
            while time.monotonic() < end:
                pass
        except Exception:  # foreign code that catches Exception does not swallow the interruption
            return "swallowed"
    return "finished"


@pytest.mark.parametrize("fn", [spin, lambda: sum(i for i in range(10**12)), swallowing_loop],
                         ids=["loop", "generator_in_c_sum", "except_exception"])
def test_python_code_past_the_deadline_is_interrupted(fn):
    with pytest.raises(TimeLimitExceeded, match="ran past the time limit of 0.05 s"):
        SHORT.run(fn)


def test_deep_recursion_is_an_ordinary_error_not_an_interruption():
    with pytest.raises(RecursionError):
        Limits(seconds=5).run(recurse)


def test_interruption_works_in_any_thread():
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            SHORT.run(spin)
        except BaseException as err:  # noqa: BLE001 - recorded for the assertion
            errors.append(err)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(errors) == 3 and all(isinstance(e, TimeLimitExceeded) for e in errors)


def test_calls_that_end_near_the_deadline_never_leak_an_interruption():
    """Thousands of calls that end around their deadline: each either returns or raises
    TimeLimitExceeded, and nothing is raised after the call has returned."""
    limits = Limits(seconds=0.0005)
    outcomes = {"returned": 0, "stopped": 0}
    for _ in range(3000):
        try:
            limits.run(time.sleep, 0.0004)
            outcomes["returned"] += 1
        except TimeLimitExceeded:
            outcomes["stopped"] += 1
        for _ in range(50):  # bytecode after the call, where a late interruption would land
            pass
    time.sleep(0.01)
    assert sum(outcomes.values()) == 3000


def test_results_and_states_past_the_size_limit_are_refused():
    limits = Limits(seconds=1, max_size=1000)
    assert limits.run(lambda: "x" * 1000) == "x" * 1000
    with pytest.raises(SizeLimitExceeded, match="the result of <lambda> grew past the size limit"):
        limits.run(lambda: "x" * 1001)
    with pytest.raises(SizeLimitExceeded, match="the state grew past"):
        limits.check_size({"rows": list(range(1000))}, "the state")
    limits.check_size(None, "the state", size=1000)
    with pytest.raises(SizeLimitExceeded):
        limits.check_size(None, "the state", size=1001)


def test_measure_counts_shared_objects_once_and_takes_cycles():
    shared = ["x" * 1000]
    assert measure([shared] * 100) < 2 * measure(shared) + 300
    cycle: list = []
    cycle.append(cycle)
    assert measure(cycle) < 100
    unpicklable = {"lock": threading.Lock(), "text": "y" * 500}
    assert 500 < measure(unpicklable) < 600


def test_a_bounded_call_inside_another_runs_under_the_outer_deadline():
    outer = Limits(seconds=0.05)
    with pytest.raises(TimeLimitExceeded):
        outer.run(lambda: Limits(seconds=60).run(spin))


@pytest.mark.parametrize("kwargs", [{"seconds": 0}, {"seconds": float("inf")}, {"max_size": 0}, {"max_size": True}])
def test_limits_refuse_nonsense(kwargs):
    with pytest.raises(ValueError):
        Limits(**kwargs)


def test_a_call_that_ends_past_its_deadline_before_the_watchdog_runs_is_over_its_time(monkeypatch):
    """A C call holds the interpreter, so on a busy machine it can end before the watchdog thread
    gets to run: it ran past its limit all the same. Here the watchdog is made to wait an hour."""
    from budgetgym.core import limits as module

    watchdog = module._watchdog()
    arm = watchdog.arm
    monkeypatch.setattr(watchdog, "arm", lambda token, deadline: arm(token, deadline + 3600.0))
    with pytest.raises(TimeLimitExceeded, match="ran past the time limit of 0.01 s"):
        Limits(seconds=0.01).run(time.sleep, 0.05)
    assert Limits(seconds=5).run(time.sleep, 0.001) is None  # within its limit: returned
