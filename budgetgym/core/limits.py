"""Per-step bounds on foreign code: a wall-clock limit, and a size limit on what a call builds.

An env that runs someone else's code on the agent's behalf (BFCL's services, a game engine, a
browser driver, a sandbox client) routes each such call through :class:`Limits`, so that no action
can make a step run for minutes or grow the backend without bound::

    limits = Limits(seconds=1.0, max_size=8 * 2**20)
    try:
        result = limits.run(backend.method, *args, **kwargs)   # time, and the result's size
        limits.check_size(backend_state, "the file system")     # what the call left behind
    except LimitExceeded as err:
        ...  # undo the call (rebuild the backend), and tell the agent str(err); the episode goes on

What really bounds what:

* **Python code** (BFCL's ``du()`` walking a tree whose paths doubled, a loop in a game script) is
  interrupted at the deadline by a watchdog thread that raises an exception *in the calling thread*
  (``PyThreadState_SetAsyncExc``). Unlike ``signal.alarm`` it works in any thread (vector-env
  workers, Ray actors, thread pools), costs about a microsecond per call, and cannot fire after the
  call returned (a pending interruption is withdrawn under the watchdog's lock).
* **One long C call** (a regular expression, a big-integer power, a C game engine's step) holds the
  interpreter: it is interrupted when it returns to Python code, not before; one that ends past
  its deadline before the watchdog got to run is reported as over its time all the same. Bound such work where it
  starts (arguments checked by the tool's schema, as BFCL's ``MathAPI`` precision is), or run that
  backend in its own process and let the process's own timeout kill it (a container's or a browser's
  timeout: the sandbox and browser families do that).
* **Code that swallows every exception** (``except BaseException`` or a bare ``except``) can ignore the
  interruption; the call is then reported as over its time when it returns.
* **Size**: ``run`` measures the call's result and ``check_size`` the state it left behind, as the
  length of their pickle (shared objects counted once, cycles allowed), or a family's own measure of
  what matters (BFCL counts a file system's paths, which aliasing doubles without using memory).
  The pickle counts what can grow: a ``random.Random`` inside (BFCL's services keep one) has a
  fixed-size state and counts as a few bytes, not the 2.5 KB its state pickles to (pickling that
  state was most of the cost of measuring such a service at every call). The pickle is written to
  a counter, not kept.

The undo is the family's: the core cannot know how to roll a foreign backend back. A deterministic
backend is rebuilt by replaying the calls before the failed one (BFCL does this).
"""

from __future__ import annotations

import copyreg
import ctypes
import itertools
import math
import os
import pickle
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class LimitExceeded(Exception):
    """A bounded call went past a limit; ``str(err)`` is the text for the agent."""


class TimeLimitExceeded(LimitExceeded):
    """The call ran past its wall-clock limit and was interrupted."""


class SizeLimitExceeded(LimitExceeded):
    """The call built a result or a state larger than the size limit."""


class _Interrupted(BaseException):
    """Raised inside the bounded call by the watchdog (a BaseException: ``except Exception`` in the
    foreign code does not swallow it). Never leaves :meth:`Limits.run`."""


@dataclass(frozen=True)
class Limits:
    """The bounds of one foreign call.

    Args:
        seconds: wall-clock limit of the call.
        max_size: the most a call's result, or the state ``check_size`` measures, may weigh (bytes of
            its pickle, or the unit of the family's own measure).
    """

    seconds: float = 1.0
    max_size: int = 8 * 2**20

    def __post_init__(self) -> None:
        if not (isinstance(self.seconds, (int, float)) and 0 < self.seconds < math.inf):
            raise ValueError(f"seconds must be a positive number, got {self.seconds!r}")
        if isinstance(self.max_size, bool) or not isinstance(self.max_size, int) or self.max_size < 1:
            raise ValueError(f"max_size must be a positive int, got {self.max_size!r}")

    def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, interrupted at ``seconds``; its result at most ``max_size``.

        Raises:
            TimeLimitExceeded: the call ran past the limit (it was interrupted, or it swallowed the
                interruption and returned late).
            SizeLimitExceeded: the result is larger than ``max_size``.
        """
        if getattr(_local, "bounded", False):  # already inside a bounded call: the outer deadline holds
            result = fn(*args, **kwargs)
        else:
            result = _with_deadline(fn, args, kwargs, self.seconds)
        measured = len(result) if type(result) is str else measure(result, self.max_size)
        if measured > self.max_size:
            self.check_size(result, f"the result of {_name(fn)}", size=measured)
        return result

    def check_size(self, value: Any, what: str, size: int | None = None) -> None:
        """Raise :class:`SizeLimitExceeded` when ``value`` (or the given ``size``) exceeds ``max_size``."""
        measured = size if size is not None else measure(value, self.max_size)
        if measured > self.max_size:
            raise SizeLimitExceeded(f"{what} grew past the size limit ({measured} > {self.max_size}); "
                                    "the call was undone")


DEFAULT_LIMITS = Limits()


def measure(value: Any, limit: int | None = None) -> int:
    """The size of ``value``: the length of its pickle (shared objects once; a ``random.Random``'s
    fixed-size state as a few bytes), with a fallback for what pickle cannot take (the count of
    objects reached). A structure nested deeper than pickle can follow measures as more than ``limit``."""
    if isinstance(value, (str, bytes)):
        return len(value)
    try:
        return _pickled_length(value)
    except RecursionError:
        return (limit or 0) + 1
    except Exception:  # noqa: BLE001 - unpicklable: count what is reachable instead
        return _reachable(value, limit)


class _Counter:
    """A file that keeps only the number of bytes written to it."""

    __slots__ = ("written",)

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        return len(data)


def _fixed_size(generator: random.Random) -> tuple[Any, ...]:
    return random.Random, ()


_measurers = threading.local()


def _pickled_length(value: Any) -> int:
    # One pickler per thread, reused (building one costs more than pickling a small result); its
    # dispatch table is copyreg's (read afresh: reducers registered later count) plus Random.
    table = copyreg.dispatch_table
    pair = getattr(_measurers, "pair", None)
    if pair is None or pair[2] != len(table):
        counter = _Counter()
        pickler = pickle.Pickler(counter, pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = {**table, random.Random: _fixed_size}
        pair = _measurers.pair = (counter, pickler, len(table))
    counter, pickler, _ = pair
    counter.written = 0
    try:
        pickler.dump(value)
    except BaseException:
        _measurers.pair = None  # a pickler stopped half-way is not reused
        raise
    finally:
        pickler.clear_memo()  # the memo holds what was measured: let it go
    return counter.written


def _reachable(value: Any, limit: int | None) -> int:
    seen: set[int] = set()
    stack = [value]
    size = 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        size += len(item) if isinstance(item, (str, bytes)) else 1
        if limit is not None and size > limit:
            return size
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type) and not callable(item):
            stack.append(vars(item))
    return size


# ------------------------------------------------------------------ the watchdog

_local = threading.local()
_tokens = itertools.count()
_set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "the call")


def _with_deadline(fn: Callable[..., T], args: tuple, kwargs: dict, seconds: float) -> T:
    token = next(_tokens)
    watchdog = _watchdog()
    _local.bounded = True
    deadline = time.monotonic() + seconds
    try:
        try:
            watchdog.arm(token, deadline)
            result = fn(*args, **kwargs)
        finally:
            fired = watchdog.disarm(token)
    except _Interrupted:
        # Delivered in the call, or in the finally clause before the disarm finished: disarm again
        # (idempotent). The watchdog fires at most once per call, so nothing else can arrive.
        watchdog.disarm(token)
        fired = True
    finally:
        _local.bounded = False
    # A call that holds the interpreter (a C call) can end before the watchdog thread gets to run
    # (more so on a busy machine): it is past its limit all the same, whether or not it was stopped.
    if fired or time.monotonic() > deadline:
        raise TimeLimitExceeded(f"{_name(fn)} ran past the time limit of {seconds:g} s and was stopped; "
                                "the call was undone")
    return result


class _Watchdog:
    """One daemon thread per process: sleeps until the earliest deadline, interrupts late calls."""

    def __init__(self) -> None:
        # arm and disarm take the plain lock (a C call); the condition, on the same lock, wakes the thread.
        self._lock = threading.Lock()
        self._condition = threading.Condition(self._lock)
        self._armed: dict[int, list[Any]] = {}  # token -> [thread id, deadline, fired]
        self._wake_at = math.inf
        self._thread = threading.Thread(target=self._watch, name="budgetgym-limits", daemon=True)
        self._thread.start()

    def arm(self, token: int, deadline: float) -> None:
        """Interrupt the calling thread at ``deadline`` (``time.monotonic()``) unless disarmed first."""
        with self._lock:
            self._armed[token] = [threading.get_ident(), deadline, False]
            if deadline < self._wake_at:
                self._condition.notify()

    def disarm(self, token: int) -> bool:
        """Forget ``token``; True when it fired. A pending interruption is withdrawn here, under the
        lock the watchdog fires under, so it cannot land after the call has returned."""
        with self._lock:
            entry = self._armed.pop(token, None)
            if entry is None or not entry[2]:
                return entry is None  # None: disarmed already, after an interruption
            _set_async_exc(ctypes.c_ulong(entry[0]), None)
            return True

    def _watch(self) -> None:
        with self._condition:
            while True:
                now = time.monotonic()
                for entry in self._armed.values():
                    if not entry[2] and entry[1] <= now:
                        entry[2] = True
                        _set_async_exc(ctypes.c_ulong(entry[0]), ctypes.py_object(_Interrupted))
                pending = [entry[1] for entry in self._armed.values() if not entry[2]]
                self._wake_at = min(pending, default=math.inf)
                self._condition.wait(None if self._wake_at == math.inf else max(0.0, self._wake_at - now))


_instance: _Watchdog | None = None
_instance_lock = threading.Lock()


def _watchdog() -> _Watchdog:
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = _Watchdog()
    return _instance


def is_watchdog(thread: threading.Thread) -> bool:
    """Whether ``thread`` is this process's watchdog. It is safe to fork beside: it only waits on
    its own lock and never runs while the forking thread holds the interpreter, and a forked child
    forgets it and starts its own on its first bounded call (executors fork workers past it)."""
    instance = _instance
    return instance is not None and thread is instance._thread


def _forget_in_child() -> None:
    # A forked child has no watchdog thread (only the forking thread survives): start its own lazily.
    global _instance, _instance_lock
    _instance, _instance_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
