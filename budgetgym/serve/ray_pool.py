"""``EnvPool``: envs in Ray actors, stepped in batches, for a trainer's rollouts across machines.

    pool = EnvPool("budgetgym/Coding-v0", num_envs=32, make_kwargs={"budget_mix": [0.25, 0.5, 1.0]})
    observations, infos = pool.reset(seeds=range(32))
    observations, rewards, terminated, truncated, infos = pool.step(actions)   # one action per slot
    pool.reset_at(3, seed=40)                                                  # a new episode in slot 3

Each slot is one env (``budgetgym.make(env_id, **make_kwargs)``) in an actor of its own, placed by
Ray wherever the cluster has room (``ray start --head`` on one machine, ``ray start --address`` on
the others; docs/serving.md). A step sends every slot's action at once and waits for all of them,
so a batch costs its slowest env, not the sum. A slot whose action is None is not stepped (its
episode ended, or the trainer is waiting for its model); its entries are None, 0.0 and False.

A lost actor (its process or its machine died) is replaced. Its episode is then, with
``on_lost="retry"`` (the default), replayed on the new actor from the episode's seed, options and
actions (budgetgym envs are deterministic), checked against the last step the trainer saw, and the
step that was lost is taken there: the trainer's batch is the one it would have had, every
episode once. Where the replay cannot be trusted (the replayed episode differs, the new actor dies
too, ``max_retries`` times) or ``on_lost="report"``, the episode is reported instead: the slot's
step returns ``truncated=True`` with ``info["episode_lost"]`` saying why, and the slot waits for a
reset. Either way the pool records it in ``events``; no episode is lost silently or counted twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

LOST = "episode_lost"


class _EnvActor:
    """One slot's env, in a Ray actor."""

    def __init__(self, env_id: str, make_kwargs: dict[str, Any]) -> None:
        import budgetgym

        self.env = budgetgym.make(env_id, **make_kwargs)

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        return self.env.reset(seed=seed, options=options)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.env.step(action)

    def replay(self, seed: int | None, options: dict[str, Any] | None, actions: list[str]) -> tuple:
        """The episode's reset and actions again; the last return (the reset's when no action)."""
        last: tuple = self.env.reset(seed=seed, options=options)
        for action in actions:
            last = self.env.step(action)
        return last

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self.env.close()


@dataclass
class _Episode:
    """What a slot's episode needs to be played again: its reset and its actions so far."""

    seed: int | None
    options: dict[str, Any] | None
    actions: list[str] = field(default_factory=list)
    last: tuple = ()
    ended: bool = False


class EnvPool:
    """``num_envs`` envs in Ray actors (see the module docstring).

    Args:
        env_id: a registered id.
        num_envs: the number of slots.
        make_kwargs: ``budgetgym.make``'s keyword arguments (wrappers and env arguments) for every slot.
        address: the Ray cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); None: the one
            this process is connected to, else a local one (as ``RayExecutor`` does).
        cpus_per_env: Ray CPUs each actor reserves (fractions pack several slots on a core).
        on_lost: ``"retry"`` (replay the episode on a new actor) or ``"report"`` (end it, saying why).
        max_retries: replacements tried for one lost step before the episode is reported.
    """

    def __init__(self, env_id: str, num_envs: int, *, make_kwargs: dict[str, Any] | None = None,
                 address: str | None = None, cpus_per_env: float = 1.0, on_lost: str = "retry",
                 max_retries: int = 2) -> None:
        from budgetgym.eval.executors import RayExecutor

        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if on_lost not in ("retry", "report"):
            raise ValueError(f"on_lost must be 'retry' or 'report', got {on_lost!r}")
        self.env_id = env_id
        self.num_envs = num_envs
        self.make_kwargs = dict(make_kwargs or {})
        self.on_lost = on_lost
        self.max_retries = max_retries
        #: What happened to lost actors: dicts with slot, what (retried / reported), the episode's seed and turn.
        self.events: list[dict[str, Any]] = []
        self._ray = RayExecutor(address=address).start()  # the one way budgetgym connects to Ray
        self._actor_class = self._ray.remote(num_cpus=cpus_per_env, max_restarts=0)(_EnvActor)
        self._actors = [self._new_actor() for _ in range(num_envs)]
        self._episodes: list[_Episode | None] = [None] * num_envs

    def actor(self, index: int) -> Any:
        """Slot ``index``'s actor handle (``ray.kill`` it to see the pool replace it)."""
        return self._actors[index]

    # -- batches ------------------------------------------------------------------------------------------------------
    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[dict[str, Any] | None] | None = None) -> tuple[list[str], list[dict[str, Any]]]:
        """Reset every slot (``seeds[i]``, ``options[i]``); returns the observations and infos."""
        seeds = list(seeds) if seeds is not None else [None] * self.num_envs
        options = list(options) if options is not None else [None] * self.num_envs
        if len(seeds) != self.num_envs or len(options) != self.num_envs:
            raise ValueError(f"give one seed and one options entry per slot ({self.num_envs})")
        refs = [actor.reset.remote(s, o) for actor, s, o in zip(self._actors, seeds, options)]
        results = [self._reset_result(i, ref, seeds[i], options[i]) for i, ref in enumerate(refs)]
        return [r[0] for r in results], [r[1] for r in results]

    def reset_at(self, index: int, seed: int | None = None,
                 options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Reset one slot (the others' episodes go on)."""
        return self._reset_result(index, self._actors[index].reset.remote(seed, options), seed, options)

    def step(self, actions: Sequence[str | None]) -> tuple[list, list[float], list[bool], list[bool], list]:
        """Step every slot whose action is not None, all at once."""
        if len(actions) != self.num_envs:
            raise ValueError(f"give one action (or None) per slot ({self.num_envs}), got {len(actions)}")
        for index, action in enumerate(actions):
            episode = self._episodes[index]
            if action is not None and (episode is None or episode.ended):
                raise RuntimeError(f"slot {index} has no episode running: reset_at({index}) first")
        refs = {i: self._actors[i].step.remote(a) for i, a in enumerate(actions) if a is not None}
        out: list[tuple] = [(None, 0.0, False, False, None)] * self.num_envs
        for index, ref in refs.items():
            out[index] = self._step_result(index, ref, actions[index])
        return ([o[0] for o in out], [float(o[1]) for o in out], [bool(o[2]) for o in out], [bool(o[3]) for o in out],
                [o[4] for o in out])

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.get(actor.close.remote(), timeout=60)
            except Exception:  # a dead actor has nothing left to close
                pass
            self._ray.kill(actor)
        self._actors = []

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- one slot -----------------------------------------------------------------------------------------------------
    def _new_actor(self) -> Any:
        return self._actor_class.remote(self.env_id, self.make_kwargs)

    def _replace(self, index: int) -> None:
        self._ray.kill(self._actors[index], no_restart=True)
        self._actors[index] = self._new_actor()

    def _reset_result(self, index: int, ref: Any, seed: int | None, options: dict[str, Any] | None) -> tuple:
        from ray.exceptions import RayActorError

        for attempt in range(self.max_retries + 1):
            try:
                result = self._ray.get(ref)
                break
            except RayActorError:  # nothing of the episode was seen yet: a new actor resets it
                if attempt == self.max_retries:
                    raise
                self._replace(index)
                self.events.append({"slot": index, "what": "reset retried", "seed": seed, "turn": 0})
                ref = self._actors[index].reset.remote(seed, options)
        self._episodes[index] = _Episode(seed, options, last=tuple(result))
        return result

    def _step_result(self, index: int, ref: Any, action: str) -> tuple:
        from ray.exceptions import RayActorError

        episode = self._episodes[index]
        assert episode is not None
        try:
            result = tuple(self._ray.get(ref))
        except RayActorError as err:
            result = self._recover(index, episode, action, f"{type(err).__name__}: {' '.join(str(err).split())[:200]}")
        else:
            episode.actions.append(action)
            episode.last = result
            episode.ended = bool(result[2] or result[3])
        return result

    def _recover(self, index: int, episode: _Episode, action: str, reason: str) -> tuple:
        """A new actor for the slot, and the lost step taken there after a checked replay (or reported)."""
        from ray.exceptions import RayActorError

        turn = len(episode.actions)
        for attempt in range(self.max_retries):
            self._replace(index)
            if self.on_lost == "report":
                break
            actor = self._actors[index]
            try:
                replayed = tuple(self._ray.get(actor.replay.remote(episode.seed, episode.options, episode.actions)))
                if replayed != episode.last:
                    reason = f"{reason}; the replayed episode differs from the one played, so it is not resumed"
                    break
                result = tuple(self._ray.get(actor.step.remote(action)))
            except RayActorError as err:
                reason = f"{reason}; the new actor was lost too ({type(err).__name__})"
                continue
            self.events.append({"slot": index, "what": "retried", "seed": episode.seed, "turn": turn,
                                "attempt": attempt + 1, "reason": reason})
            episode.actions.append(action)
            episode.last = result
            episode.ended = bool(result[2] or result[3])
            return result
        else:
            self._replace(index)  # the slot gets a working actor for its next reset
        self.events.append({"slot": index, "what": "reported", "seed": episode.seed, "turn": turn, "reason": reason})
        episode.ended = True
        observation, info = episode.last[0], dict(episode.last[-1])
        info[LOST] = f"the actor running this episode was lost at turn {turn + 1}: {reason}"
        return observation, 0.0, False, True, info
