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
    changes nothing.

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
    ``budgetgym/ALFWorld-v0``. Needs ``pip install alfworld`` (which installs ``textworld[pddl]`` and
    builds ``fast-downward-textworld``: a C++ compiler, ``cmake`` and ``make``), then
    ``alfworld-download`` and ``ALFWORLD_DATA`` set to the folder it filled. Without them,
    ``gym.make`` raises ``ALFWorldNotInstalled`` saying which is missing. ``data_dir=`` overrides
    ``ALFWORLD_DATA``.

Notes:
    The oracle is ALFWorld's planner expert: TextWorld's ``policy_commands``, which the PDDL engine
    replans (with Fast Downward) from the current state, so it recovers from any detour. Snapshots
    restore by replay (the PDDL engine's state has no save format).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar

from gymnasium.error import DependencyNotInstalled

from budgetgym.core import Action, Outcome, Task, TaskSet, TextEnv, ToolCall, full_budget
from budgetgym.core.tools import tool_map
from budgetgym.envs.navigation.tools.command import TOOL as COMMAND

DATA_SUBDIR = "json_2.1.1"
SPLITS = ("train", "valid_seen", "valid_unseen")
_WELCOME = re.compile(r"^-= Welcome to TextWorld, ALFRED! =-\s*")
INSTALL = ("pip install alfworld (it builds fast-downward-textworld: needs a C++ compiler, cmake and make), "
           "then run alfworld-download and set ALFWORLD_DATA to the folder it filled")


class ALFWorldNotInstalled(DependencyNotInstalled, ImportError):
    """ALFWorld, its PDDL planner or its data is missing: the message says which, and what to do."""


def _require(data_dir: str | None) -> Path:
    try:
        import alfworld  # noqa: F401
    except ImportError as err:
        raise ALFWorldNotInstalled(f"budgetgym/ALFWorld-v0 needs ALFWorld: {INSTALL} ({err})") from err
    try:
        import fast_downward  # noqa: F401
    except ImportError as err:
        raise ALFWorldNotInstalled(
            "budgetgym/ALFWorld-v0 needs TextWorld's PDDL engine: pip install 'textworld[pddl]' (it builds "
            f"fast-downward-textworld: a C++ compiler, cmake and make) ({err})") from err
    folder = data_dir or os.environ.get("ALFWORLD_DATA")
    if not folder:
        raise ALFWorldNotInstalled(f"budgetgym/ALFWorld-v0 needs ALFWorld's games: {INSTALL}; ALFWORLD_DATA is not set")
    root = Path(os.path.expandvars(folder)).expanduser() / DATA_SUBDIR
    if not root.is_dir():
        raise ALFWorldNotInstalled(f"budgetgym/ALFWorld-v0: no {DATA_SUBDIR} folder in ALFWORLD_DATA={folder}; "
                                   f"run alfworld-download (or point ALFWORLD_DATA at the folder it filled)")
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
        raise ALFWorldNotInstalled(f"budgetgym/ALFWorld-v0: no solvable games under {root}; run alfworld-download")
    return TaskSet(records)


class ALFWorldEnv(TextEnv):
    """ALFWorld's text games (see the module docstring)."""

    family = "alfworld"
    instructions: ClassVar[str] = (
        "You are in a household text game. Send one command a turn, such as 'go to countertop 1', "
        "'take mug 1 from countertop 1', 'open fridge 1', 'clean mug 1 with sinkbasin 1', 'heat egg 1 with "
        "microwave 1', 'put mug 1 in/on coffeemachine 1', 'use desklamp 1' or 'look'. The opening text states "
        "your task; the commands the game accepts now are listed as admissible actions.")
    exploit_upstream = "ALFWorld's own goal check (the PDDL goal of the game) decides success"

    def __init__(self, split: str | None = None, task_ids: list[str] | None = None, tasks: TaskSet | None = None,
                 reward_mode: str = "sparse", render_mode: str | None = None, data_dir: str | None = None) -> None:
        root = _require(data_dir)
        super().__init__(split=split, task_ids=task_ids, tasks=tasks if tasks is not None else load_games(root),
                         reward_mode=reward_mode, render_mode=render_mode)
        self.tools = tool_map(COMMAND)
        self._game: Any = None
        self._game_file: str | None = None
        self._state: Any = None

    def _load_task(self, task: Task, seed: int) -> str:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        if self._game_file != task["game_file"]:
            self._close_game()
            infos = textworld.EnvInfos(won=True, admissible_commands=True, policy_commands=True)
            self._game = textworld.start(task["game_file"], request_infos=infos,
                                         wrappers=[AlfredDemangler(shuffle=False), AlfredInfos])
            self._game_file = task["game_file"]
        self._state = self._game.reset()
        return _WELCOME.sub("", self._state.feedback).strip()

    def send(self, command: str) -> str:
        """One command to the game; its feedback (the ``command`` tool's body)."""
        self._state, _, _ = self._game.step(command.strip())
        return self._state.feedback.strip() or "Nothing happens."

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
        policy = self._state["policy_commands"] if self._state is not None else None
        return Action((ToolCall("command", {"command": policy[0]}),)) if policy else None

    def _render_oracle(self, action: Action) -> str:
        return action.calls[0].arguments["command"]

    def admissible_actions(self) -> list[str] | None:
        return None if self._state is None else list(self._state["admissible_commands"])

    def _close_game(self) -> None:
        game, self._game, self._game_file = self._game, None, None
        if game is not None:
            game.close()

    def _teardown(self) -> None:
        self._close_game()
        self._state = None
