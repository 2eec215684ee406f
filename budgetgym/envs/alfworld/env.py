"""ALFWorld-v0: ALFWorld's household text games (Shridhar et al.), played by TextWorld's PDDL engine.

Description:
    An adapter to the text games of the installed ``alfworld`` package and its data: each task is one
    ALFWorld game (``game.tw-pddl`` with its ``traj_data.json``), a household scene where the agent
    must, for example, put a clean mug in the coffee machine or look at a book under the desk lamp.
    The games are run as ALFWorld runs them (``textworld.start`` with ALFWorld's ``AlfredDemangler``
    and ``AlfredInfos`` wrappers, TextWorld's ``PddlEnv`` underneath); nothing of ALFWorld is copied
    into budgetgym. Games are read from ``$ALFWORLD_DATA/json_2.1.1/<split>/...``; ALFWorld's splits
    are kept (``train``, ``valid_seen``, ``valid_unseen``), and games ALFWorld itself skips (marked
    unsolvable, or of its movable and sliced variants) are skipped. Task ids are the game folders
    relative to ``json_2.1.1``.

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
    ``wrong_object``, ``wasted_action``) for the core's builder (``budgetgym.core.failures``). None
    are shipped: ALFWorld's games are a download, so they are built from the games there are.

    An env keeps at most ``ENGINES_KEPT`` TextWorld PDDL environments, each with a game loaded, and
    loads a new game into the least recently used one: every new engine loads a private copy of Fast
    Downward's 11 MB library that is never unloaded. The engines are shared with the siblings a
    restore works on and are not copied by pickle or deep copy: an episode that finds its game's
    engine elsewhere (after a refused restore, in a copy) replays its own commands on it first.
    Fast Downward's translator sets ``sys.argv``; the env puts it back after each load and reset.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sys
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar, Sequence

from budgetgym.core import Action, BackendUnavailable, Outcome, Task, TaskSet, TextEnv, ToolCall, full_budget
from budgetgym.core.extras import MissingExtra
from budgetgym.core.limits import LimitExceeded, Limits
from budgetgym.core.tools import tool_map
from budgetgym.envs.alfworld import mistakes
from budgetgym.envs.navigation.tools.command import TOOL as COMMAND

DATA_SUBDIR = "json_2.1.1"
SPLITS = ("train", "valid_seen", "valid_unseen")
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
        split = relative.split("/", 1)[0]
        if split not in SPLITS or "movable" in relative or "Sliced" in relative:
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
            "split": split,
            "instruction": goal.group(1) if goal else traj.get("task_type", ""),
            "task_type": traj.get("task_type"),
            "game_file": str(game_file),
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
        with _translating():
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
        with _translating():
            self.state = self.game.reset()
        self.owner, self.moves = owner, 0
        return self.state

    def step(self, command: str) -> None:
        """One command; the game state it gives is ``self.state`` (a bounded call returns nothing big)."""
        with _engine_lock:
            self.state, _, _ = self.game.step(command)
        self.moves += 1

    def plan(self) -> list[str]:
        """The planner's commands from the engine's current state (ALFWorld's planner expert)."""
        pddl = self.game.unwrapped
        with _engine_lock:
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


@contextlib.contextmanager
def _translating():
    """Around TextWorld's loads and resets of a PDDL game, which rebuild its state from the PDDL text:

    * Fast Downward's translator (``fast_downward.pddl2sas``, called twice a reset) is given a
      memory of its last ``TRANSLATIONS_KEPT`` results: the same domain and problem always translate
      to the same task, and translating is half of a reset's time;
    * the translator overwrites ``sys.argv``: the host program gets its own back.

    It holds ``_engine_lock``: the translator, its module attribute swapped here and ``sys.argv``
    are process-wide, so two loads at once would restore each other's.
    """
    import fast_downward

    with _engine_lock:
        translate = fast_downward.pddl2sas

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

        argv = list(sys.argv)
        fast_downward.pddl2sas = remembered
        try:
            yield
        finally:
            fast_downward.pddl2sas = translate
            sys.argv[:] = argv


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
            self._engines.get(self.tasks[0]["game_file"])
        except Exception as err:  # the engine's failures (a planner that did not build, a bad game) vary
            raise BackendUnavailable(
                f"budgetgym/ALFWorld-v0: the engine did not load a game ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]}); reinstall with pip install 'budgetgym[alfworld]' "
                "(a C++ compiler, cmake and make build its planner)") from err

    def _load_task(self, task: Task, seed: int) -> str:
        self._episode, self._commands = object(), []
        self._state = self._engines.get(task["game_file"]).reset(self._episode)
        self._admissible = frozenset(self._state["admissible_commands"])
        return _WELCOME.sub("", self._state.feedback).strip()

    def _sync(self) -> _Engine:
        """The engine of this episode's game, brought to this episode's state (by replaying its
        commands) if it holds another episode or another game."""
        engine = self._engines.get(self.task["game_file"])  # type: ignore[index]
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

    def state_key(self) -> str:
        """The game's state: its PDDL facts, sorted."""
        return "\n".join(sorted(map(str, self._state["_facts"]))) if self._state is not None else ""

    def admissible_actions(self) -> list[str] | None:
        return None if self._state is None else list(self._state["admissible_commands"])

    def _teardown(self) -> None:
        self._engines.release()
        self._state = None
