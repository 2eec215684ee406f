"""``TextEnv``: the base class of every budgetgym environment.

The base class does the generic work of the contract (docs/architecture.md): task selection and
seeding, turn counting, ``terminated`` vs ``truncated``, rewards, ``info``, action parsing, the
transcript, snapshots and their restore. A family subclasses it and writes only what is its own:

* ``_load_task(task, seed) -> str``: set up the backend for a task, return the first observation;
* ``_execute(action) -> Outcome``: run one parsed, validated action; the :class:`Outcome` carries the
  observation and whether the task is now solved, failed for good, or how far along it is. The
  family sets no flags: the core owns the episode's bookkeeping;
* ``_oracle() -> Action | None``: the next action of a known-good solution, structured; the core's
  ``oracle_action()`` renders it (``_render_oracle``) and answers None once the episode has ended;
* ``max_calls_per_turn``: the family's action rule (see the attribute), shown in its docstring;
* optionally ``initial_observation`` (a task's first observation and tools without a reset, for
  the dataset export), ``_parse_bare`` (bare commands), ``admissible_actions``, the fast snapshot
  path ``_get_state`` / ``_set_state`` (with ``_state_schema`` and ``_state_status``, which a restore
  checks the state against before anything changes), ``_teardown`` (called by ``close()``: browsers, containers,
  temporary folders), and the failure-state hooks ``propose_mistake`` / ``state_key`` that
  :mod:`budgetgym.core.failures` builds curated failure states from.

Other packages use the public face only (a test holds it): ``parse`` (an action read as ``step``
reads it, the action rule included), ``render_oracle``, ``current_info``, ``has_fast_restore``,
``episode_seed``, ``calls`` and ``observation_limit``; families keep overriding the protected hooks.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import json
import math
import random
from collections import OrderedDict
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, ClassVar, Collection, Mapping, Sequence

import gymnasium as gym

from budgetgym.core.actions import Action, ActionError, ToolCall, parse_action
from budgetgym.core.process_reward import ORACLE_DISTANCE, REWARD_MODES, OracleDistance, oracle_distance_problem
from budgetgym.core.budgets import REVEAL_ROOM
from budgetgym.core.caches import keep_bounded
from budgetgym.core.schemas import validator_for
from budgetgym.core.spaces import UnicodeText
from budgetgym.core.tasks import Task, TaskSet, load_failure_states, load_tasks
from budgetgym.core.tools import FrozenDict, Tool

SNAPSHOT_FORMAT = "budgetgym.snapshot/1"
_SEED_BOUND = 2**31 - 1
_SNAPSHOT_FIELDS = ("format", "env", "env_id", "version", "task_id", "task_fingerprint", "seed", "turn",
                    "first_observation", "transcript", "solved", "failed", "progress", "state")
# A transcript records a non-string action by its repr, which may be longer than any text action.
_MAX_RECORDED_ACTION = 1 << 20
#: Snapshot digests a TextEnv remembers as schema-checked (the oldest forgotten first).
_SCHEMA_CHECKED_KEPT = 4096
#: Action texts a TextEnv keeps the parse of (the oldest forgotten first), and the longest it keeps.
_PARSES_KEPT = 4096
_PARSED_TEXT_MAX = 512
_FLAT = frozenset({str, int, float, bool, type(None)})  # argument values a kept parse may hold


class SnapshotError(ValueError):
    """A snapshot that this env cannot restore (another env, task set or version, or corrupt)."""


class BackendUnavailable(RuntimeError):
    """An env's backend cannot run here (no browser, an engine that does not load, a sandbox that
    cannot start its interpreter). The message is one line: the cause, then the fix."""


@dataclass(frozen=True, init=False)
class Outcome:
    """What one executed action did: the family's answer to ``_execute``.

    Attributes:
        observation: the text the agent sees next.
        solved: the task is now solved: the episode terminates with success.
        failed: the task failed for good: the episode terminates without success.
        progress: the new ``info["progress"]`` in [0, 1]; None leaves it as it was.
        score: a graded score in [0, 1] of a terminating step, for families whose upstream benchmark
            grades partial success (WebShop's share of the asked attributes a purchase meets); it is
            reported as ``info["score"]`` on that step and never paid: the sparse reward is 1.0 when
            solved and 0.0 otherwise, since partial credit is a return that shortcuts collect without
            doing the task.
    """

    observation: str
    solved: bool = False
    failed: bool = False
    progress: float | None = None
    score: float | None = None

    def __init__(self, observation: str, solved: bool = False, failed: bool = False,
                 progress: float | None = None, score: float | None = None) -> None:
        # Frozen all the same (assignment raises): the generated __init__ sets each field through
        # object.__setattr__, twice the cost of filling the instance's dict, and every step makes one.
        fields = self.__dict__
        fields["observation"] = observation
        fields["solved"] = solved
        fields["failed"] = failed
        fields["progress"] = progress
        fields["score"] = score


#: The ``info`` fields a policy may condition on: what a deployed agent is shown (its tools, the
#: page's actions, the verdict on its last action, the turn it is at, a restored prefix). Every other
#: field is the runner's and the trainer's channel, never a policy's input: ``progress`` and
#: ``success`` are the grader's reading of the state (a policy that watches ``progress`` climbs the
#: grader, not the task), ``injected_error`` describes a restored mistake (often naming its fix),
#: ``budget``, ``full_budget`` and ``oracle_turns`` hold the cap that ``reveal="none"`` hides.
AGENT_INFO_KEYS = frozenset({"task_id", "turn", "calls", "tools", "admissible_actions", "action_valid",
                             "action_error", "history"})


def agent_view(info: Mapping[str, Any]) -> dict[str, Any]:
    """``info`` as a policy may see it: only the :data:`AGENT_INFO_KEYS` fields (the same objects).
    Every runner that hands ``info`` to an agent (the evaluation harness, the probes, the trainers'
    rollouts, :mod:`budgetgym.testing`) hands it this."""
    return {key: value for key, value in info.items() if key in AGENT_INFO_KEYS}


def text_env(env: gym.Env) -> "TextEnv":
    """The :class:`TextEnv` under ``env``'s wrappers; a clear ``TypeError`` for any other env.
    Code that reads budgetgym members (tasks, snapshots, the oracle) through wrappers goes through it."""
    base = env.unwrapped
    if not isinstance(base, TextEnv):
        raise TypeError(f"expected a budgetgym text env (a TextEnv under the wrappers), got {type(base).__name__}")
    return base


#: The backends found working in this process, by what their env is made from (id and arguments).
_BACKENDS_CHECKED: set[str] = set()


def check_backend(env: gym.Env) -> None:
    """``TextEnv.check_backend`` of the env under ``env``'s wrappers, once per env id and arguments
    per process (a check that passed is not run again): what sweeps, probes, adapters and exports
    call before they fan out. Raises :class:`BackendUnavailable`."""
    spec = env.spec
    key = repr((spec.id, sorted((k, repr(v)) for k, v in spec.kwargs.items()))) if spec is not None else None
    if key is not None and key in _BACKENDS_CHECKED:
        return
    text_env(env).check_backend()
    if key is not None:
        _BACKENDS_CHECKED.add(key)


def render_action(action: Action) -> str:
    """The canonical text of a structured action: the message itself, one JSON tool call, or a JSON
    list of them. The shared parser reads it back to the same action."""
    if action.is_message:
        return action.message
    if len(action.calls) == 1:
        return action.calls[0].to_json()
    return json.dumps([{"name": c.name, "arguments": dict(c.arguments)} for c in action.calls], ensure_ascii=False)


class TextEnv(gym.Env[str, str], abc.ABC):
    """A text environment: observations and actions are strings; one ``step`` is one model turn.

    Args:
        split: the task split to draw from (None: every task of the family).
        task_ids: restrict the env to these tasks.
        tasks: a custom :class:`TaskSet` (for example freshly generated tasks) instead of the assets.
        reward_mode: ``"sparse"`` (1.0 on the final step of a solved task, else 0.0),
            ``"progress"`` (each step's reward is the change in ``info["progress"]``) or
            ``"oracle_distance"`` (the change in minus the oracle's remaining turns, in solution
            lengths: :mod:`budgetgym.core.process_reward`; envs whose oracle plans from any state).
        render_mode: ``"ansi"`` (``render()`` returns the last turn as text) or ``"human"`` (prints it).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"]}
    family: ClassVar[str] = ""
    #: Families whose agents talk to a user accept plain text as a message (see ``accepts_messages``).
    accepts_messages: ClassVar[bool] = False
    #: Bump when a change makes older snapshots of this env unreplayable.
    snapshot_version: ClassVar[int] = 1
    #: What an LLM needs to know about the family beyond the tools (the chat view uses it).
    instructions: ClassVar[str] = ""
    max_action_length: ClassVar[int] = 65_536
    #: The observation space's length. The env itself writes at most ``observation_limit``
    #: characters (this less ``REVEAL_ROOM``), leaving room for a budget wrapper's revealed text.
    max_observation_length: ClassVar[int] = 262_144
    #: The action rule: how many tool calls one turn may hold. 1 where each action depends on what
    #: the last one showed (a game command, a page, a shell): a second call in a turn is an invalid
    #: action, so a turn is one interaction and ``1x`` is the true shortest solution. Families whose
    #: calls may be independent (function calling, as BFCL's own format has it) allow parallel calls,
    #: up to ``MAX_CALLS_PER_STEP``. Every family states its rule on its class.
    max_calls_per_turn: ClassVar[int] = 1
    #: Reward integrity (``budgetgym probe exploits``): the family's own exploit agents by name, as
    #: ``"module:Class"`` under ``budgetgym.eval.exploits`` (the generic ones apply to every family).
    exploits: ClassVar[Mapping[str, str]] = {}
    #: The tools that only read, where their names do not say so (None: judged by name).
    read_only_tools: ClassVar[Collection[str] | None] = None
    #: How many tasks the contract test's exploit probe samples (fewer where episodes are slow).
    exploit_sample: ClassVar[int] = 40
    #: Set (to the reason) for adapters scored by an upstream checker: their exploit figures are
    #: reported as upstream's, not held to the contract's threshold.
    exploit_upstream: ClassVar[str | None] = None
    #: The oracle solves the task from any state the agent's actions can reach (it plans from the
    #: state rather than replaying a script): ``reward_mode="oracle_distance"`` needs it.
    oracle_plans_from_any_state: ClassVar[bool] = False
    #: The oracle-distance reward's potentials of a task are shared by every env of the class in the
    #: process, across episode seeds: for families whose seed and constructor reach nothing the oracle
    #: sees (:mod:`budgetgym.core.process_reward`).
    oracle_distance_shared: ClassVar[bool] = False
    #: The episode seed reaches nothing: ``_load_task`` and ``_set_state`` ignore it, so two episodes
    #: of a task with different seeds are one game, told apart by their actions alone. The
    #: oracle-distance reward then keeps an env's potentials per task across seeds (K attempts of a
    #: task measure its states once), not per task and seed (:mod:`budgetgym.core.process_reward`).
    episode_seed_matters: ClassVar[bool] = True
    #: Set True on an env (an instance) whose ``info`` nobody reads past the step's own verdict (the
    #: oracle-distance reward's shadow): ``step``, ``reset`` and ``current_info`` then leave out what
    #: only ``info`` carries (``admissible_actions``, the ``tools`` schemas) and ``step`` renders
    #: nothing. The state, the observations and the transitions are the same either way (a Web
    #: step's page actions, a Navigation step's admissible commands are not computed).
    lean_info: bool = False
    #: The kinds of mistake ``propose_mistake`` can make (the failure-state builder asks for these).
    failure_kinds: ClassVar[tuple[str, ...]] = ()
    #: The kinds whose mistake must move ``state_key()`` off the clean solution's path (None: all;
    #: a premature answer, for one, changes no state and is a mistake all the same).
    state_changing_kinds: ClassVar[tuple[str, ...] | None] = None

    def __init__(
        self,
        split: str | None = None,
        task_ids: list[str] | None = None,
        tasks: TaskSet | None = None,
        reward_mode: str = "sparse",
        render_mode: str | None = None,
    ) -> None:
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {', '.join(map(repr, REWARD_MODES))}, got {reward_mode!r}")
        if reward_mode == ORACLE_DISTANCE and oracle_distance_problem(self) is not None:
            raise ValueError(oracle_distance_problem(self))
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.all_tasks = tasks if tasks is not None else load_tasks(self.family)
        self.tasks = self.all_tasks.select(split, task_ids)
        if not self.tasks:
            raise ValueError(f"no tasks selected (split={split!r}, task_ids={task_ids!r})")
        self.reward_mode = reward_mode
        self._distance = OracleDistance() if reward_mode == ORACLE_DISTANCE else None
        self.render_mode = render_mode
        self.observation_space = UnicodeText(self.max_observation_length)
        self.action_space = UnicodeText(self.max_action_length)
        # The tools of the moment. A family changes them by assigning another mapping, never by
        # changing this one in place: a text's parse is kept for the mapping it was parsed against.
        self.tools: Mapping[str, Tool] = {}
        self.task: Task | None = None
        self._episode_seed: int | None = None
        self._turn = 0
        self._calls = 0
        #: The turn at which this episode truncates: the task's full budget (``max_turns``), set at
        #: every reset and restore, which an outer turn budget (``TurnBudget``) lowers to its cap
        #: after the reset. A family that does something on the last turn does it there too, so an
        #: episode cut by a cap ends as one cut by the full budget (Coding measures the progress of
        #: the repository as it is, for an exact progress return).
        self.turn_limit = 0
        self._transcript: list[tuple[str, str]] = []
        # The canonical text of each pair of a transcript list, for snapshots (_snapshot_text).
        self._transcript_texts: tuple[list[tuple[str, str]], list[str]] = (self._transcript, [])
        self._first_observation = ""
        self._last_observation = ""
        self._solved = False
        self._failed = False
        self._progress = 0.0
        self._score: float | None = None
        self._ready = False
        # Digests of snapshots whose state passed the state schema here: the same bytes again need
        # no second validation (any edit changes the digest, and is checked in full).
        self._schema_checked: OrderedDict[str, None] = OrderedDict()
        # Each action text's parse (_parse): the tools it was parsed against, its calls and message.
        self._parses: OrderedDict[str, tuple[Mapping[str, Tool], tuple[ToolCall, ...], str]] = OrderedDict()

    # ------------------------------------------------------------------ the family's part

    @abc.abstractmethod
    def _load_task(self, task: Task, seed: int) -> str:
        """Set up the backend for ``task``; return the first observation. ``seed`` is the episode's."""

    @abc.abstractmethod
    def _execute(self, action: Action) -> Outcome:
        """Run one validated action; say what it did (see :class:`Outcome`)."""

    def _oracle(self) -> Action | None:
        """The next action of a known-good solution from the current (not ended) state, or None."""
        return None

    def _render_oracle(self, action: Action) -> str:
        """The text the oracle sends for ``action`` (families with bare commands render those)."""
        return render_action(action)

    def _teardown(self) -> None:
        """Release what the backend holds outside this process (browsers, containers, folders)."""

    def check_backend(self) -> None:
        """Raise :class:`BackendUnavailable` when this env's backend cannot really run here.

        Called once per env id before a sweep, probe, adapter or export fans out, so that a broken
        backend is refused in one line instead of scoring every episode 0. The default has nothing to
        check (a pure-Python family); a family with an outside backend (a browser, a game engine, a
        sandbox) overrides it with the cheapest check that runs that backend for real."""

    def prepare_oracle_shadow(self) -> None:
        """Set this env up as the oracle-distance reward's shadow (a copy the oracle plays from restored
        states, never an agent): nothing by default; a family may keep engines it reuses across
        restores. Called by :mod:`budgetgym.core.process_reward` once the copy is made."""

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        """A mistaken action of ``kind`` to play here and now instead of the oracle's, and the
        failure state's description (a sentence: what the agent did wrong); None when the kind makes
        no sense at this point. ``plan`` is the oracle's remaining solution from here on the clean
        path (``plan[0]`` is the action the mistake replaces). Read by :mod:`budgetgym.core.failures`;
        must not change the state."""
        return None

    def history_key(self) -> str | None:
        """What this env's future reads from the episode's history beyond the fast-restore state
        (``_get_state``), as a text, or None (the default) when it reads nothing of it.
        :func:`budgetgym.core.process_reward.state_digest` holds it, so that two states whose futures
        differ never share a cached potential or a step group (FunctionCalling: what the agent has
        seen, which its batching rule, its answer checks and its oracle read)."""
        return None

    def state_key(self) -> str:
        """A canonical text of the state that matters for the task's outcome. The failure-state
        builder keeps a mistake only when it moves this key off every key of the clean solution."""
        return json.dumps(self._get_state(), sort_keys=True, ensure_ascii=False)

    def _parse_bare(self, text: str) -> ToolCall | None:
        """Turn a bare command (``go north``) into a tool call, or None when it is not one: a function
        of the text alone, never of the state (``_parse`` keeps each text's parse)."""
        return None

    def admissible_actions(self) -> list[str] | None:
        """The actions that make sense now, where the env knows them (added to ``info``)."""
        return None

    def initial_observation(self, task: Task, seed: int = 0) -> tuple[str, list[dict[str, Any]]]:
        """The first observation and tool schemas of an episode of ``task`` with ``seed``: what
        ``reset(seed=seed, options={"task_id": task.id})`` returns as the observation and as
        ``info["tools"]``. The dataset export calls it once per task.

        The default resets this env to the task (ending any episode in progress). A family whose
        first observation follows from the task record alone overrides it to compute both without
        setting up its backend; an override must leave the env's state untouched, and the export's
        test checks it against ``reset`` for every shipped task."""
        observation, info = self.reset(seed=seed, options={"task_id": task.id})
        return observation, info["tools"]

    def _get_state(self) -> Any:
        """A JSON-serialisable copy of the backend state for fast restore, or None (replay)."""
        return None

    def state_view(self) -> Any:
        """The fast-restore state as ``_get_state()`` gives it (the same JSON value), without its
        copy: read it at once, never keep or change it. :func:`budgetgym.core.process_reward.state_digest`
        reads it (the oracle-distance reward digests every state of every rollout). The default is
        ``_get_state()``; a family whose ``_get_state`` copies a large state returns its parts as
        they are (FunctionCalling: a digest 21.9 -> 12.8 us; Web 11.5 -> 6.0 us)."""
        return self._get_state()

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        """Restore a state produced by ``_get_state`` for ``task`` (only called when that is not None).

        Called on a sibling of the env (see ``_restore``) after the state passed ``_state_schema``;
        ``self.first_observation`` and ``self.transcript`` already hold the snapshot's, for checks of
        the state against them. Raise :class:`SnapshotError` for anything the schema cannot say; build
        the backend afresh (new objects), never by changing the running episode's in place."""
        raise SnapshotError(f"{type(self).__name__} has no fast restore path")

    # ------------------------------------------------------------------ Gymnasium API

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        unknown = set(options) - {"task_id", "task_index", "snapshot"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; use task_id, task_index or snapshot")
        if "snapshot" in options:
            # The restore first: a refused snapshot leaves even the generator's state as it was.
            observation = self._restore(options["snapshot"])
            super().reset(seed=seed)
            if self._distance is not None:
                self._distance.start(self)
            return observation, self._info(at_reset=True)
        super().reset(seed=seed)
        if "task_id" in options:
            task = self.all_tasks.get(options["task_id"])
        elif "task_index" in options:
            index = options["task_index"]
            if not isinstance(index, int) or not 0 <= index < len(self.tasks):
                raise ValueError(f"task_index must be an int in [0, {len(self.tasks)}), got {index!r}")
            task = self.tasks[index]
        else:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        episode_seed = seed if seed is not None else int(self.np_random.integers(_SEED_BOUND))
        self._start(task, episode_seed)
        if self._distance is not None:
            self._distance.start(self)
        return self._last_observation, self._info(at_reset=True)

    def _start(self, task: Task, episode_seed: int) -> None:
        """Begin an episode of ``task`` with ``episode_seed``: a reset's work past its generator,
        which this neither seeds nor reads. The oracle-distance reward's shadow starts a task so
        (seeding a generator costs about what a fast family's step does)."""
        self._begin(task, episode_seed)
        self._first_observation = self._last_observation = self._fit(self._load_task(task, episode_seed))
        self._ready = True

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._ready:
            raise RuntimeError("call reset() before step(), and again after the episode has ended")
        previous_progress = self._progress
        previous_tools = self.tools
        error = None
        recorded = action
        if not isinstance(action, str):
            error = f"The action must be text, got {type(action).__name__}."
            recorded = repr(action)
        elif len(action) > self.max_action_length:
            error = f"The action is {len(action)} characters long; at most {self.max_action_length}."
        else:
            try:
                parsed = self._parse(action, previous_tools)
            except ActionError as err:
                error = str(err)
        valid = error is None
        if valid:
            self._calls += len(parsed.calls)
            outcome = self._execute(parsed)
            observation = outcome.observation
            if outcome.progress is not None:
                self._progress = outcome.progress
            if outcome.solved or outcome.failed:
                self._solved, self._failed = outcome.solved, outcome.failed and not outcome.solved
                self._score = outcome.score
        else:
            observation = f"Invalid action: {error}"
        if len(observation) > self._observation_limit:  # _fit's own test, without the property's call
            observation = self._fit(observation)
        turn = self._turn = self._turn + 1
        self._transcript.append((recorded, observation))
        self._last_observation = observation
        solved, task = self._solved, self.task
        terminated = solved or self._failed
        truncated = not terminated and turn >= self.turn_limit
        if terminated or truncated:
            self._ready = False
        if self.reward_mode == "sparse":
            reward = 1.0 if solved else 0.0
        elif self._distance is None:
            reward = self._progress - previous_progress
        else:
            reward = self._distance.reward(self, changed=valid)
        # _info's fields, built here (a step makes one): the same keys in the same order.
        info: dict[str, Any] = {"task_id": task.id, "turn": turn, "calls": self._calls,
                                "full_budget": task.max_turns,  # type: ignore[union-attr]
                                "oracle_turns": task.oracle_turns, "success": solved,  # type: ignore[union-attr]
                                "progress": self._progress}
        if terminated and self._score is not None:
            info["score"] = self._score
        if self.lean_info:
            info["action_valid"] = valid
            info["action_error"] = error
            return observation, reward, terminated, truncated, info
        admissible = self.admissible_actions()
        if admissible is not None:
            info["admissible_actions"] = admissible
        info["action_valid"] = valid
        info["action_error"] = error
        tools = self.tools
        if tools is not previous_tools and tools != previous_tools:
            info["tools"] = self._tool_schemas()  # the family changed the tools (a new user turn, ...)
        if self.render_mode == "human":
            self.render()
        return observation, reward, terminated, truncated, info

    # ------------------------------------------------------------------ public hooks for other packages

    def parse(self, text: str) -> Action:
        """``text`` parsed as this env's ``step`` parses it now: its tools, bare commands, messages
        and action rule (``max_calls_per_turn``). Raises :class:`ActionError` with the text ``step``
        would answer; changes nothing."""
        if not isinstance(text, str):
            raise ActionError(f"The action must be text, got {type(text).__name__}.")
        return self._parse(text, self.tools)

    def render_oracle(self, action: Action) -> str:
        """The text this env's oracle sends for a structured ``action`` (what ``oracle_action``
        renders; families with bare commands render those)."""
        return self._render_oracle(action)

    def current_info(self) -> dict[str, Any]:
        """The ``info`` of the current state, as a step would report it (without the step's own
        ``action_valid``/``action_error``); before the first reset a RuntimeError."""
        if self.task is None:
            raise RuntimeError("no episode: call reset() first")
        return self._info(at_reset=False)

    @property
    def has_fast_restore(self) -> bool:
        """Whether the family restores snapshots from their state (``_get_state``/``_set_state``)
        rather than by replaying their transcript."""
        return type(self)._get_state is not TextEnv._get_state

    @property
    def episode_seed(self) -> int | None:
        """The seed of the running episode (what ``_load_task`` got, and a snapshot records)."""
        return self._episode_seed

    @property
    def calls(self) -> int:
        """Tool calls run in this episode, a restored prefix included (invalid actions run none)."""
        return self._calls

    @property
    def observation_limit(self) -> int:
        """The most characters this env writes in one observation: the space's length less the room
        kept for a budget wrapper's revealed text (``REVEAL_ROOM``)."""
        return self.max_observation_length - REVEAL_ROOM

    def _parse(self, text: str, tools: Mapping[str, Tool]) -> Action:
        # A rollout's texts repeat (the same clicks, moves and answers within an episode and across
        # a group's attempts: 66% of a noisy oracle's Web actions over 50 tasks, 87% over 8 attempts
        # each), and the parse is a function of the text, the tools and the env's class-level rules
        # (``_parse_bare`` reads the text alone): a text parsed before against the same tools (the
        # same mapping: families keep one per task or turn) costs a lookup. Each entry names its
        # tools, so no parse is read against others (a restore's sibling shares this dict). Each
        # call gets a new Action (families may tell turns apart by identity) around the kept calls,
        # whose arguments are read-only and flat (a parse with a list or an object for an argument
        # is not kept: a tool may change what it is handed). Refusals are parsed again.
        known = self._parses.get(text)
        if known is not None and known[0] is tools:
            return Action(known[1], known[2])
        action = parse_action(text, tools, bare=self._parse_bare, allow_message=self.accepts_messages,
                              max_calls=self.max_calls_per_turn, rule=self._action_rule)
        if len(text) <= _PARSED_TEXT_MAX:
            kept = []
            for call in action.calls:
                arguments = call.arguments
                if not _FLAT.issuperset(map(type, arguments.values())):
                    return action
                kept.append(ToolCall(call.name, FrozenDict(arguments)))
            keep_bounded(self._parses, text, (tools, tuple(kept), action.message), _PARSES_KEPT)
        return action

    @functools.cached_property
    def _action_rule(self) -> str:
        # Built once: every step's parse is handed it (parse_action words a refusal with it).
        return (f"{type(self).__name__} takes one tool call a turn (each action depends on what the last one "
                "showed): send one call and read its result before the next")

    def _fit(self, observation: str) -> str:
        """An observation cut to ``observation_limit``, its start kept."""
        limit = self.observation_limit
        if len(observation) <= limit:
            return observation
        return observation[: limit - 12] + "\n[truncated]"

    def structured_oracle(self) -> Action | None:
        """The oracle's next action as an :class:`Action`; None when the episode has ended (or
        before reset) or the family has none."""
        return self._oracle() if self._ready else None

    def oracle_action(self) -> str | None:
        """The next action of a known-good solution from the current state, as text; None when the
        episode has ended (or before reset) or the family has none. Agents under evaluation never see it."""
        action = self.structured_oracle()
        return None if action is None else self._render_oracle(action)

    @property
    def path_leaving_kinds(self) -> tuple[str, ...]:
        """The failure kinds whose mistakes must leave the clean solution's path."""
        return self.failure_kinds if self.state_changing_kinds is None else self.state_changing_kinds

    def close(self) -> None:
        self._ready = False
        self._teardown()
        if self._distance is not None:
            self._distance.close()  # the oracle-distance reward's shadow env
        super().close()

    def render(self) -> str | None:
        if not self._transcript:
            text = self._last_observation
        else:
            action, observation = self._transcript[-1]
            text = f"> {action}\n{observation}"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, Any]:
        """The episode so far as a JSON-serialisable dict; restore with ``reset(options={"snapshot": s})``."""
        if self.task is None:
            raise RuntimeError("nothing to snapshot: call reset() first")
        snap = {
            "format": SNAPSHOT_FORMAT,
            "env": f"{type(self).__module__}.{type(self).__qualname__}",
            "env_id": self.spec.id if self.spec is not None else None,
            "version": self.snapshot_version,
            "task_id": self.task.id,
            "task_fingerprint": self.task.fingerprint,
            "seed": self._episode_seed,
            "turn": self._turn,
            "first_observation": self._first_observation,
            "transcript": [[a, o] for a, o in self._transcript],
            "solved": self._solved,
            "failed": self._failed,
            "progress": self._progress,
            "state": self._get_state(),
        }
        snap["digest"] = _digest(self._snapshot_text(snap))
        return snap

    def _snapshot_text(self, snap: Mapping[str, Any]) -> str:
        """``snap``'s canonical JSON, the same bytes as :func:`snapshot_digest` hashes, built from
        its fields' texts (a test holds them equal): each transcript pair is encoded once, at the
        first snapshot that holds it (the transcript only grows until the next reset or restore
        replaces the list), and the scalar fields mostly without an encoder call."""
        pairs = self._transcript_texts
        if pairs[0] is not self._transcript:
            pairs = self._transcript_texts = (self._transcript, [])
        texts = pairs[1]
        for pair in self._transcript[len(texts):]:
            texts.append(_canonical(list(pair)))
        parts = []
        for key, prefix in _SORTED_FIELDS:
            if key == "transcript":
                parts.append(prefix + "[" + ",".join(texts) + "]")
            else:
                parts.append(prefix + _field_text(snap[key]))
        return "{" + ",".join(parts) + "}"

    def _restore(self, snap: Any) -> str:
        """Restore ``snap`` all or nothing: everything is checked, and the episode is rebuilt on a
        sibling of this env (a shallow copy whose episode fields are rebuilt), which replaces this
        env's episode only once the restore succeeded. A refused snapshot raises
        :class:`SnapshotError` and leaves the running episode exactly as it was, steppable."""
        task, transcript = self._check_snapshot(snap)
        sibling = self._sibling()
        distance, sibling._distance = self._distance, None  # a replay pays no process reward
        try:
            sibling._rebuild(task, snap, transcript)
        except SnapshotError:
            raise
        except Exception as err:  # a family's own check that raised something else: still a refusal
            raise SnapshotError(f"the snapshot's state could not be restored ({type(err).__name__}: {err})") from err
        self.__dict__.update(sibling.__dict__)
        self._distance = distance
        return self._last_observation

    def _sibling(self) -> "TextEnv":
        """A shallow copy of this env for a restore to rebuild an episode on (tasks, tools, caches and
        the generator shared). ``_load_task`` and ``_set_state`` build the episode's objects afresh
        there, so this env's own stay untouched until the swap. A family whose backend lives outside
        this process (a container, a browser) overrides this to give the sibling its own."""
        sibling = object.__new__(type(self))
        sibling.__dict__.update(self.__dict__)
        return sibling

    def _rebuild(self, task: Task, snap: Mapping[str, Any], transcript: list[list[str]]) -> None:
        self._ready = False
        self._begin(task, snap["seed"])
        expected = (snap["solved"], snap["failed"], float(snap["progress"]))
        # The fast path takes the state as the env wrote it: a snapshot whose digest is missing or no
        # longer matches may have been changed after it was taken (every snapshot() has one), and its
        # state must equal what replaying its transcript gives.
        verify = snap["state"] is not None and snap.get("digest") != snapshot_digest(snap)
        if verify:
            self._check_state(task, snap["state"])
        if snap["state"] is not None and not verify:
            # The family's _set_state may check the state against the transcript (self.transcript).
            self._first_observation = snap["first_observation"]
            self._transcript = [(a, o) for a, o in transcript]
            self._turn = len(transcript)
            if snap["digest"] not in self._schema_checked:
                self._check_state(task, snap["state"])
                keep_bounded(self._schema_checked, snap["digest"], None, _SCHEMA_CHECKED_KEPT)
            self._set_state(task, snap["seed"], snap["state"])
            self._calls = self._count_calls(transcript)
            self._solved, self._failed, self._progress = expected
            derived = self._state_status()
            if derived is not None and not _same_status(derived, expected):
                raise SnapshotError(f"corrupt snapshot: it says solved={expected[0]}, failed={expected[1]}, "
                                    f"progress={expected[2]}, but its state gives solved={derived[0]}, "
                                    f"failed={derived[1]}, progress={derived[2]}")
        else:
            self._first_observation = self._fit(self._load_task(task, snap["seed"]))
            if self._first_observation != snap["first_observation"]:
                raise SnapshotError("snapshot replay diverged at reset: the task's first observation differs")
            self._ready = True
            for number, (action, observation) in enumerate(transcript, 1):
                if not self._ready:
                    raise SnapshotError(f"snapshot replay diverged: the episode ended at turn {number - 1}")
                self.step(action)
                if self._last_observation != observation:
                    raise SnapshotError(f"snapshot replay diverged at turn {number}: the env answered differently")
            replayed = (self._solved, self._failed, self._progress)
            if not _same_status(replayed, expected):
                raise SnapshotError(f"corrupt snapshot: it says solved={expected[0]}, failed={expected[1]}, "
                                    f"progress={expected[2]}, but its replay gives solved={replayed[0]}, "
                                    f"failed={replayed[1]}, progress={replayed[2]}")
            if verify and _canonical(self._get_state()) != _canonical(snap["state"]):
                raise SnapshotError("corrupt snapshot: it was changed after it was taken (its digest does not "
                                    "match) and its state is not what replaying its transcript gives")
        self._last_observation = transcript[-1][1] if transcript else self._first_observation
        self._ready = not (self._solved or self._failed or self._turn >= task.max_turns)

    def _count_calls(self, transcript: Sequence[Sequence[str]]) -> int:
        """The tool calls a restored prefix ran, read from its actions as this env parses them now
        (the replay path counts them as it steps)."""
        count = 0
        for action, observation in transcript:
            if observation.startswith("Invalid action: "):
                continue
            try:
                count += len(self._parse(action, self.tools).calls)
            except ActionError:
                continue
        return count

    def _check_state(self, task: Task, state: Any) -> None:
        """Validate a snapshot's fast-restore state against the family's schema, if it has one."""
        if not self.has_fast_restore:
            raise SnapshotError(f"{type(self).__name__} restores by replay: a snapshot's state must be null")
        schema = self._state_schema(task)
        if schema is None:
            return
        error = validator_for(schema).error(state)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            raise SnapshotError(f"corrupt snapshot: its state does not fit the {self.family} state schema: "
                                f"{error.message}" + (f" (at 'state/{where}')" if where else ""))

    def _check_snapshot(self, snap: Any) -> tuple[Task, list[list[str]]]:
        """Every field of ``snap`` checked before anything changes: one message per cause."""
        if not isinstance(snap, Mapping):
            raise SnapshotError(f"a snapshot is a mapping (a dict), got {type(snap).__name__}")
        if snap.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotError(f"not a budgetgym snapshot (expected format {SNAPSHOT_FORMAT!r})")
        missing = [key for key in _SNAPSHOT_FIELDS if key not in snap]
        if missing:
            raise SnapshotError(f"corrupt snapshot: missing {', '.join(missing)}")
        unknown = sorted(str(key) for key in snap if key not in _SNAPSHOT_FIELDS and key != "digest")
        if unknown:
            raise SnapshotError(f"corrupt snapshot: unknown fields {', '.join(unknown)}")
        mine = f"{type(self).__module__}.{type(self).__qualname__}"
        if snap["env"] != mine:
            raise SnapshotError(f"snapshot is of {snap['env']!r}, this env is {mine!r}")
        if not _is_int(snap["version"]) or snap["version"] != self.snapshot_version:
            raise SnapshotError(f"snapshot version {snap['version']!r} != this env's {self.snapshot_version}")
        if snap["env_id"] is not None and not isinstance(snap["env_id"], str):
            raise SnapshotError("corrupt snapshot: env_id must be a string or null")
        task_id = snap["task_id"]
        if not isinstance(task_id, str) or task_id not in self.all_tasks:
            raise SnapshotError(f"snapshot task {task_id!r} is not in this env's task set")
        task = self.all_tasks.get(task_id)
        if snap["task_fingerprint"] != task.fingerprint:
            raise SnapshotError(f"task {task_id!r} has changed since the snapshot was taken")
        if not _is_int(snap["seed"]) or not 0 <= snap["seed"] < 2**64:
            raise SnapshotError(f"corrupt snapshot: seed must be an int in [0, 2**64), got {snap['seed']!r}")
        transcript = snap["transcript"]
        if not isinstance(transcript, list) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in transcript):
            raise SnapshotError("corrupt snapshot: transcript must be a list of [action, observation] pairs")
        if not all(isinstance(x, str) for p in transcript for x in p):
            raise SnapshotError("corrupt snapshot: the transcript's actions and observations must be strings")
        if not _is_int(snap["turn"]) or snap["turn"] != len(transcript):
            raise SnapshotError(f"corrupt snapshot: turn {snap['turn']!r} does not match the transcript's "
                                f"{len(transcript)} turns")
        if len(transcript) > task.max_turns:
            raise SnapshotError(f"corrupt snapshot: {len(transcript)} turns exceed the task's budget of {task.max_turns}")
        observation_limit, action_limit = self.max_observation_length, max(self.max_action_length, _MAX_RECORDED_ACTION)
        too_long = next((n for n, (a, o) in enumerate(transcript, 1)
                         if len(o) > observation_limit or len(a) > action_limit), None)
        if too_long is not None:
            raise SnapshotError(f"corrupt snapshot: turn {too_long} is longer than this env can produce")
        first = snap["first_observation"]
        if not isinstance(first, str) or len(first) > self.max_observation_length:
            raise SnapshotError("corrupt snapshot: first_observation must be a string")
        if not isinstance(snap["solved"], bool) or not isinstance(snap["failed"], bool):
            raise SnapshotError("corrupt snapshot: solved and failed must be true or false")
        if snap["solved"] and snap["failed"]:
            raise SnapshotError("corrupt snapshot: an episode cannot be both solved and failed")
        if (snap["solved"] or snap["failed"]) and not transcript:
            raise SnapshotError("corrupt snapshot: an episode cannot end before its first turn")
        if "digest" in snap and not isinstance(snap["digest"], str):
            raise SnapshotError("corrupt snapshot: digest must be a string")
        progress = snap["progress"]
        if isinstance(progress, bool) or not isinstance(progress, (int, float)) or not 0.0 <= progress <= 1.0:
            raise SnapshotError(f"corrupt snapshot: progress must be a number in [0, 1], got {progress!r}")
        return task, transcript

    def _state_schema(self, task: Task) -> Mapping[str, Any] | None:
        """The JSON Schema (Draft 2020-12) of what ``_get_state()`` returns for ``task``. A restore
        validates a snapshot's state against it before ``_set_state`` sees it; None: no schema (then
        ``_set_state`` must validate everything itself, raising :class:`SnapshotError`)."""
        return None

    def _state_status(self) -> tuple[bool, bool, float] | None:
        """(solved, failed, progress) as the current backend state implies them, for families with a
        fast restore: a restore compares them with the snapshot's and refuses a mismatch."""
        return None

    # ------------------------------------------------------------------ helpers

    def _begin(self, task: Task, seed: int) -> None:
        self.task = task
        self._episode_seed = seed
        self._observation_limit = self.observation_limit  # read once an episode: step's _fit test
        self.turn_limit = task.max_turns  # type: ignore[union-attr]
        self._turn = 0
        self._calls = 0
        self._transcript = []
        self._solved = self._failed = False
        self._progress = 0.0
        self._score = None

    def _info(self, *, at_reset: bool) -> dict[str, Any]:
        task = self.task
        info: dict[str, Any] = {
            "task_id": task.id,  # type: ignore[union-attr]
            "turn": self._turn,
            "calls": self._calls,
            "full_budget": task.max_turns,  # type: ignore[union-attr]
            "oracle_turns": task.oracle_turns,  # type: ignore[union-attr]
            "success": self._solved,
            "progress": self._progress,
        }
        if at_reset:
            info["action_valid"] = True
            info["action_error"] = None
            if self.lean_info:
                return info
            info["tools"] = self._tool_schemas()
        elif self.lean_info:
            return info
        admissible = self.admissible_actions()
        if admissible is not None:
            info["admissible_actions"] = admissible
        return info

    def _tool_schemas(self) -> list[dict[str, Any]]:
        # A fresh list of each tool's one read-only schema: copying schemas at every reset cost more
        # than the rest of a reset.
        return [tool.shared_schema for tool in self.tools.values()]

    @property
    def oracle_distance(self) -> OracleDistance | None:
        """The oracle-distance reward's cache (``hits`` and ``misses``), None unless
        ``reward_mode="oracle_distance"``."""
        return self._distance

    @property
    def turn(self) -> int:
        """Turns taken in this episode, a restored prefix included."""
        return self._turn

    @property
    def first_observation(self) -> str:
        """The observation the episode started with (before any turn, a restored prefix included)."""
        return self._first_observation

    @property
    def running(self) -> bool:
        """Whether the episode takes another step (False before reset and once it has ended)."""
        return self._ready

    @property
    def last_observation(self) -> str:
        """The observation the env last returned (from reset, a restore or a step)."""
        return self._last_observation

    @property
    def transcript(self) -> list[tuple[str, str]]:
        """The (action, observation) pairs of this episode so far (a copy)."""
        return list(self._transcript)

    def failure_states(self) -> tuple[Mapping[str, Any], ...]:
        """The family's curated failure states (see :class:`budgetgym.wrappers.ErrorInjection`)."""
        return load_failure_states(self.family)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _same_status(a: tuple[bool, bool, float], b: tuple[bool, bool, float]) -> bool:
    return a[0] == b[0] and a[1] == b[1] and math.isclose(a[2], b[2], abs_tol=1e-9)


# One encoder for every canonical text: json.dumps would build a new one at each call.
_canonical = json.JSONEncoder(sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode
# Each snapshot field's key as the canonical text writes it, in its (sorted) order.
_SORTED_FIELDS = tuple((key, _canonical(key) + ":") for key in sorted(_SNAPSHOT_FIELDS))


def _field_text(value: Any) -> str:
    """``_canonical(value)``: a str, int, bool or None written as the encoder writes it, without
    calling it (the call costs more than the text); a finite float as the encoder writes it too
    (its repr); any other value (the state, a float that is not finite) by the encoder."""
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return _canonical(value)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def snapshot_digest(snap: Mapping[str, Any]) -> str:
    """A hash of every field of a snapshot but ``digest`` itself: a snapshot whose digest matches is
    exactly what an env wrote (it detects corruption and edits, not deliberate forgery)."""
    return _digest(_canonical({key: value for key, value in snap.items() if key != "digest"}))
