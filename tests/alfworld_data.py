"""Small ALFWorld-format games, written from the domain and grammar files the ``alfworld`` wheel ships.

ALFWorld's own games are a download; the tests write their own instead: six household scenes in
ALFWorld's three splits (four in ``train``, one each in ``valid_seen`` and ``valid_unseen``), each a
pick-and-place task with a distractor object, two of them behind a closed receptacle. Object names
follow ALFRED's mangled form (``Mug_bar__plus_01_dot_00...``), which ALFWorld's demangler turns into
``mug 1``. ``write_alfworld_data`` lays them out as ``alfworld-download`` does; ``conftest.py`` points
``ALFWORLD_DATA`` at such a folder for the whole run, so the contract tests play these games.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


def _mangled(kind: str, index: int) -> str:
    """An ALFRED object name: the type and a position (``Mug_bar__plus_01_dot_00_bar_...``)."""
    return f"{kind}_bar__plus_0{index}_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_1{index}"


@dataclass(frozen=True)
class Game:
    """One pick-and-place game: move ``target`` (found in ``source``) into a receptacle of ``goal_type``."""

    folder: str  # relative to json_2.1.1: <split>/<task type>-<object>-None-<receptacle>-<scene>/<trial>
    target: str  # the object type to move
    source: str  # the receptacle type it starts in
    goal_type: str  # the receptacle type it must end in
    distractor: str  # another object type, left where it is
    closed: frozenset[str]  # receptacle types that start closed
    goal_text: str
    walkthrough: tuple[str, ...]

    @property
    def receptacles(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.source, self.goal_type, "Cabinet")))

    def problem(self) -> str:
        target, distractor = _mangled(self.target, 1), _mangled(self.distractor, 2)
        places = {kind: _mangled(kind, 3 + i) for i, kind in enumerate(self.receptacles)}
        locations = [f"loc_bar_{i}_bar_0_bar_0_bar_0" for i in range(len(places) + 1)]
        objects = [f"agent1 - agent", f"{target} - object", f"{distractor} - object",
                   *(f"{name} - receptacle" for name in places.values()),
                   *(f"{loc} - location" for loc in locations),
                   *(f"{kind}Type - otype" for kind in dict.fromkeys((self.target, self.distractor))),
                   *(f"{kind}Type - rtype" for kind in places)]
        init = ["(= (total-cost) 0)", f"(atLocation agent1 {locations[0]})"]
        for i, (kind, name) in enumerate(places.items(), start=1):
            init += [f"(receptacleAtLocation {name} {locations[i]})", f"(receptacleType {name} {kind}Type)"]
            if kind in self.closed:
                init.append(f"(openable {name})")
            for item in (self.target, self.distractor):
                init.append(f"(canContain {kind}Type {item}Type)")
        source_location = locations[1 + self.receptacles.index(self.source)]
        for name, kind in ((target, self.target), (distractor, self.distractor)):
            init += [f"(inReceptacle {name} {places[self.source]})", f"(objectAtLocation {name} {source_location})",
                     f"(pickupable {name})", f"(objectType {name} {kind}Type)"]
        goal = (f"(exists (?r - receptacle) (and (inReceptacle {target} ?r) "
                f"(receptacleType ?r {self.goal_type}Type)))")
        lines = "\n".join(objects), "\n".join(init)
        return (f"(define (problem plan_{self.folder.rsplit('/', 1)[-1]})\n(:domain alfred)\n"
                f"(:objects\n{lines[0]}\n)\n(:init\n{lines[1]}\n)\n(:goal (and {goal}))\n"
                f"(:metric minimize (total-cost))\n)\n")


GAMES = (
    Game("train/pick_and_place_simple-Mug-None-Shelf-1/trial_budgetgym_1", "Mug", "CounterTop", "Shelf",
         "Apple", frozenset({"Cabinet"}), "put a mug in shelf",
         ("go to countertop 1", "take mug 1 from countertop 1", "go to shelf 1", "move mug 1 to shelf 1")),
    Game("train/pick_and_place_simple-Apple-None-Fridge-2/trial_budgetgym_2", "Apple", "CounterTop", "Fridge",
         "Mug", frozenset({"Fridge", "Cabinet"}), "put an apple in fridge",
         ("go to countertop 1", "take apple 1 from countertop 1", "go to fridge 1", "open fridge 1",
          "move apple 1 to fridge 1")),
    Game("train/pick_and_place_simple-KeyChain-None-Drawer-3/trial_budgetgym_3", "KeyChain", "Cabinet", "Drawer",
         "Pen", frozenset({"Cabinet"}), "put a keychain in drawer",
         ("go to cabinet 1", "open cabinet 1", "take keychain 1 from cabinet 1", "go to drawer 1",
          "move keychain 1 to drawer 1")),
    Game("train/pick_and_place_simple-Book-None-Desk-4/trial_budgetgym_4", "Book", "Shelf", "Desk",
         "Pencil", frozenset({"Cabinet"}), "put a book in desk",
         ("go to shelf 1", "take book 1 from shelf 1", "go to desk 1", "move book 1 to desk 1")),
    Game("valid_seen/pick_and_place_simple-Pen-None-Drawer-5/trial_budgetgym_5", "Pen", "Desk", "Drawer",
         "Book", frozenset({"Drawer", "Cabinet"}), "put a pen in drawer",
         ("go to desk 1", "take pen 1 from desk 1", "go to drawer 1", "open drawer 1", "move pen 1 to drawer 1")),
    Game("valid_unseen/pick_and_place_simple-Cup-None-SideTable-6/trial_budgetgym_6", "Cup", "DiningTable",
         "SideTable", "Bowl", frozenset({"Cabinet"}), "put a cup in sidetable",
         ("go to diningtable 1", "take cup 1 from diningtable 1", "go to sidetable 1",
          "move cup 1 to sidetable 1")),
)
GAME_DIR = GAMES[0].folder
WALKTHROUGH = list(GAMES[0].walkthrough)


def write_alfworld_data(root: Path, games: tuple[Game, ...] = GAMES) -> Path:
    """Write ``games`` under ``root/json_2.1.1/...`` (as ``alfworld-download`` lays games out); return ``root``."""
    import alfworld

    shipped = Path(alfworld.__file__).parent / "data"
    domain = (shipped / "alfred.pddl").read_text(encoding="utf-8")
    grammar = (shipped / "alfred.twl2").read_text(encoding="utf-8")
    for game in games:
        folder = root / "json_2.1.1" / game.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "game.tw-pddl").write_text(json.dumps({
            "pddl_domain": domain,
            "grammar": grammar.replace("UNKNOWN GOAL", game.goal_text),
            "pddl_problem": game.problem(),
            "solvable": True,
            "walkthrough": list(game.walkthrough),
        }), encoding="utf-8")
        (folder / "traj_data.json").write_text(json.dumps({
            "task_type": "pick_and_place_simple",
            "pddl_params": {"object_target": game.target, "parent_target": game.goal_type, "toggle_target": "",
                            "mrecep_target": "", "object_sliced": False},
            "plan": {"high_pddl": [{"discrete_action": {"action": a}} for a in
                                   ("GotoLocation", "PickupObject", "GotoLocation", "PutObject", "NoOp")]},
        }), encoding="utf-8")
    return root
