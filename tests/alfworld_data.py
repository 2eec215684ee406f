"""A small ALFWorld-format game, written from the domain and grammar files the ``alfworld`` wheel ships.

ALFWorld's own games are a download; the tests write one of their own instead: a room with a
countertop, a shelf and a closed cabinet, a mug on the countertop, and the task "put a mug in shelf".
Object names follow ALFRED's mangled form (``Mug_bar__plus_01_dot_00...``), which ALFWorld's
demangler turns into ``mug 1``.
"""

from __future__ import annotations

import json
from pathlib import Path

MUG = "Mug_bar__plus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_10"
COUNTER = "CounterTop_bar__plus_01_dot_00_bar__plus_00_dot_95_bar__plus_00_dot_10"
SHELF = "Shelf_bar__minus_01_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_10"
CABINET = "Cabinet_bar__plus_02_dot_00_bar__plus_00_dot_90_bar__plus_00_dot_10"
GAME_DIR = "train/pick_and_place_simple-Mug-None-Shelf-1/trial_budgetgym"

PROBLEM = f"""(define (problem plan_trial_budgetgym)
(:domain alfred)
(:objects
agent1 - agent
{MUG} - object
{COUNTER} - receptacle
{SHELF} - receptacle
{CABINET} - receptacle
loc_bar_0_bar_0_bar_0_bar_0 - location
loc_bar_1_bar_0_bar_0_bar_0 - location
loc_bar_2_bar_0_bar_0_bar_0 - location
loc_bar_3_bar_0_bar_0_bar_0 - location
MugType - otype
CounterTopType - rtype
ShelfType - rtype
CabinetType - rtype
)
(:init
(= (total-cost) 0)
(atLocation agent1 loc_bar_0_bar_0_bar_0_bar_0)
(receptacleAtLocation {COUNTER} loc_bar_1_bar_0_bar_0_bar_0)
(receptacleAtLocation {SHELF} loc_bar_2_bar_0_bar_0_bar_0)
(receptacleAtLocation {CABINET} loc_bar_3_bar_0_bar_0_bar_0)
(openable {CABINET})
(receptacleType {COUNTER} CounterTopType)
(receptacleType {SHELF} ShelfType)
(receptacleType {CABINET} CabinetType)
(inReceptacle {MUG} {COUNTER})
(objectAtLocation {MUG} loc_bar_1_bar_0_bar_0_bar_0)
(pickupable {MUG})
(objectType {MUG} MugType)
(canContain CounterTopType MugType)
(canContain ShelfType MugType)
(canContain CabinetType MugType)
)
(:goal (and (exists (?r - receptacle) (and (inReceptacle {MUG} ?r) (receptacleType ?r ShelfType)))))
(:metric minimize (total-cost))
)
"""

WALKTHROUGH = ["go to countertop 1", "take mug 1 from countertop 1", "go to shelf 1", "move mug 1 to shelf 1"]


def write_alfworld_data(root: Path) -> Path:
    """Write the game under ``root/json_2.1.1/...`` (as ``alfworld-download`` lays games out); return ``root``."""
    import alfworld

    shipped = Path(alfworld.__file__).parent / "data"
    grammar = (shipped / "alfred.twl2").read_text(encoding="utf-8").replace("UNKNOWN GOAL", "put a mug in shelf")
    folder = root / "json_2.1.1" / GAME_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "game.tw-pddl").write_text(json.dumps({
        "pddl_domain": (shipped / "alfred.pddl").read_text(encoding="utf-8"),
        "grammar": grammar,
        "pddl_problem": PROBLEM,
        "solvable": True,
        "walkthrough": WALKTHROUGH,
    }), encoding="utf-8")
    (folder / "traj_data.json").write_text(json.dumps({
        "task_type": "pick_and_place_simple",
        "pddl_params": {"object_target": "Mug", "parent_target": "Shelf", "toggle_target": "",
                        "mrecep_target": "", "object_sliced": False},
        "plan": {"high_pddl": [{"discrete_action": {"action": a}} for a in
                               ("GotoLocation", "PickupObject", "GotoLocation", "PutObject", "NoOp")]},
    }), encoding="utf-8")
    return root

