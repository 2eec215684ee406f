"""``ErrorInjection``: start episodes from curated failure states, for recovery probes."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import gymnasium as gym
from budgetgym.core.env import text_env
import numpy as np
from gymnasium.utils import seeding


#: What opens a rendered prefix cut to fit the observation space.
CUT_MARK = "[earlier turns cut]\n"


def render_prefix(env: Any, limit: int | None = None) -> str:
    """The episode so far as one text: the first observation, then each turn as the env renders it
    (``> action`` and the observation), separated by blank lines. Longer than ``limit`` characters,
    its end is kept (the latest turns, the mistake's among them) behind :data:`CUT_MARK`."""
    parts = [env.first_observation] + [f"> {action}\n{observation}" for action, observation in env.transcript]
    text = "\n\n".join(parts)
    if limit is not None and len(text) > limit:
        text = CUT_MARK + text[len(text) - (limit - len(CUT_MARK)):]
    return text


def _names(value: Any, what: str, of: str) -> tuple[Any, ...] | None:
    """``value`` (None, or an iterable of names other than a string) as a tuple; one clear error otherwise."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValueError(f"{what} must be a list of {of}, got {value!r:.80}")
    return tuple(value)


class ErrorInjection(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """On reset, restore a curated failure state: a snapshot whose history holds a known mistake.

    A failure state is a record ``{id, task_id, kind, description, error_step, snapshot}`` (the
    family's ``failure_states.jsonl``, or the ``states`` given); ``error_step`` is the 0-based index,
    in the snapshot's transcript, of the mistaken action. With probability ``p`` a reset
    restores one of them, chosen uniformly with this wrapper's own seeded generator, and returns an
    observation that holds everything an agent that sees only observations needs: the episode's
    first observation (the instructions and the first request) and every turn of the prefix, each
    rendered as the env renders a turn (``> action`` then its observation), the mistake's included;
    see :func:`render_prefix` (cut at its start to the env's ``observation_limit``, so the
    observation fits the space with a budget's revealed text after it).
    ``info["injected_error"] = {"id", "kind", "description", "step"}`` (the runner's: an agent in
    the evaluation harness is handed :func:`budgetgym.core.agent_view`, which leaves it out, since a
    description often names the fix) and ``info["history"]`` lists the same: ``{"action": None,
    "observation": first}`` and then the prefix's ``{"action", "observation"}`` pairs. Otherwise the reset is the env's own.

    ``split`` and ``tasks`` narrow the env's own tasks (as the env's ``split`` and ``task_ids`` do)
    to those whose failure states are used, e.g. the test split's for a held-out recovery probe.

    Tasks with no failure state of the asked kinds are skipped when the task is drawn; naming such a
    task in ``reset(options={"task_id": ...})`` raises a ``ValueError`` that says which tasks have
    one. A reset with ``options={"snapshot": ...}`` is passed through untouched.

    Args:
        env: a budgetgym env.
        kinds: keep only failure states of these kinds (None: all).
        states: failure-state records to use instead of the family's curated ones.
        p: the probability that a reset injects a failure state, in [0, 1].
        split: use only the failure states of this split's tasks (None: every split the env has).
        tasks: use only the failure states of these task ids (None: all the env's tasks).
    """

    def __init__(
        self,
        env: gym.Env[str, str],
        kinds: Iterable[str] | None = None,
        states: Iterable[Mapping[str, Any]] | None = None,
        p: float = 1.0,
        split: str | None = None,
        tasks: Iterable[str] | None = None,
    ) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
        kinds = _names(kinds, "kinds", "failure kind names")
        if states is not None:
            if isinstance(states, (str, bytes, Mapping)) or not isinstance(states, Iterable):
                raise ValueError(f"states must be a list of failure-state records (dicts), got {states!r:.80}")
            states = list(states)
            odd = next((state for state in states if not isinstance(state, Mapping)), None)
            if odd is not None:
                raise ValueError(f"states must be a list of failure-state records (dicts), one is {odd!r:.80}")
            odd = next((state for state in states if not isinstance(state.get("snapshot"), Mapping)), None)
            if odd is not None:
                raise ValueError(f"failure state {odd.get('id', '?')!r:.80}: its snapshot must be a snapshot (a dict)")
        if split is not None and not isinstance(split, str):
            raise ValueError(f"split must be a split name, got {split!r}")
        tasks = _names(tasks, "tasks", "task ids")
        gym.utils.RecordConstructorArgs.__init__(self, kinds=kinds, states=states, p=p, split=split, tasks=tasks)
        gym.Wrapper.__init__(self, env)
        records = list(states) if states is not None else list(text_env(env).failure_states())
        for record in records:
            missing = {"id", "task_id", "kind", "snapshot"} - set(record)
            if missing:
                raise ValueError(f"failure state {record.get('id', '?')!r} lacks {sorted(missing)}")
        available = sorted({r["kind"] for r in records})
        if kinds is not None:
            kinds = tuple(kinds)
            unknown = sorted(set(kinds) - set(available))
            if unknown:
                raise ValueError(f"unknown failure kinds {unknown}; available: {available}")
            records = [r for r in records if r["kind"] in kinds]
        try:
            selected = text_env(env).tasks.select(split, tasks)
        except KeyError as err:
            raise ValueError(err.args[0] if err.args else str(err)) from None
        self.states: tuple[Mapping[str, Any], ...] = tuple(r for r in records if r["task_id"] in selected)
        if not self.states:
            where = "".join([f" of split {split!r}" if split is not None else "",
                             f" among {len(tasks)} named tasks" if tasks is not None else ""])
            raise ValueError(f"no failure states of kinds {kinds or available} for the selected tasks{where}")
        self.kinds = kinds
        self.p = float(p)
        self.split = split
        self.task_ids = tasks
        self._by_task: dict[str, list[Mapping[str, Any]]] = {}
        for record in self.states:
            self._by_task.setdefault(record["task_id"], []).append(record)
        self._rng: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if seed is not None or self._rng is None:
            self._rng, _ = seeding.np_random(seed)
        options = dict(options or {})
        if "snapshot" in options or (self.p < 1.0 and self._rng.random() >= self.p):
            return self.env.reset(seed=seed, options=options)
        candidates = self._candidates(options)
        record = candidates[int(self._rng.integers(len(candidates)))]
        observation, info = self.env.reset(seed=seed, options={"snapshot": record["snapshot"]})
        base = text_env(self.env)
        last = base.transcript[-1][1] if base.transcript else base.first_observation
        # Wrappers inside this one may have added text after the last observation (kept at the end).
        suffix = observation[len(last):] if observation.startswith(last) else ""
        # The env leaves room for a revealed budget; the prefix keeps within the env's own limit.
        observation = render_prefix(base, base.observation_limit - len(suffix)) + suffix
        info["injected_error"] = {
            "id": record["id"],
            "kind": record["kind"],
            "description": record.get("description", ""),
            "step": record.get("error_step"),
        }
        info["history"] = [{"action": None, "observation": base.first_observation}] + \
            [{"action": a, "observation": o} for a, o in base.transcript]
        return observation, info

    def _candidates(self, options: Mapping[str, Any]) -> list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...]:
        task_id = options.get("task_id")
        if task_id is None and "task_index" in options:
            task_id = text_env(self.env).tasks[options["task_index"]].id
        if task_id is None:
            return self.states
        if task_id not in self._by_task:
            some = ", ".join(list(self._by_task)[:5])
            raise ValueError(f"task {task_id!r} has no failure state of kinds {self.kinds or 'any'}; tasks that do: {some}, ...")
        return self._by_task[task_id]
