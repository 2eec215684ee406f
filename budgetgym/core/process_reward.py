"""Process supervision from the oracle's distance: ``reward_mode="oracle_distance"``.

The reward of a step is the change in a potential of the state (potential-based shaping, Ng, Harada
and Russell 1999)::

    reward(s -> s') = Phi(s') - Phi(s),    Phi(s) = -turns(s) / oracle_turns

``turns(s)`` is the number of turns the env's oracle takes to solve the task from ``s``, found by
playing the oracle on a copy of the env (a shadow env restored to ``s``'s snapshot, its clock set
back so the whole budget is ahead of it); ``oracle_turns`` is the task's shortest solution from its
start (``info["oracle_turns"]``), so Phi is on the scale of solution lengths and a solved episode
from the task's start earns 1.0 in all, as under ``"progress"``. A solved state has ``turns = 0``;
a state the oracle does not solve from within the task's full budget ``max_turns`` (a failure for
good, a dead end, an oracle that gives up) has ``turns = max_turns``, the floor.

The contract:

* **A cycle earns nothing.** The rewards of an episode sum to ``Phi(s_T) - Phi(s_0)`` exactly: each
  step's reward subtracts the potential that the previous step's reward added (carried, never
  recomputed), so loops, undo/redo, oscillation and progress-then-regress net out by construction,
  whatever the cache holds. An episode's return is at most ``-Phi(s_0)`` (its start's distance in
  solution lengths), reached exactly when it ends solved.
* **The optimal policy is unchanged.** ``gamma = 1`` (``Phi(s') - Phi(s)``, not ``gamma Phi(s') -
  Phi(s)``): episodes are bounded by their turn budget and the suite measures undiscounted success,
  so the sum telescopes as it stands and a self-loop earns exactly 0 (with ``gamma < 1`` and a
  negative Phi, standing still would pay ``(1 - gamma) |Phi|`` a turn). Since Phi is largest (0) on
  solved states, an episode that ends solved earns more than any that does not: in these
  deterministic envs, a policy that maximises this return solves whenever solving is possible,
  which is what the sparse reward asks. Among unsolved episodes the shaping prefers those that end
  closer, which the sparse reward leaves unranked: that is the signal it adds.
* **A potential is a function of the state.** Turns are cached per :func:`state_digest`, a digest of
  the env's fast-restore state (``_get_state()``) and what its future reads of the history
  (``history_key()``): what a restore rebuilds the whole future from.
  Not ``state_key()``: that key leaves out what the task's outcome does not depend on but the
  remaining turns do (the lookups made in a FunctionCalling user turn, the file viewed in Coding,
  the page Web's ``back`` returns to), so one key would hold states that are several turns apart.
  Every state on an oracle rollout is cached with it, so an agent on or near the oracle's path pays
  a dictionary lookup; a step that sends the next action of the rollout its state is on reaches
  that rollout's next state, whose digest the rollout recorded, so it pays no digest either (a
  string comparison: the env is a deterministic function of its state); an invalid action changes
  no state and costs nothing, except where the future reads the history (``history_key``: the
  refusal is a new thing seen, so a new state, looked up as any other). The cache lives with
  the env per task and episode seed (per task whatever the seed where the family declares
  ``episode_seed_matters = False``: FunctionCalling, Web and Coding ignore the seed, so K attempts
  of a task are one game and measure its states once; their constructor arguments,
  FunctionCalling's ``retry_answers`` and Web's catalogue, change the play, so the cache stays the
  env's), several tasks at once (``MAX_CACHED_STATES`` states in all, the least recently started
  tasks dropped first at a reset), so attempts of tasks played in turn keep theirs; a family that declares
  ``oracle_distance_shared = True`` (Navigation: the seed reaches nothing, and no constructor
  argument changes the play) shares it instead with every env of its class in the process, per
  task (by id and fingerprint) across seeds, ``MAX_SHARED_STATES`` states in all (the least recently
  started tasks dropped first; a dropped value comes back the same when measured again).
* **The start is measured at the first step.** ``Phi(start) = -turns(start) / turns(start) = -1``
  whatever ``turns(start)`` is, so a reset measures nothing (no digest, no oracle call) while its
  task's start is not measured; the first step that changes the state does, by the oracle's
  rollout from the start on the shadow (the task started there, not a snapshot and a restore). When that
  step sent the oracle's first action, the env is at the rollout's second state, so ``turns(start)
  = min(max_turns, 1 + turns(now))`` (the env and the oracle are deterministic functions of the
  state; the floor is the rollout's budget) and the episode follows the rollout from there; a
  rollout from the start that does not solve is kept only for the start, the state reached being
  measured by its own rollout (the budget cuts the start's one turn short of it). Any other first
  step looks the state it reached up as any later step does. Either way the values are those of
  a rollout from each state.

Limits (read them before training on it):

* One oracle path is not the only good one. ``turns(s)`` is the oracle's length, an upper bound of
  the true distance: a step onto another shortest solution that the oracle does not take can look
  like a step back (it is paid back when the episode ends solved, since the sum telescopes), and a
  state the oracle cannot recover from but a cleverer agent could is at the floor.
* It costs an oracle rollout from every state not seen before (a restore and ``turns(s)`` steps on
  the shadow env, each with the oracle's planning and a state digest), each episode's first step
  included where its start is not cached (then a reset instead of the restore): cheap for
  in-memory families, the price of ``turns(s)`` real steps where a step runs tests (Coding). So an
  episode on the oracle's path whose task is new to the cache costs about two sparse ones (its
  steps, then the rollout's) plus the oracle's planning at each state, which is most of it where
  a step takes microseconds and the oracle plans (FunctionCalling's repairs). Measured cold, CPU
  per step against sparse (one run each, load 3.5-4.3; before this round, at a76bb51, in brackets,
  load 4.2-4.3): FunctionCalling 3.47x (4.12x), Web 1.91x (2.2x), Navigation 1.9x (1.83x), Coding
  2.0x (2.05x); the target, 2.0x, is met by all but FunctionCalling. Its rollout costs about three
  of its sparse steps a state (instructions, callgrind, the oracle's paths from 40 tasks' starts:
  875k a state against 307k a sparse step; 979k at 926c476, before the oracle offered its batch's
  copy to the step and the seen numbers were read on demand): the shadow's lean step
  (about one step), the oracle's planning (about 1.45: a fresh plan at each user turn's first state,
  the rest of the plan kept) and a digest (about 0.45); 2.0x would need all three within one step.
  Later runs (at fc5849b, load 5.5-5.7, alternating with the round's start, 113757e, in brackets):
  cold 3.36x, 3.64x (3.74x, 3.43x), within the noise of that load.
  A later attempt of a task (another seed): FunctionCalling 1.46x (4.33x), Web 0.97x (1.88x),
  Navigation 1.19x, Coding 1.07x (2.03x), its path measured (``episode_seed_matters``); at fc5849b
  FunctionCalling 1.27x, 1.35x (1.58x, 1.42x), and 1.36x, 1.39x (4.23x, 3.78x) for the noisy agent,
  whose repeats now find every state (hit rate 1.0, was 0.81: a rollout from a restored state read
  FunctionCalling's restored turns twice into its digests, and a refusal was taken for no change).
* Off the oracle's path it costs a rollout at nearly every step: an untrained policy's states are
  mostly new (Navigation's state holds the Z-machine's memory, FunctionCalling's what was seen),
  and each pays the rest of a solution on the shadow. (Stopping a rollout where it reaches a
  measured state would be exact, but on Navigation 58 of 1,189 such rollouts reached one, and the
  CPU did not change: not done.) Measured cold with a random action nine turns in ten
  (``benchmarks/bench_process_reward.py``'s exploring agent, one run, load 3-4): FunctionCalling
  27x a sparse step, Web 7.6x, Navigation 7.6x; training the study's linear learner on Navigation
  took 10x the CPU of its sparse training, 91% of it in the rollouts. Budget for it before
  training from a weak base; a repeat of a task's episodes costs 1.1-1.5x. A cheaper oracle is
  not a plan's length: Navigation's plan from a state (TextWorld's policy for the quest at hand)
  costs a tenth of the rollout, but its length differed from the rollout's turns on 503 of 816
  states of exploring episodes (40 tasks, 2 seeds each; the plan ends with the current quest, the
  rollout plans again), so a potential read off it would pay wrong values.
* The key is the fast-restore state with what the future reads of the history
  (``TextEnv.history_key``: FunctionCalling's oracle and checks read what the agent has seen), so
  an agent that read something off the oracle's path is a new state for the cache: one rollout
  more, never another state's value. A refusal is read too there (an unknown tool's name is shown
  back), so an invalid action is a new state in such a family, measured as any step's:
  FunctionCalling's noisy agent pays more rollouts for it (0.44 misses a step cold, 0.29 before).
  ``benchmarks/bench_process_reward.py`` measures it against the sparse mode in one run (CPU per
  step, resets included): see the figures in ``docs/architecture.md``.
* Outside ``oracle_distance_shared`` families the cache is the env's, per task and episode seed
  unless the family declares that the seed reaches nothing (``episode_seed_matters = False``): there
  K attempts of a task share it, elsewhere they do not (the seed may shape what the state does not
  hold). Envs of one process do not share it.
* The shadow is set ``lean_info`` (``TextEnv.lean_info``): its steps build no admissible actions
  and no tool schemas, which nobody reads there (Web's page actions, Navigation's admissible
  commands from the game engine).
* A family may set up the shadow once it is copied: ``prepare_oracle_shadow()`` (a no-op on
  ``TextEnv``) is called on it (Navigation's keeps a Z-machine per game, so that a switch of game costs
  the shadow no story load).
* It needs an oracle that plans from any state (``TextEnv.oracle_plans_from_any_state``), not one
  that replays a fixed script, and a fast-restore state to key the cache and to copy the state;
  an env without either refuses the mode at construction with a message that says which.
* Phi reads the oracle, which agents never see; the reward itself tells no more than how much
  closer a step came (in solution lengths), never which action the oracle would take.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Hashable

from budgetgym.core.rollout import rollout

if TYPE_CHECKING:  # pragma: no cover
    from budgetgym.core.env import TextEnv

ORACLE_DISTANCE = "oracle_distance"
REWARD_MODES = ("sparse", "progress", ORACLE_DISTANCE)
"""Every ``reward_mode`` a ``TextEnv`` takes (see its docstring and this module's)."""

#: An env's own cache holds the potentials of several tasks (the least recently started dropped at
#: a reset once they hold more than this many states in all; never within an episode).
MAX_CACHED_STATES = 65_536
#: The potentials shared by the envs of a process (families that declare ``oracle_distance_shared``)
#: hold at most this many states in all; past it the least recently started tasks are dropped.
MAX_SHARED_STATES = 65_536


class Potentials:
    """The cached turns of one scope's states (by :func:`state_digest`) and the turns from its task's
    start (``unit``, None until measured)."""

    __slots__ = ("turns", "unit")

    def __init__(self, turns: dict[str, int] | None = None, unit: int | None = None) -> None:
        self.turns: dict[str, int] = turns if turns is not None else {}
        self.unit = unit


_SHARED: "OrderedDict[Hashable, Potentials]" = OrderedDict()
"""The shared scopes of this process, least recently started first (see :func:`shared_potentials`)."""
_SHARED_LOCK = threading.Lock()  # envs of one process may run in threads (a server's sessions)


def shared_potentials(scope: Hashable) -> Potentials:
    """The process's potentials of ``scope`` (made empty when new), moved to the recent end; the
    least recent scopes are dropped while the shared states number more than ``MAX_SHARED_STATES``."""
    with _SHARED_LOCK:
        return _recent(_SHARED, scope, MAX_SHARED_STATES)


def _recent(scopes: "OrderedDict[Hashable, Potentials]", scope: Hashable, limit: int) -> Potentials:
    """``scopes``' potentials of ``scope`` (made empty when new), moved to the recent end; the least
    recent scopes are dropped while their states number more than ``limit`` (and the scope's own
    emptied if it alone holds more)."""
    potentials = scopes.get(scope)
    if potentials is None:
        potentials = scopes[scope] = Potentials()
    scopes.move_to_end(scope)
    total = sum(len(p.turns) for p in scopes.values())
    while total > limit and len(scopes) > 1:
        _, dropped = scopes.popitem(last=False)
        total -= len(dropped.turns)
    if total > limit:
        potentials.turns.clear()
    return potentials


def forget_shared_potentials() -> None:
    """Empty the process's shared potentials (a benchmark's cold start; the values come back the same)."""
    with _SHARED_LOCK:
        _SHARED.clear()


# The canonical JSON of a digest (sorted keys, no ASCII escapes, compact), by the C encoder that
# json.dumps would build at each call with these options, built once; no check for circular
# containers: a state is a tree of JSON values (a cycle raises RecursionError instead of ValueError).
if getattr(json.encoder, "c_make_encoder", None) is not None:
    _CANONICAL = json.encoder.c_make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring, None,
                                             ":", ",", True, False, True)

    def _canonical(value: Any) -> str:
        return "".join(_CANONICAL(value, 0))
else:  # pragma: no cover - CPython has the C encoder
    _canonical = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode


def state_digest(env: "TextEnv") -> str:
    """A digest of ``env``'s fast-restore state (``_get_state()``, canonical JSON): equal digests
    mean the same future under the same actions (not necessarily conversely: a state may hold
    bookkeeping that no future reads; Navigation's leaves the Z-machine's dead stack out). The
    oracle-distance cache and the step-level groups (:mod:`budgetgym.train.step_groups`) key states
    by it. Needs a family with a fast restore. A family whose future also reads the episode's
    history (``TextEnv.history_key``) has that held too; the others' digests are of the state alone."""
    state, history = env.state_view(), env.history_key()
    text = _canonical(state if history is None else [state, history])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def oracle_distance_problem(env: "TextEnv") -> str | None:
    """Why ``env`` cannot give the oracle-distance reward, or None when it can."""
    name = type(env).__name__
    if not env.oracle_plans_from_any_state:
        return (f"{name} cannot give reward_mode='oracle_distance': its oracle does not plan from any state "
                f"(oracle_plans_from_any_state is False), so its remaining turns are not a distance; "
                f"use 'sparse' or 'progress'")
    from budgetgym.core.env import TextEnv

    if type(env)._get_state is TextEnv._get_state:
        return (f"{name} cannot give reward_mode='oracle_distance': it restores by replay only (no fast-restore "
                f"state to key and copy states by); use 'sparse' or 'progress'")
    return None


class OracleDistance:
    """The oracle-distance potential of one env's states, and the step reward it pays (see the module).

    The env calls :meth:`start` once an episode has begun (a reset or a restore) and :meth:`reward`
    after each step. ``hits`` and ``misses`` count cache lookups (an oracle rollout per miss)."""

    def __init__(self) -> None:
        self._potentials = Potentials()
        self._scope: Hashable | None = None
        # The env's own scopes (task, or task and seed), least recently started first: K attempts of
        # several tasks, interleaved, keep each task's potentials.
        self._scopes: "OrderedDict[Hashable, Potentials]" = OrderedDict()
        self._shadow: TextEnv | None = None
        # At an episode's start whose turns are not known yet, until the first step that changed
        # the state (see start()).
        self._pending = False
        # The oracle rollout whose states the env's state is on, and its index there: a step that
        # sends the rollout's next action reaches its next state, whose digest it recorded.
        self._at: tuple[_Path, int] | None = None
        #: Phi of the env's current state (None before the first episode starts).
        self.potential: float | None = None
        self.hits = 0
        self.misses = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> "OracleDistance":
        # A copied env pays the same rewards from here on; its shadow is rebuilt when first needed.
        return self._twin()

    def __getstate__(self) -> dict[str, Any]:
        return {"_cache": self._potentials.turns, "_scope": self._scope, "_unit": self._potentials.unit,
                "potential": self.potential, "_pending": self._pending}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]
        self._adopt(state["_scope"], Potentials(dict(state["_cache"]), state["_unit"]))
        self.potential, self._pending = state["potential"], bool(state.get("_pending"))

    def _twin(self) -> "OracleDistance":
        twin = OracleDistance()
        twin._adopt(self._scope, Potentials(dict(self._potentials.turns), self._potentials.unit))
        twin.potential, twin._pending = self.potential, self._pending
        return twin

    def _adopt(self, scope: Hashable | None, potentials: Potentials) -> None:
        """Take ``scope`` with ``potentials`` (a copy's or an unpickled env's): a shared scope merges
        them into the process's (the first value a state got stays; the values are the same)."""
        self._scope = scope
        if _is_shared(scope):
            shared = shared_potentials(scope)
            for key, turns in potentials.turns.items():
                shared.turns.setdefault(key, turns)
            if shared.unit is None:
                shared.unit = potentials.unit
            potentials = shared
        self._potentials = potentials

    def forget(self) -> None:
        """Empty this env's own potentials, every task's (a benchmark's cold start; the values come
        back the same when measured again); the shadow stays. Shared potentials: see
        :func:`forget_shared_potentials`."""
        self._scopes.clear()
        self._scope, self._potentials, self._pending, self._at = None, Potentials(), False, None

    def close(self) -> None:
        """Close the shadow env (its backend: a sandbox, an engine); a later miss makes a new one."""
        shadow, self._shadow = self._shadow, None
        if shadow is not None:
            shadow.close()

    def start(self, env: "TextEnv") -> None:
        """An episode began (or was restored) in ``env``: take its state's potential."""
        task = env.task
        if type(env).oracle_distance_shared:
            scope: Hashable = ("shared", type(env).__module__, type(env).__qualname__, task.id,  # type: ignore[union-attr]
                               task.fingerprint)  # type: ignore[union-attr]
            self._scope, self._potentials = scope, shared_potentials(scope)
        else:
            # A family whose seed reaches nothing plays one game per task whatever the seed: its K
            # attempts of a task share the env's potentials (constructor arguments stay the env's).
            scope = (task.id, env._episode_seed) if type(env).episode_seed_matters else (task.id,)  # type: ignore[union-attr]
            if scope != self._scope:
                self._scope, self._potentials = scope, self._own(scope)
        self._pending, self._at = False, None
        potentials = self._potentials
        if env.turn == 0 and not (env._solved or env._failed):
            if potentials.unit is None:
                # The task's start, not measured yet (its scope holds no state: a measure sets the
                # unit): Phi(start) = -turns/turns = -1 whatever turns is, and the measure waits for
                # the first step (see _settle), which then follows the start's rollout.
                self.potential = -1.0
                self._pending = True
                return
            key = state_digest(env)
            cached = potentials.turns.get(key)
            if cached is not None:
                self.hits += 1
                self.potential = -cached / potentials.unit
                return
            self.potential = self.phi(env, key)
            return
        self.potential = self.phi(env)

    def _own(self, scope: Hashable) -> Potentials:
        """The env's potentials of ``scope`` (made empty when new), moved to the recent end; the least
        recent scopes are dropped while the env's states number more than ``MAX_CACHED_STATES``."""
        scopes = self._scopes
        if self._potentials.turns and not _is_shared(self._scope) and self._scope is not None:
            scopes.setdefault(self._scope, self._potentials)  # a copy's or an unpickled env's scope
        return _recent(scopes, scope, MAX_CACHED_STATES)

    def reward(self, env: "TextEnv", changed: bool = True) -> float:
        """The reward of the step ``env`` just took: Phi(now) - Phi(before). ``changed=False`` (an
        invalid action, which changes no state) pays 0 without a lookup where the env's future
        does not read the history (``history_key()`` None); where it does, the refusal's text is
        seen and the state is a new one, looked up like any step's."""
        before = self.potential
        if before is None:  # no episode started through start() (a restore's replay)
            return 0.0
        if not changed and env.history_key() is None:
            return 0.0
        if self._pending:
            now = self.potential = self._settle(env)
        else:
            now = self.potential = self.phi(env, self._followed(env))
        return now - before

    def _followed(self, env: "TextEnv") -> str | None:
        """The digest of the state the step just taken reached when it sent the next action of the
        rollout the env's state was on (the rollout recorded it: the env is a deterministic function
        of its state, and a step that changes nothing sends no lookup here); else None."""
        at, self._at = self._at, None
        if at is None:
            return None
        path, index = at
        if index + 1 < len(path.digests) and path.valid[index] and env.transcript[-1][0] == path.actions[index]:
            self._at = (path, index + 1)
            return path.digests[index + 1]
        return None

    def _settle(self, env: "TextEnv") -> float:
        """The first step from an unmeasured start: measure the start's turns, by the oracle's rollout
        from the start on the shadow (a reset, no snapshot), and return Phi(now). When the step sent
        the oracle's own first action, the env is on that rollout, at its second state: ``turns(start)
        = min(max_turns, 1 + turns(now))`` (the oracle and the env are deterministic functions of the
        state), and every state on the rollout is cached from it. A rollout that does not solve is
        not trusted for the states after the first (the budget cut it one turn shorter than a
        rollout from the second state would be): it is then measured from the second state."""
        self._pending = False
        floor = env.task.max_turns  # type: ignore[union-attr]
        shadow = self._shadow_of(env)
        shadow._start(shadow.all_tasks.get(env.task.id), env._episode_seed)  # type: ignore[union-attr,arg-type]
        self.misses += 1
        path = self._roll(shadow, floor)
        potentials = self._potentials
        if path.actions and path.valid[0] and env.transcript[-1][0] == path.actions[0]:
            if path.solved:
                self._cache(path, floor, first=1)
                self._at = (path, 1)
                now = 0 if env._solved else potentials.turns[path.digests[1]]
            else:
                now = self.turns(env)
            start = min(floor, 1 + now)
            potentials.turns.setdefault(path.digests[0], start)
        else:
            start = self._cache(path, floor)
        if potentials.unit is None:
            potentials.unit = max(1, start)
        return self.phi(env, path.digests[1] if self._at is not None and len(path.digests) > 1 else None)

    def phi(self, env: "TextEnv", key: str | None = None) -> float:
        """``-turns(s) / turns(start)`` for ``env``'s current state (start: the task's first state);
        ``key``: its digest where known."""
        potentials = self._potentials
        if potentials.unit is None:
            if env.turn == 0:
                potentials.unit = max(1, self.turns(env, key))
            else:  # a restored episode: its task's start is measured on the shadow
                shadow = self._shadow_of(env)
                shadow.reset(seed=env._episode_seed, options={"task_id": env.task.id})  # type: ignore[union-attr]
                potentials.unit = max(1, self._cache(self._roll(shadow, env.task.max_turns),  # type: ignore[union-attr]
                                                     env.task.max_turns))  # type: ignore[union-attr]
        return -self.turns(env, key) / potentials.unit

    def turns(self, env: "TextEnv", key: str | None = None) -> int:
        """The oracle's turns to solve the task from ``env``'s current state (``max_turns``: never);
        ``key``: its :func:`state_digest` where known (else it is computed)."""
        if env._solved:
            return 0
        floor = env.task.max_turns  # type: ignore[union-attr]
        if env._failed:
            return floor
        if key is None:
            key = state_digest(env)
        cached = self._potentials.turns.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        shadow = self._shadow_of(env)
        shadow.reset(options={"snapshot": env.snapshot()})
        path = self._roll(shadow, floor)
        if path.digests and path.digests[0] == key:
            self._at = (path, 0)  # the env is at the rollout's first state
        return self._potentials.turns.setdefault(key, self._cache(path, floor))

    def _shadow_of(self, env: "TextEnv") -> "TextEnv":
        """The env the oracle is played on: a copy of ``env`` made once, moved by resets and restores."""
        if self._shadow is None:
            self._shadow = copy.deepcopy(env)
            self._shadow.reward_mode, self._shadow._distance = "sparse", None  # it pays no process reward
            # Nobody reads its info (the rollout reads action_valid alone) or watches it play.
            self._shadow.lean_info, self._shadow.render_mode = True, None
            self._shadow.prepare_oracle_shadow()
        return self._shadow

    def _roll(self, shadow: "TextEnv", floor: int) -> "_Path":
        """Play the oracle from the shadow's state, at most ``floor`` turns, recording its path."""
        # The whole budget ahead: turns(s) is a property of the state, not of the turns it has left.
        shadow._turn = 0
        shadow.turn_limit = shadow.task.max_turns  # type: ignore[union-attr]  # not an outer cap copied with the env
        shadow._ready = not (shadow._solved or shadow._failed)
        digests: list[str] = []  # the digest of each state the oracle acts from

        def oracle(observation: str, info: dict[str, Any], _: Any) -> str | None:
            digests.append(state_digest(shadow))
            return shadow.oracle_action()

        played = rollout(shadow, oracle, reset=False, max_steps=floor)
        # Cut by the budget: neither solved nor ended (a failure) nor given up by the oracle.
        cut = not played.success and played.turns == floor and not played.steps[-1].terminated
        return _Path(digests, played.actions, [step.info["action_valid"] for step in played.steps], played.success,
                     cut)

    def _cache(self, path: "_Path", floor: int, first: int = 0) -> int:
        """Cache the turns of every state on ``path`` from index ``first``; return the first's. A path
        the budget cut gives the floor to its first state alone: a later state of it had less than
        the whole budget ahead, and a rollout of its own may solve within it."""
        cache = self._potentials.turns
        turns = len(path.actions)
        for index in range(first, first + 1 if path.cut else len(path.digests)):
            # The first value a state got stays: a potential is a function of the state.
            cache.setdefault(path.digests[index], turns - index if path.solved else floor)
        return cache[path.digests[first]] if first < len(path.digests) else floor


class _Path:
    """One oracle rollout: the digest of each state the oracle acted from, its actions (the text
    sent), whether each was valid there, whether it solved the task, and whether the budget cut it
    (unsolved, not ended, the oracle not given up)."""

    __slots__ = ("digests", "actions", "valid", "solved", "cut")

    def __init__(self, digests: list[str], actions: list[str], valid: list[bool], solved: bool, cut: bool) -> None:
        self.digests, self.actions, self.valid, self.solved, self.cut = digests, actions, valid, solved, cut


def _is_shared(scope: Hashable | None) -> bool:
    return isinstance(scope, tuple) and bool(scope) and scope[0] == "shared"
