"""One episode's BFCL services, run and scored with BFCL's own executor and checkers.

Two sets of instances of BFCL's backend classes (``GorillaFileSystem``, ``TradingBot``, ...) are built
from the task's ``initial_config`` as BFCL's evaluation builds them:

* the agent's: built the way BFCL's executor, ``execute_multi_turn_func_call``, builds an instance
  (the class from the module BFCL names for it, then ``_load_scenario`` on a deep copy of the task's
  config for it, unless BFCL lists the class as stateless), without the executor's listing of every
  method of every instance at every call (``inspect.getmembers``: half the cost of a reset), and with
  the deep copy made by unpickling the config pickled once per task (JSON data: the same copy, in C,
  where ``copy.deepcopy`` was most of what remained); a test checks the instances against the
  executor's on every task. Its validated calls run on them here, as direct method calls with the
  parsed arguments. BFCL's executor would ``eval`` a call string, and model output is never
  evaluated; the result is worded exactly as the executor words it (``_as_text``).
* the reference: at the end of each user turn the executor replays that turn's ground-truth calls on
  it (BFCL's own data, run by BFCL's own code; its instances are built before the first replay as
  the agent's are, and handed to the executor under the names it files them under), and BFCL's
  ``state_checker`` and ``response_checker`` compare the two (``check_turn``). The ground truth is
  fixed per task and BFCL's services are deterministic (their randomness comes from RNGs seeded by
  the scenario and kept in the instance; only the file system's private ``_last_modified`` reads the
  clock, and neither a result nor the state check reads it), so the reference after a user turn is
  the same in every episode: the second episode of a task that reaches the end of turn ``k`` keeps
  the executor's results and instances of that turn, pickled, for the whole process (every env of
  the process shares them, under a lock; all 800 tasks' turns take about 19 MB), and later
  episodes unpickle them instead of replaying (most of the time of scoring a task was the replay).
  The first episode only notes how far it replayed: a pass that scores each task once (an
  evaluation) pays no pickling and holds nothing, and a task played again (training) pays one
  more replay of its turns before the store serves them. :func:`forget_references` empties the
  store (to measure a cold start). A test checks the verdicts against BFCL's ``multi_turn_checker``
  with the store cold and warm.

Isolation. The executor keeps every instance it builds in its module's globals, under a name made
of the model name, the entry id and the class, reuses it on the next call with that name, and never
deletes it: one table for the whole process. Left alone, two envs on the same task would share a
file system, a reset would not reset, and every episode would stay in memory. So each executor call
here holds a lock, puts this episode's reference instances into the table just before the call and
takes every entry the call left there out just after. Between calls the table holds nothing of ours;
each reset builds fresh instances, owned by this object alone and collected with it.

Bounds. BFCL's methods are foreign code run on the agent's arguments: every agent call runs under
:class:`budgetgym.core.limits.Limits` (a wall-clock limit, and a size limit on the result and on the
instance it changed). A file system is measured by its paths, not its memory: ``cp`` of a folder
shares the folder's entries instead of copying them, so copying a folder into itself doubles the paths
(and the time of ``du``, ``find`` and BFCL's own state check) without growing memory. A call past a
limit is undone by rebuilding the instances from the task and replaying the agent's earlier calls (the
services are deterministic), and the agent reads what happened; BFCL's checkers run under the same
time limit.

BFCL's ``MathAPI`` sets ``mpmath.mp.dps`` and the decimal context's precision, both process-wide;
its calls, and every executor run of a task that involves it, happen inside a local context so that
no episode leaks precision into another (or into the host program). No other class touches either.
"""

from __future__ import annotations

import array
import contextlib
import copy
import copyreg
import decimal
import functools
import importlib
import inspect
import io
import json
import pickle
import random
import re
import threading
from typing import Any, Iterable, Iterator, Mapping

from budgetgym.core.limits import LimitExceeded, Limits, measure
from budgetgym.core.tasks import Task
from budgetgym.envs.bfcl.upstream import Upstream

# The "model name" BFCL's executor files our instances under; the entries never outlive one call.
_EXECUTOR_OWNER = "budgetgym"
_EXECUTOR_LOCK = threading.Lock()
# The characters BFCL's executor replaces with "_" in the name it files an instance under.
_EXECUTOR_NAME_UNSAFE = re.compile(r"[-./:]")

# Each task's reference after each of its user turns, pickled, by (task id, fingerprint): the
# process's one store (see the module docstring). A task's turns are kept in order, under the lock.
_REFERENCES: dict[tuple[str, str], list[bytes]] = {}
# How many of each task's user turns an episode has replayed: a turn is kept when it is replayed again.
_REPLAYED: dict[tuple[str, str], int] = {}
_REFERENCES_LOCK = threading.Lock()


def forget_references() -> None:
    """Empty the process's store of kept references, and forget which turns were replayed: the next
    two episodes of each task replay again (the second keeps)."""
    with _REFERENCES_LOCK:
        _REFERENCES.clear()
        _REPLAYED.clear()

#: The bounds of one agent call: a second, and 256 KiB of result or of a changed instance's state (the
#: largest state of BFCL's data weighs about 20 KB by these measures).
BFCL_LIMITS = Limits(seconds=1.0, max_size=256 * 2**10)
# A file-system path weighs its name and content plus this much (what a listing of it would hold).
_PATH_WEIGHT = 64

Verdict = Mapping[str, Any]  # BFCL's checker result: {"valid": bool, "error_type": ..., "error_message": ...}


class Backend:
    """The agent's and the reference's instances of one task's BFCL classes, for one episode."""

    def __init__(self, upstream: Upstream, task: Task, limits: Limits = BFCL_LIMITS,
                 configs: dict[str, dict[str, bytes]] | None = None) -> None:
        """``configs``: a cache of each task's pickled configs by task id, kept by the env across resets."""
        self._upstream = upstream
        self._configs = configs if configs is not None else {}
        self._limits = limits
        self._task = task
        self._classes = list(task["involved_classes"])
        # BFCL switches its classes to long-context mode by the category name.
        self._long_context = "long_context" in task.split
        self.instances = self._build()
        # The reference is built at its first replay (the first user turn's end): an episode that
        # ends earlier never pays for it.
        self.reference: dict[str, Any] = {}
        self._reference_entries: dict[str, Any] = {}
        self._owners = _method_owners(self.instances, self._classes)
        # Only MathAPI changes the process-wide precisions: its calls alone need the local context.
        math = self.instances.get("MathAPI")
        self._precise = frozenset(name for name, owner in self._owners.items() if owner is math) if math else frozenset()
        #: Every result of the agent's calls so far, all turns (BFCL's response check reads them all).
        self.results: list[str] = []
        # The agent's calls that ran (to their end, or to an error of their own): replayed on fresh
        # instances to undo a call that went past a limit.
        self._calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Run one validated call on the agent's instances; return the result as BFCL words it."""
        owner = self._owners.get(name)
        try:
            if owner is None:
                raise NameError(f"name '{name}' is not defined")  # what BFCL's executor reports
            try:
                precision = _local_precision(self._upstream) if name in self._precise else contextlib.nullcontext()
                with precision:
                    limits = self._limits
                    result = limits.run(getattr(owner, name), **arguments)
                    size = _state_size(owner, limits.max_size)
                    if size is None:
                        size = measure(owner, limits.max_size)
                    if size > limits.max_size:
                        limits.check_size(owner, f"the {type(owner).__name__} state", size=size)
                    text = _as_text(result)
            finally:
                self._calls.append((name, dict(arguments)))
        except LimitExceeded as err:
            self._calls.pop()
            self._rebuild()
            text = f"Error during execution: {err}"
        except Exception as err:  # a backend's bug or refusal is the agent's observation, as in BFCL
            text = f"Error during execution: {err}"
        self.results.append(text)
        return text

    def _rebuild(self) -> None:
        """Fresh agent instances with the agent's earlier calls replayed: the state before the call
        that went past a limit."""
        self.instances = self._build()
        self._owners = _method_owners(self.instances, self._classes)
        for name, arguments in self._calls:
            try:
                with _local_precision(self._upstream):
                    self._limits.run(getattr(self._owners[name], name), **arguments)
            except Exception:  # noqa: BLE001 - the call failed the first time too: same effect
                pass

    def expected_instances(self, calls: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
        """Where the ground truth has the services now: copies of the reference instances as the
        last finished user turn left them (before the first turn's end, fresh instances of the task),
        with ``calls`` (the current turn's ground-truth calls made so far) run on them. For the
        oracle's plans from the current state; the agent's instances are not touched."""
        instances = copy.deepcopy(self.reference) if self.reference else self._build()
        owners = _method_owners(instances, self._classes)
        for name, arguments in calls:
            owner = owners.get(name)
            if owner is None:
                continue
            try:
                with _local_precision(self._upstream):
                    self._limits.run(getattr(owner, name), **arguments)
            except Exception:  # noqa: BLE001 - an error of the ground truth's own leaves the state as it was
                pass
        return instances

    def check_turn(self, turn_index: int, ground_truth: list[str], agent_called: bool) -> Verdict:
        """BFCL's verdict on a finished user turn (the logic of its ``multi_turn_checker``, per turn).

        The reference replays the turn's ground truth; then, as BFCL does: a turn whose ground truth is
        empty (a missing function or parameter) is not checked by itself, its effect shows in the next
        turns' state; a turn with ground truth fails if the agent made no call in it, else the states
        must match (``state_checker``) and every ground-truth result must be among the agent's results
        of all turns so far (``response_checker``).
        """
        expected, self.reference, self._reference_entries = self._replay_reference(turn_index, ground_truth)
        if not ground_truth:
            return {"valid": True}
        if not agent_called:
            return {"valid": False, "error_type": "multi_turn:empty_turn_model_response",
                    "error_message": f"Model response list is empty for turn {turn_index}"}
        try:
            verdict = self._limits.run(self._upstream.state_checker, self.instances, self.reference)
            if verdict["valid"]:
                verdict = self._limits.run(self._upstream.response_checker, self.results, expected, turn_index)
        except LimitExceeded as err:
            return {"valid": False, "error_type": "budgetgym:limit", "error_message": f"BFCL's check: {err}"}
        return verdict

    def _replay_reference(self, turn_index: int, ground_truth: list[str]) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        """The executor's run of user turn ``turn_index``'s ground truth on the reference (results,
        instances, table entries), unpickled where an earlier episode of the task kept it; kept here
        when an earlier episode replayed it too. Turns are checked in order, so the kept turns of a
        task are always its first ones."""
        key = (self._task.id, self._task.fingerprint)
        kept = _REFERENCES.get(key)
        if kept is not None and turn_index < len(kept):
            return pickle.loads(kept[turn_index])
        # Before the first replay the table holds no reference of ours: fresh instances, built as the
        # agent's are (from the config pickled once per task, where the executor deep-copies it).
        replayed = self._execute(ground_truth, self._reference_entries or self._executor_entries(self._build()))
        with _REFERENCES_LOCK:
            again = _REPLAYED.get(key, 0) > turn_index
            if not again:
                _REPLAYED[key] = turn_index + 1
        if again:
            # One pickle of all three: the entries are the instances, and they stay shared.
            pickled = _kept_pickle(replayed)
            with _REFERENCES_LOCK:
                kept = _REFERENCES.setdefault(key, [])
                if turn_index == len(kept):  # another env may have kept this turn meanwhile
                    kept.append(pickled)
        return replayed

    def _build(self) -> dict[str, Any]:
        """Fresh instances of the task's classes, built as BFCL's executor builds them."""
        upstream, task = self._upstream, self._task
        pickled = self._configs.get(task.id)
        if pickled is None:
            config = task["initial_config"]
            pickled = self._configs[task.id] = {name: pickle.dumps(config.get(name, {}), pickle.HIGHEST_PROTOCOL)
                                                for name in self._classes if name not in upstream.stateless_classes}
        precision = _local_precision(upstream) if "MathAPI" in self._classes else contextlib.nullcontext()
        instances = {}
        with precision:
            for name in self._classes:
                instance = _backend_class(upstream, name)()
                if name in pickled:
                    instance._load_scenario(pickle.loads(pickled[name]), long_context=self._long_context)
                instances[name] = instance
        return instances

    def _executor_entries(self, instances: Mapping[str, Any]) -> dict[str, Any]:
        """``instances`` under the names BFCL's executor files this task's instances under in its table:
        the executor takes them as its own instead of building them (a test checks it does)."""
        return {_EXECUTOR_NAME_UNSAFE.sub("_", f"{_EXECUTOR_OWNER}_{self._task.id}_{name}_instance"): instance
                for name, instance in instances.items()}

    def _execute(self, calls: list[str], entries: dict[str, Any]) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        """Run BFCL's executor on ``calls`` with ``entries`` in its instance table, and empty it again.

        Returns the results, the instances by class, and the table entries to put back next time.
        """
        table = vars(self._upstream.executor_module)
        precision = _local_precision(self._upstream) if "MathAPI" in self._classes else contextlib.nullcontext()
        with _EXECUTOR_LOCK, precision:
            before = set(table)
            table.update(entries)
            try:
                results, instances = self._upstream.execute_multi_turn_func_call(
                    calls, self._task["initial_config"], self._classes, _EXECUTOR_OWNER, self._task.id,
                    long_context=self._long_context,
                )
            finally:
                entries = {name: table.pop(name) for name in set(table) - before}
        return results, instances, entries


def _kept_pickle(value: Any) -> bytes:
    """``pickle.dumps(value)``, but a ``random.Random`` as its state's words packed in bytes: BFCL's
    message, trading, travel and vehicle services each hold one, and pickle writes (and reads back)
    its 625 words one int at a time: most of the time of keeping and unpickling a reference."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _KEPT_DISPATCH
    pickler.dump(value)
    return buffer.getvalue()


def _reduce_random(generator: random.Random) -> tuple[Any, ...]:
    version, words, gauss_next = generator.getstate()
    return _random_from, (type(generator), version, array.array(_WORD, words).tobytes(), gauss_next)


def _random_from(cls: type[random.Random], version: int, words: bytes, gauss_next: float | None) -> random.Random:
    """The generator ``_reduce_random`` packed: what pickle's own ``cls()`` and ``setstate`` give,
    without seeding it first from the OS."""
    generator = cls.__new__(cls)
    generator.setstate((version, tuple(array.array(_WORD, words)), gauss_next))
    return generator


# A Mersenne Twister word is 32 bits; the index beside them is at most 624.
_WORD = "I" if array.array("I").itemsize >= 4 else "L"
# copyreg's reducers (as pickle.dumps uses them) and exactly random.Random (a subclass keeps pickle's way).
_KEPT_DISPATCH = {**copyreg.dispatch_table, random.Random: _reduce_random}


def _backend_class(upstream: Upstream, name: str) -> type:
    return getattr(importlib.import_module(upstream.class_modules[name]), name)


def _state_size(instance: Any, limit: int) -> int | None:
    """A file system's weight counted by paths (aliased folders once per path, a cycle without end),
    stopping past ``limit``; None for other classes (their pickle is measured)."""
    root = getattr(instance, "root", None)
    if type(root).__name__ != "Directory":
        return None
    size, stack = 0, [root]
    while stack and size <= limit:
        entry = stack.pop()
        # BFCL's File and Directory keep their fields in their __dict__: one lookup, then dict reads.
        fields = getattr(entry, "__dict__", None)
        if fields is None:
            size += _PATH_WEIGHT
            continue
        contents = fields.get("contents")
        size += _PATH_WEIGHT + len(fields.get("name") or "") + len(fields.get("content") or "")
        if isinstance(contents, dict):
            stack += contents.values()
    return size


def _as_text(result: Any) -> str:
    """A method's return value as BFCL's executor turns it into the tool message."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # e.g. a Decimal inside: BFCL falls back to str
            return str(result)
    return str(result)


def _method_owners(instances: Mapping[str, Any], classes: list[str]) -> dict[str, Any]:
    """Which instance answers each public method name; a later class wins a shared name, as in BFCL."""
    owners: dict[str, Any] = {}
    for class_name in classes:
        instance = instances[class_name]
        for name in _public_methods(type(instance)):
            owners[name] = instance
    return owners


@functools.lru_cache(maxsize=None)
def _public_methods(cls: type) -> tuple[str, ...]:
    # BFCL's executor lists inspect.getmembers(instance, inspect.ismethod) on every call; the class
    # decides the list, so it is read once per class.
    return tuple(name for name, member in inspect.getmembers(cls) if inspect.isfunction(member) and not name.startswith("_"))


@contextlib.contextmanager
def _local_precision(upstream: Upstream) -> Iterator[None]:
    mpmath = upstream.mpmath
    with decimal.localcontext(), mpmath.workdps(mpmath.mp.dps):
        yield
