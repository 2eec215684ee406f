"""ALFWorld-v0: ALFWorld's household text games (Shridhar et al.), played by TextWorld's PDDL engine.

Description:
    An adapter to the text games of the installed ``alfworld`` package and its data: each task is one
    ALFWorld game (``game.tw-pddl`` with its ``traj_data.json``), a household scene where the agent
    must, for example, put a clean mug in the coffee machine or look at a book under the desk lamp.
    The games are run as ALFWorld runs them (``textworld.start`` with ALFWorld's ``AlfredDemangler``
    and ``AlfredInfos`` wrappers, TextWorld's ``PddlEnv`` underneath); nothing of ALFWorld is copied
    into budgetgym. Games are read from ``$ALFWORLD_DATA/json_2.1.1/<split>/...``; ALFWorld's
    ``train`` is the suite's ``train`` split and its two evaluation splits (``valid_seen``,
    ``valid_unseen``) are the ``test`` split, the task's ``alfworld_split`` naming which. Games
    ALFWorld itself skips (marked unsolvable, or of its movable and sliced variants) are skipped.
    Task ids are the game folders relative to ``json_2.1.1``.

Action Space:
    Text: one ALFWorld command, bare (``go to countertop 1``, ``take mug 1 from countertop 1``) or as
    the ``command`` tool call, as in Navigation-v0. ``info["admissible_actions"]`` lists ALFWorld's
    admissible commands. A command that is not admissible gets ALFWorld's own "Nothing happens." and
    changes nothing. One call a turn (``max_calls_per_turn = 1``): a second is an invalid action.
    Commands follow Navigation-v0's rules (``navigation.tools.command``): one game action a command
    (no ``.``, ``,``, ``then``, ``and``, ``all``, ...), no interpreter meta commands, printable ASCII
    only; anything else is an invalid action.

Observation Space:
    Text: ALFWorld's feedback; at reset the room, and the task (``Your task is to: ...``).

Rewards:
    Sparse: 1.0 on the step that completes the task (ALFWorld's ``won``); with
    ``reward_mode="progress"`` the same, as progress is 0 or 1.

Termination:
    ``terminated`` when the task is done. ``truncated`` at the full budget: twice the game's
    walkthrough when the game file has one, else twice the number of steps of the game's ALFRED
    high-level plan (``traj_data["plan"]["high_pddl"]``, less the final no-op), at least 6.

Registered Configurations:
    ``budgetgym/ALFWorld-v0``. Needs the ``alfworld`` extra, ``pip install 'budgetgym[alfworld]'``
    (``alfworld`` and ``textworld[pddl]``, which builds ``fast-downward-textworld`` from source: a
    C++ compiler, ``cmake`` and ``make``; about a minute on 2 cores), then
    ``alfworld-download`` and ``ALFWORLD_DATA`` set to the folder it filled. Without them,
    ``gym.make`` raises ``ALFWorldNotInstalled`` saying which is missing. ``data_dir=`` overrides
    ``ALFWORLD_DATA``.

Notes:
    The oracle is ALFWorld's planner expert: the plan TextWorld's PDDL engine makes (with Fast
    Downward) from the current state, so it recovers from any detour. It is planned only when asked
    for, once per state: TextWorld's ``policy_commands`` info would replan after every step whoever
    plays. Snapshots restore by replay (the PDDL engine's state has no save format).

    Failure states: ``propose_mistake`` makes the kinds of ``mistakes.py`` (``wrong_receptacle``,
    ``skipped_ahead``, ``left_early``, ``wrong_object``, ``wasted_action``) for the core's builder
    (``budgetgym.core.failures``). None are shipped: ALFWorld's games are a download, so
    ``failure_states()`` builds them on first use from the env's games (see it), keeps them for the
    process and writes them to a cache (``~/.cache/budgetgym/alfworld``) for later ones.

    TextWorld's PDDL engine parses the text templates of its grammar with a parser generator at
    every derivation (half of a step's time); the parse of a template is a function of its text, so
    the env keeps each template's parse and hands the engine a copy (see ``_in_engine``).

    An env keeps at most ``ENGINES_KEPT`` TextWorld PDDL environments, each with a game loaded, and
    loads a new game into the least recently used one: every new engine loads a private copy of Fast
    Downward's 11 MB library that is never unloaded. The engines are shared with the siblings a
    restore works on and are not copied by pickle or deep copy: an episode that finds its game's
    engine elsewhere (after a refused restore, in a copy) replays its own commands on it first.
    Fast Downward's translator sets ``sys.argv``; the env puts it back after each load and reset.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import random
import re
import sys
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Mapping, Sequence

from budgetgym.core import Action, BackendUnavailable, Outcome, Task, TaskSet, TextEnv, ToolCall, full_budget
from budgetgym.core.extras import MissingExtra
from budgetgym.core.jsonl import read_jsonl, write_jsonl
from budgetgym.core.limits import LimitExceeded, Limits
from budgetgym.core.tools import tool_map
from budgetgym.envs.alfworld import mistakes
from budgetgym.envs.navigation.tools.command import TOOL as COMMAND

DATA_SUBDIR = "json_2.1.1"
SPLITS = ("train", "valid_seen", "valid_unseen")
SUITE_SPLITS = {"train": "train", "valid_seen": "test", "valid_unseen": "test"}
"""The suite's split of each of ALFWorld's: its two evaluation splits (seen and unseen scenes) are the test split."""
NOTHING_HAPPENS = "Nothing happens."  # TextWorld's PDDL engine's answer to a command it does not know
_WELCOME = re.compile(r"^-= Welcome to TextWorld, ALFRED! =-\s*")
STEP_LIMITS = Limits(seconds=10.0)
"""The bound on one command in the engine (see ``budgetgym.core.limits``): TextWorld's text
generation is Python and is interrupted at the deadline; the engine is then rebuilt by replay."""
INSTALL = ("pip install 'budgetgym[alfworld]' (alfworld and textworld[pddl], which builds fast-downward-textworld: "
           "a C++ compiler, cmake and make), "
           "then run alfworld-download and set ALFWORLD_DATA to the folder it filled")


class ALFWorldNotInstalled(MissingExtra):
    """ALFWorld, its PDDL planner or its data is missing: the message says which, and what to do."""


def _require(data_dir: str | None) -> Path:
    try:
        import alfworld  # noqa: F401
    except ImportError as err:
        raise ALFWorldNotInstalled("alfworld", "budgetgym/ALFWorld-v0", missing="ALFWorld", install=INSTALL,
                                   detail=str(err)) from err
    try:
        import fast_downward  # noqa: F401
    except ImportError as err:
        raise ALFWorldNotInstalled(
            "alfworld", "budgetgym/ALFWorld-v0", missing="TextWorld's PDDL engine",
            install="pip install 'budgetgym[alfworld]' (its textworld[pddl] builds fast-downward-textworld: a C++ "
                    "compiler, cmake and make)", detail=str(err)) from err
    folder = data_dir or os.environ.get("ALFWORLD_DATA")
    if not folder:
        raise ALFWorldNotInstalled("alfworld", "budgetgym/ALFWorld-v0", missing="ALFWorld's games",
                                   install=INSTALL, detail="ALFWORLD_DATA is not set")
    root = Path(os.path.expandvars(folder)).expanduser() / DATA_SUBDIR
    if not root.is_dir():
        raise ALFWorldNotInstalled("alfworld", "budgetgym/ALFWorld-v0",
                                   missing=f"a {DATA_SUBDIR} folder in ALFWORLD_DATA",
                                   install="run alfworld-download (or point ALFWORLD_DATA at the folder it filled)",
                                   detail=f"no {DATA_SUBDIR} folder in ALFWORLD_DATA={folder}")
    return root


def load_games(root: Path) -> TaskSet:
    """One task per solvable game under ``root`` (``$ALFWORLD_DATA/json_2.1.1``), as ALFWorld selects them."""
    records = []
    for game_file in sorted(root.glob("*/**/game.tw-pddl")):
        folder = game_file.parent
        relative = folder.relative_to(root).as_posix()
        alfworld_split = relative.split("/", 1)[0]
        if alfworld_split not in SPLITS or "movable" in relative or "Sliced" in relative:
            continue
        traj_path = folder / "traj_data.json"
        if not traj_path.exists():
            continue
        game = json.loads(game_file.read_text(encoding="utf-8"))
        if not game.get("solvable"):
            continue
        traj = json.loads(traj_path.read_text(encoding="utf-8"))
        if game.get("walkthrough"):
            oracle_turns = len(game["walkthrough"])
        else:
            steps = traj.get("plan", {}).get("high_pddl", [])
            oracle_turns = max(1, sum(1 for s in steps if s.get("discrete_action", {}).get("action") != "NoOp"))
        goal = re.search(r"Your task is to: ([^\"]*?)\.?\"", game.get("grammar", ""))
        records.append({
            "id": relative,
            "split": SUITE_SPLITS[alfworld_split],
            "alfworld_split": alfworld_split,
            "instruction": goal.group(1) if goal else traj.get("task_type", ""),
            "task_type": traj.get("task_type"),
            "oracle_turns": oracle_turns,
            "max_turns": full_budget(oracle_turns),
        })
    if not records:
        raise ALFWorldNotInstalled("alfworld", "budgetgym/ALFWorld-v0", missing="solvable games",
                                   install="run alfworld-download", detail=f"none under {root}")
    return TaskSet(records)


ENGINES_KEPT = 8
"""TextWorld PDDL engines an env keeps, each with a game loaded: a reset to one of those games
skips loading it (a third of a second); a new game is loaded into the least recently used one."""


class _Engine:
    """One TextWorld PDDL environment (with ALFWorld's wrappers), the game loaded in it, and whose
    episode it holds, after how many commands."""

    def __init__(self) -> None:
        self.game: Any = None
        self.game_file: str | None = None
        self.owner: object | None = None
        self.moves = 0
        self.state: Any = None

    def load(self, game_file: str) -> None:
        if self.game_file == game_file:
            return
        self.game_file = None  # until the new game is in
        with _in_engine():
            if self.game is None:
                import textworld
                from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

                infos = textworld.EnvInfos(won=True, admissible_commands=True)
                self.game = textworld.start(game_file, request_infos=infos,
                                            wrappers=[AlfredDemangler(shuffle=False), AlfredInfos])
            else:
                self.game.load(game_file)
        self.game_file = game_file

    def reset(self, owner: object) -> Any:
        with _in_engine():
            self.state = self.game.reset()
        self.owner, self.moves = owner, 0
        return self.state

    def step(self, command: str) -> None:
        """One command; the game state it gives is ``self.state`` (a bounded call returns nothing big)."""
        with _in_engine():
            self.state, _, _ = self.game.step(command)
        self.moves += 1

    def plan(self) -> list[str]:
        """The planner's commands from the engine's current state (ALFWorld's planner expert)."""
        pddl = self.game.unwrapped
        with _in_engine():
            return list(pddl._pddl_state.replan(pddl._entity_infos))

    def close(self) -> None:
        game, self.game, self.game_file, self.owner = self.game, None, None, None
        if game is not None:
            with _engine_lock:
                game.close()


_idle_engines: list[_Engine] = []
"""Engines of closed or collected envs, with their games and libraries, for the next env to reuse."""
_idle_lock = threading.Lock()  # envs in several threads take and return engines: one at a time


class _Engines:
    """An env's engines, at most ``ENGINES_KEPT``, by the game loaded in each.

    Each TextWorld PDDL engine loads a private copy of Fast Downward's 11 MB library that is never
    unloaded, so engines are never thrown away: a new game goes into the env's least recently used
    engine once it has ``ENGINES_KEPT``, and an env's engines go to the process's idle list when it
    is closed or collected, where the next env takes them. A process thus holds as many engines as
    it ever had in use at once, whatever the number of envs made."""

    def __init__(self, kept: int | None = None) -> None:
        self.kept = ENGINES_KEPT if kept is None else kept
        self._by_game: OrderedDict[str, _Engine] = OrderedDict()

    def get(self, game_file: str) -> _Engine:
        engine = self._by_game.get(game_file)
        if engine is not None:
            self._by_game.move_to_end(game_file)
            return engine
        if len(self._by_game) >= self.kept:
            _, engine = self._by_game.popitem(last=False)
        else:
            with _idle_lock:  # chosen and removed at once: two threads never take the same engine
                idle = [e for e in _idle_engines if e.game_file == game_file] or _idle_engines[-1:]
                if idle:
                    _idle_engines.remove(idle[0])
            engine = idle[0] if idle else _Engine()
        try:
            engine.load(game_file)
        except BaseException:
            engine.close()  # half loaded: dropped (its library stays loaded, as TextWorld leaves it)
            raise
        engine.owner = None  # whoever held it (another game, another env), its state is no episode's now
        self._by_game[game_file] = engine
        return engine

    def engines(self) -> list[_Engine]:
        return list(self._by_game.values())

    def release(self) -> None:
        """Hand every engine to the idle list (an env's close, or its collection)."""
        _release(self._by_game)


def _release(by_game: OrderedDict[str, _Engine]) -> None:
    with _idle_lock:
        while by_game:
            _idle_engines.append(by_game.popitem()[1])


TRANSLATIONS_KEPT = 64
"""Games whose PDDL-to-SAS translations are kept (a reset of one of them skips the translator)."""
_translations: OrderedDict[tuple[str, str, bool], Any] = OrderedDict()
_engine_lock = threading.RLock()
"""Held by every call into an engine. TextWorld's PDDL engines share process-wide state: one
text-generation parser (two threads in it garble each other's parse), Fast Downward's translator
(swapped below) and ``sys.argv``. Envs in several threads (a thread pool) therefore take turns."""


TEMPLATES_KEPT = 4096
"""Grammar templates whose parses are kept (a game's grammar has a few hundred)."""
_templates: OrderedDict[tuple[str, str | None], Any] = OrderedDict()
_conditions: OrderedDict[str, Any] = OrderedDict()


@contextlib.contextmanager
def _in_engine():
    """Around every call into TextWorld's PDDL engine (a load, a reset, a step):

    * Fast Downward's translator (``fast_downward.pddl2sas``, called twice a reset) is given a
      memory of its last ``TRANSLATIONS_KEPT`` results: the same domain and problem always translate
      to the same task, and translating is half of a reset's time;
    * TextWorld's grammar parser (``textgen._parse_and_convert``, run on a template at each
      derivation: every admissible command's text, every feedback) is given a memory of its last
      ``TEMPLATES_KEPT`` parses: a template's parse is a function of its text; each call gets a deep
      copy, as the engine writes into the symbols it derives; and the conditions of its rules
      (``Rule.parse_conjunctive_query``, parsed at each use) are kept by their text too (the rule
      a condition parses to is only read);
    * the translator overwrites ``sys.argv``: the host program gets its own back.

    It holds ``_engine_lock``: the translator, the parser, the module attributes swapped here and
    ``sys.argv`` are process-wide, so two calls at once would restore each other's.
    """
    import fast_downward
    from textworld.envs.pddl import textgen
    from textworld.logic import Rule

    with _engine_lock:
        translate, parse = fast_downward.pddl2sas, textgen._parse_and_convert
        query = Rule.__dict__["parse_conjunctive_query"]  # the classmethod itself, put back as it was

        def remembered(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
            key = (domain, problem, bool(optimize))
            result = _translations.get(key)
            if result is None:
                result = _translations[key] = translate(domain, problem, verbose=verbose, optimize=optimize)
                while len(_translations) > TRANSLATIONS_KEPT:
                    _translations.popitem(last=False)
            else:
                _translations.move_to_end(key)
            return result

        def parsed(text: Any, rule_name: str | None = None, **options: Any) -> Any:
            if options.get("trace") or set(options) - {"trace"} or not isinstance(text, str):
                return parse(text, rule_name=rule_name, **options)  # a traced or unusual parse: not kept
            key = (text, rule_name)
            result = _templates.get(key)
            if result is None:
                result = _templates[key] = parse(text, rule_name=rule_name)
                while len(_templates) > TEMPLATES_KEPT:
                    _templates.popitem(last=False)
            else:
                _templates.move_to_end(key)
            return copy.deepcopy(result)

        def condition(cls: type, expression: str) -> Any:
            rule = _conditions.get(expression)
            if rule is None:
                rule = _conditions[expression] = query.__func__(cls, expression)
                while len(_conditions) > TEMPLATES_KEPT:
                    _conditions.popitem(last=False)
            return rule

        argv = list(sys.argv)
        fast_downward.pddl2sas, textgen._parse_and_convert = remembered, parsed
        Rule.parse_conjunctive_query = classmethod(condition)
        try:
            yield
        finally:
            fast_downward.pddl2sas, textgen._parse_and_convert = translate, parse
            Rule.parse_conjunctive_query = query
            sys.argv[:] = argv


FAILURES_PER_SPLIT = 100
"""Failure states built per split: its games are taken in turn until it has this many (or none are left)."""
FAILURES_PER_GAME_KIND = 12
"""Distinct failure states of one kind kept per game at most."""
FAILURE_DRAWS = 32
"""Seeded runs of the core's builder per game and kind (each draws a point of the path and a command)."""
FAILURE_STALE_DRAWS = 4
"""Draws in a row that find no new state, after which a game's kind is done."""
FAILURE_BUILD = 1
"""The version of the failure-state build, in the digest of the files it writes (a change rebuilds them)."""
_BUILT_FAILURE_STATES: dict[str, tuple[Mapping[str, Any], ...]] = {}


def _failure_key(root: Path, tasks: Sequence[Task]) -> str:
    """The digest of a split's failure states: its task records, its games' bytes (under ``root``)
    and the build's settings."""
    digest = hashlib.sha256(json.dumps([FAILURE_BUILD, FAILURES_PER_SPLIT, FAILURES_PER_GAME_KIND, FAILURE_DRAWS,
                                        FAILURE_STALE_DRAWS, list(mistakes.KINDS)]).encode())
    for task in tasks:
        digest.update(task.fingerprint.encode())
        for name in ("game.tw-pddl", "traj_data.json"):
            digest.update(hashlib.sha256((root / task.id / name).read_bytes()).digest())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """Where built failure states are kept: ``$BUDGETGYM_CACHE`` or ``$XDG_CACHE_HOME/budgetgym``
    (``~/.cache/budgetgym``), then ``alfworld`` (the coding libraries' convention)."""
    root = os.environ.get("BUDGETGYM_CACHE")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "budgetgym")
    return Path(root) / "alfworld"


def _by_task_type(tasks: Sequence[Task]) -> list[Task]:
    """The tasks with their task types alternating (each type's in order)."""
    types: dict[Any, list[Task]] = {}
    for task in tasks:
        types.setdefault(task["task_type"], []).append(task)
    columns = list(types.values())
    return [column[i] for i in range(max(map(len, columns), default=0)) for column in columns if i < len(column)]


def _read_failure_states(path: Path) -> list[dict[str, Any]] | None:
    try:
        return read_jsonl(path)
    except (OSError, ValueError):  # not built yet, or unreadable: built again
        return None


def _write_failure_states(path: Path, states: list[dict[str, Any]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_jsonl(path, states)
    except OSError:  # a cache that cannot be written: the states are kept for this process only
        pass


class ALFWorldEnv(TextEnv):
    """ALFWorld's text games (see the module docstring)."""

    family = "alfworld"
    max_calls_per_turn = 1  # sequential: each action depends on what the last one showed
    instructions: ClassVar[str] = (
        "You are in a household text game. Send one command a turn, such as 'go to countertop 1', "
        "'take mug 1 from countertop 1', 'open fridge 1', 'clean mug 1 with sinkbasin 1', 'heat egg 1 with "
        "microwave 1', 'put mug 1 in/on coffeemachine 1', 'use desklamp 1' or 'look'. The opening text states "
        "your task; the commands the game accepts now are listed as admissible actions.")
    exploit_upstream = "ALFWorld's own goal check (the PDDL goal of the game) decides success"
    failure_kinds: ClassVar[tuple[str, ...]] = mistakes.KINDS
    state_changing_kinds: ClassVar[tuple[str, ...]] = mistakes.STATE_CHANGING

    def __init__(self, split: str | None = None, task_ids: list[str] | None = None, tasks: TaskSet | None = None,
                 reward_mode: str = "sparse", render_mode: str | None = None, data_dir: str | None = None) -> None:
        root = _require(data_dir)
        self._data_dir, self._root = data_dir, root
        super().__init__(split=split, task_ids=task_ids, tasks=tasks if tasks is not None else load_games(root),
                         reward_mode=reward_mode, render_mode=render_mode)
        self.tools = tool_map(COMMAND)
        self._engines = self._own_engines()  # shared with the siblings a restore rebuilds on
        self._episode: object | None = None  # this episode's token: an engine holds it when engine.owner is it
        self._commands: list[str] = []  # the commands this episode sent to the engine
        self._state: Any = None  # the game state after the last of them
        self._admissible: frozenset[str] = frozenset()  # its admissible commands
        self._plan: tuple[object | None, int, list[str]] = (None, 0, [])  # (episode, moves, plan) of the last ask

    def __getstate__(self) -> dict[str, Any]:
        """Pickle and deep copy: engines (loaded C libraries) are not copied; the copy gets its own
        and replays the episode's commands on one."""
        state = self.__dict__.copy()
        state.update(_engines=None, _state=None, _plan=(None, 0, []))
        state["_copied_state"] = self._state is not None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        copied = state.pop("_copied_state", False)
        self.__dict__.update(state)
        self._engines = self._own_engines()
        if copied:
            self._sync()

    def _own_engines(self) -> _Engines:
        engines = _Engines()
        weakref.finalize(self, _release, engines._by_game)  # a collected env's engines go idle too
        return engines

    def check_backend(self) -> None:
        """The engine loads the first task's game (TextWorld's PDDL engine and the planner)."""
        try:
            self._engines.get(self._game_file(self.tasks[0]))
        except Exception as err:  # the engine's failures (a planner that did not build, a bad game) vary
            raise BackendUnavailable(
                f"budgetgym/ALFWorld-v0: the engine did not load a game ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]}); reinstall with pip install 'budgetgym[alfworld]' "
                "(a C++ compiler, cmake and make build its planner)") from err

    def _game_file(self, task: Task) -> str:
        """The task's game, in this env's data folder (records name no path, so a task, its
        snapshots and its failure states do not depend on where the data lies)."""
        return str(self._root / task.id / "game.tw-pddl")

    def _load_task(self, task: Task, seed: int) -> str:
        self._episode, self._commands = object(), []
        self._state = self._engines.get(self._game_file(task)).reset(self._episode)
        self._admissible = frozenset(self._state["admissible_commands"])
        return _WELCOME.sub("", self._state.feedback).strip()

    def _sync(self) -> _Engine:
        """The engine of this episode's game, brought to this episode's state (by replaying its
        commands) if it holds another episode or another game."""
        engine = self._engines.get(self._game_file(self.task))  # type: ignore[arg-type]
        if engine.owner is not self._episode or engine.moves != len(self._commands):
            engine.reset(self._episode)
            for command in self._commands:
                engine.step(command)
            self._state = engine.state
            self._admissible = frozenset(self._state["admissible_commands"])
        return engine

    def send(self, command: str) -> str:
        """One command to the game; its feedback (the ``command`` tool's body). A command that is not
        admissible gets the engine's own answer to it without a trip through the engine, which would
        leave the state as it is and rebuild every admissible command's text."""
        command = command.strip()
        if command not in self._admissible:
            return NOTHING_HAPPENS
        engine = self._sync()
        try:
            STEP_LIMITS.run(engine.step, command)
        except LimitExceeded as err:
            engine.owner = None  # half-stepped: rebuilt by replay
            self._sync()
            return f"The game engine failed ({err}); it was rebuilt where it was, and nothing happened."
        self._commands.append(command)
        state = self._state = engine.state
        self._admissible = frozenset(state["admissible_commands"])
        return state.feedback.strip() or NOTHING_HAPPENS

    def _execute(self, action: Action) -> Outcome:
        texts = []
        for call in action.calls:
            if self._state["won"]:
                break
            text = self.tools[call.name].function(self, **call.arguments)
            texts.append(text if len(action.calls) == 1 else f"> {call.arguments['command']}\n{text}")
        won = bool(self._state["won"])
        return Outcome("\n\n".join(texts), solved=won, progress=1.0 if won else 0.0)

    def _parse_bare(self, text: str) -> ToolCall | None:
        text = text.strip()
        return ToolCall("command", {"command": text}) if text and "\n" not in text else None

    def _oracle(self) -> Action | None:
        if self._state is None or self._state["won"]:
            return None
        episode, moves, plan = self._plan
        if episode is not self._episode or moves != len(self._commands):
            plan = self._sync().plan()
            self._plan = (self._episode, len(self._commands), plan)
        return Action((ToolCall("command", {"command": plan[0]}),)) if plan else None

    def _render_oracle(self, action: Action) -> str:
        return action.calls[0].arguments["command"]

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        """A command of ``kind`` (:mod:`.mistakes`) from the admissible ones, instead of the planner's."""
        if not plan or self._state is None:
            return None
        intended = plan[0].calls[0].arguments["command"]
        later = " | ".join(action.calls[0].arguments["command"] for action in plan)
        admissible = sorted(c for c in self._admissible if c != intended)
        choice = mistakes.candidates(kind, intended, later, admissible)
        if not choice:
            return None
        command, description = rng.choice(choice)
        return Action((ToolCall("command", {"command": command}),)), description

    def failure_states(self) -> tuple[Mapping[str, Any], ...]:
        """Failure states of this env's games, built on first use (ALFWorld's games are a download,
        so none are shipped), by the core's builder (``budgetgym.core.failures``) in a second env of
        the same games (this one's episode is left alone).

        Per split, games are taken in turn (task types alternating) until the split has
        ``FAILURES_PER_SPLIT`` states or its games run out. Per game and kind, the builder is run
        with up to ``FAILURE_DRAWS`` seeded generators, each drawing a point of the planner's path
        and a command of the kind there; each distinct prefix it keeps (one the planner recovers from
        within the full budget) is a state, up to ``FAILURES_PER_GAME_KIND``, with ``.<n>`` after
        the builder's id. So a game gives states at every step of its plan where a kind fits.

        The states of a split are kept for the process and written to
        ``cache_dir()/failure_states-<split>-<digest>.jsonl`` (when it can be written), the digest
        of the split's task records, the games' bytes and these settings: a later process reads
        them back, and a changed game is built afresh. The first build costs about 3 s of CPU a
        game (measured on the six games the tests write)."""
        states: list[Mapping[str, Any]] = []
        for split in self.tasks.splits:
            tasks = list(self.tasks.select(split))
            key = _failure_key(self._root, tasks)
            if key not in _BUILT_FAILURE_STATES:
                path = cache_dir() / f"failure_states-{split}-{key}.jsonl"
                built = _read_failure_states(path)
                if built is None:
                    built = self._build_failure_states(tasks)
                    _write_failure_states(path, built)
                _BUILT_FAILURE_STATES[key] = tuple(MappingProxyType(state) for state in built)
            states.extend(_BUILT_FAILURE_STATES[key])
        return tuple(states)

    def _build_failure_states(self, tasks: list[Task]) -> list[dict[str, Any]]:
        from budgetgym.core.failures import build_failure_state

        builder = ALFWorldEnv(tasks=TaskSet(tasks), data_dir=self._data_dir)
        states: list[dict[str, Any]] = []
        try:
            for task in _by_task_type(tasks):
                if len(states) >= FAILURES_PER_SPLIT:
                    break
                for kind in self.failure_kinds:
                    kept: set[str] = set()
                    stale = 0  # draws since the last new state
                    for draw in range(FAILURE_DRAWS):
                        rng = random.Random(f"budgetgym-alfworld-failures/{task.id}/{kind}/{draw}")
                        state = build_failure_state(builder, task, kind, rng)
                        if state is None:
                            break  # no point of the path suits the kind: no other draw finds one
                        prefix = json.dumps(state["snapshot"]["transcript"])
                        if prefix in kept:
                            stale += 1
                            if stale >= FAILURE_STALE_DRAWS:
                                break  # the kind's few states here are all found
                            continue
                        states.append(dict(state, id=f"{state['id']}.{len(kept)}"))
                        kept.add(prefix)
                        stale = 0
                        if len(kept) >= FAILURES_PER_GAME_KIND:
                            break
        finally:
            builder.close()
        return states

    def state_key(self) -> str:
        """The game's state: its PDDL facts, sorted."""
        return "\n".join(sorted(map(str, self._state["_facts"]))) if self._state is not None else ""

    def admissible_actions(self) -> list[str] | None:
        return None if self._state is None else list(self._state["admissible_commands"])

    def _teardown(self) -> None:
        self._engines.release()
        self._state = None
