"""The Navigation game generator: TextWorld games per tier from recorded seeds (library code; the
family's data command is ``python -m budgetgym.envs.navigation.assets``).

Every game comes from TextWorld's own generator (``textworld.generator.make_game`` and
``compile_game``; the Inform 7 compiler ships in the ``textworld`` wheel, so no network is needed),
with the options of its tier (``TIERS``) and a recorded seed. A seed whose quest the generator
cannot build (or whose walkthrough is shorter than the tier's ``min_commands``, or whose oracle
does not win it, or takes more turns than its ``max_oracle_turns`` or than its walkthrough) is
skipped, so the set is the first ``per_tier`` (or the tier's ``games``) seeds from each tier's base
that work; the seed of every game is recorded in its task record, and ``build_games(only=ID)``
rebuilds one game.

Shipped per game, in ``budgetgym/assets/navigation/games/``:

* ``<id>.z8.gz``: the compiled Z-machine story, gzipped (a story is ~390 KB, ~140 KB gzipped);
  the env unpacks it once per process into a temporary folder. The Inform compiler writes the day
  it ran into the story's header as its serial number (bytes 0x12-0x17, ``YYMMDD``, outside the
  checksummed part), the one byte of a story that depends on the build; every story gets
  ``STORY_SERIAL`` there instead, so a rebuild on any day gives the same bytes;
* ``<id>.json``: TextWorld's game record (world, quests, grammar, knowledge base), which TextWorld's
  state tracking needs for admissible commands, scores and the winning policy. TextWorld writes
  into it the folder its grammar files are installed in, a path of the machine that built the game;
  the shipped record names TextWorld's own folder instead (``GRAMMARS_PATH``), so a rebuild on any
  machine gives the same bytes.

The Inform 7 source and TextWorld's other side files are not needed to play and are not shipped.
``tasks.jsonl`` gets one record a game, with the full budget from the oracle's turn count (the
walkthrough played through the env to a win, which the generator checks).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from budgetgym.core.tasks import ASSETS

GAMES_DIR = ASSETS / "navigation" / "games"
TASKS_PATH = ASSETS / "navigation" / "tasks.jsonl"
#: ``KB.text_grammars_path`` in the shipped records: the grammar folder inside the textworld package,
#: wherever it is installed. Only generating a game reads the grammars; playing one never does.
GRAMMARS_PATH = "<textworld>/generator/data/text_grammars"
STORY_SERIAL = b"261130"
"""The serial number of every shipped story: the day the set was first built (the compiler would
write the day of each build)."""
_SERIAL = slice(0x12, 0x18)  # the header's serial number


@dataclass(frozen=True)
class Tier:
    name: str
    seed_base: int
    rooms: int
    objects: int              # at least this many objects; the rest beyond the quest's are distractors
    quest_length: int         # actions per quest
    quests: int               # parallel quests, each worth one point (progress = score / max score)
    only_last_action: bool    # the objective names only each quest's last action: the agent must explore
    include_adj: bool         # adjectives in names ("rusty key"), so distractors look alike
    games: int | None = None  # games in the tier (None: ``PER_TIER``)
    min_commands: int = 0     # a seed whose walkthrough is shorter is skipped (parallel quests may share steps)
    max_oracle_turns: int | None = None  # a seed whose oracle takes more turns, or more than its walkthrough, is skipped


TIERS: tuple[Tier, ...] = (
    Tier("easy", 1000, rooms=3, objects=5, quest_length=3, quests=1, only_last_action=False, include_adj=False),
    Tier("medium", 2000, rooms=6, objects=12, quest_length=4, quests=2, only_last_action=False, include_adj=True),
    Tier("hard", 3000, rooms=10, objects=20, quest_length=5, quests=2, only_last_action=True, include_adj=True),
    # Long horizons: four parallel quests across twelve rooms, 15-40 commands (full budgets 30-80).
    Tier("long", 4000, rooms=12, objects=24, quest_length=5, quests=4, only_last_action=False, include_adj=True,
         games=7, min_commands=15),
    # Longer still: five 8-action quests across sixteen rooms, oracles of 30-40 (full budgets 60-80).
    Tier("xlong", 5000, rooms=16, objects=30, quest_length=8, quests=5, only_last_action=False, include_adj=True,
         games=6, min_commands=26, max_oracle_turns=40),
)
PER_TIER = 22
TEST_EVERY = 3  # every third game of a tier is in the test split


def game_id(tier: str, index: int) -> str:
    return f"nav-{tier}-{index:03d}"


def _options(tier: Tier, seed: int, path: Path):
    import textworld

    options = textworld.GameOptions()
    options.seeds = seed
    options.nb_rooms = tier.rooms
    options.nb_objects = tier.objects
    options.quest_length = tier.quest_length
    options.quest_breadth = 1
    options.nb_parallel_quests = tier.quests
    options.grammar.only_last_action = tier.only_last_action
    options.grammar.include_adj = tier.include_adj
    options.path = str(path)
    options.force_recompile = True
    return options


def neutral_record(text: str) -> str:
    """TextWorld's game record (the JSON ``Game.save`` writes) with ``GRAMMARS_PATH`` for the grammar
    folder; every other byte stays as TextWorld wrote it."""
    data = json.loads(text)
    data["KB"]["text_grammars_path"] = GRAMMARS_PATH
    return json.dumps(data)


def fixed_serial(story: bytes) -> bytes:
    """The compiled ``story`` with ``STORY_SERIAL`` as its serial number (the header's bytes
    0x12-0x17, which the Z-machine's checksum does not cover)."""
    if len(story) < 0x40 or not story[_SERIAL].isdigit():
        raise ValueError("not a Z-machine story with an Inform serial number")
    return story[:_SERIAL.start] + STORY_SERIAL + story[_SERIAL.stop:]


def build_game(tier: Tier, index: int, seed: int, workdir: Path, out: Path = GAMES_DIR) -> dict | None:
    """Generate, compile and ship one game into ``out``; return its draft task record (None if the
    seed gives no quest of the tier's length)."""
    import textworld
    from textworld.generator import compile_game, make_game
    from textworld.generator.chaining import QuestGenerationError

    gid = game_id(tier.name, index)
    options = _options(tier, seed, workdir / f"{gid}.z8")
    try:
        game = make_game(options)
    except QuestGenerationError:
        return None
    walkthrough = list(game.metadata.get("walkthrough") or game.walkthrough or [])
    if len(walkthrough) < max(tier.quest_length, tier.min_commands) or game.max_score != tier.quests:
        return None
    story = Path(compile_game(game, options))
    out.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(out / f"{gid}.z8.gz", "wb", mtime=0) as dst:
        dst.write(fixed_serial(story.read_bytes()))
    (out / f"{gid}.json").write_text(neutral_record(story.with_suffix(".json").read_text(encoding="utf-8")),
                                     encoding="utf-8")
    return {
        "id": gid,
        "split": "test" if index % TEST_EVERY == TEST_EVERY - 1 else "train",
        "tier": tier.name,
        "game": gid,
        "generator": {"seed": seed, "rooms": tier.rooms, "objects": tier.objects, "quest_length": tier.quest_length,
                      "quests": tier.quests, "only_last_action": tier.only_last_action,
                      "include_adj": tier.include_adj, "textworld": textworld.__version__},
        "objective": game.objective,
        "walkthrough": walkthrough,
        "max_score": game.max_score,
    }


class UnwinnableGame(RuntimeError):
    """The oracle, played through the env, does not win a generated game."""


def finish_record(record: dict) -> dict:
    """Play the oracle through the env to a win; the full budget follows from its turn count.

    Raises :class:`UnwinnableGame` where it does not: TextWorld's generator can write a walkthrough
    its own parser cannot follow (``take latchkey from box`` in a room with a ``box`` and a ``type P
    box`` only asks which box is meant), and the build skips such a seed."""
    from budgetgym.core.budgets import full_budget
    from budgetgym.core.rollout import rollout
    from budgetgym.core.tasks import TaskSet
    from budgetgym.envs.navigation.env import NavigationEnv

    draft = dict(record, max_turns=10 * len(record["walkthrough"]) + 10,
                 instruction=record["objective"], oracle_turns=len(record["walkthrough"]))
    env = NavigationEnv(tasks=TaskSet([draft]))
    try:
        played = rollout(env, "oracle", seed=0, options={"task_id": record["id"]})
        if not played.success:
            raise UnwinnableGame(f"{record['id']}: the oracle did not win the game")
    finally:
        env.close()
    return dict(draft, oracle_turns=played.turns, max_turns=full_budget(played.turns))


def build_games(per_tier: int = PER_TIER, only: str | None = None, tasks_only: bool = False,
                tiers: Sequence[str] | None = None) -> list[dict]:
    """The finished task records of the game set, the games written to ``GAMES_DIR`` on the way.

    ``tiers`` builds those tiers afresh and keeps the other tiers' shipped records (all when None);
    ``only`` rebuilds one game from its recorded seed, ``tasks_only`` none (the records are
    recomputed from the shipped games)."""
    from budgetgym.core.jsonl import read_jsonl
    from budgetgym.envs.navigation.games import forget

    existing = {r["id"]: r for r in read_jsonl(TASKS_PATH)} if TASKS_PATH.exists() else {}
    unknown = set(tiers or ()) - {tier.name for tier in TIERS}
    if unknown:
        raise ValueError(f"no tier {sorted(unknown)}; the tiers are {[tier.name for tier in TIERS]}")
    if only is not None and only not in existing:
        raise ValueError(f"no shipped game {only!r} to rebuild")
    records: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="budgetgym-navgen-") as tmp:
        work = Path(tmp)
        for tier in TIERS:
            if tasks_only or only or (tiers is not None and tier.name not in tiers):
                for gid, rec in existing.items():
                    if rec["tier"] != tier.name:
                        continue
                    if only == gid:
                        rec = build_game(tier, int(gid.rsplit("-", 1)[1]), rec["generator"]["seed"], work)
                    records[gid] = finish_record(rec)
                continue
            seed, index = tier.seed_base, 0
            while index < (tier.games or per_tier):
                started = time.time()
                record = build_game(tier, index, seed, work)
                seed += 1
                if record is None:
                    continue
                try:
                    finished = finish_record(record)
                except UnwinnableGame:  # e.g. the walkthrough names an object the parser finds ambiguous
                    continue
                finally:
                    forget(record["game"])  # the next seed of this index writes the game's files again
                if tier.max_oracle_turns is not None:
                    # ``1x`` is the oracle's turns: no longer than TextWorld's own solution, nor the tier's cap.
                    if finished["oracle_turns"] > min(tier.max_oracle_turns, len(record["walkthrough"])):
                        continue
                records[record["id"]] = finished
                print(f"{record['id']}: seed {record['generator']['seed']}, {len(record['walkthrough'])} steps, "
                      f"{time.time() - started:.1f}s", file=sys.stderr, flush=True)
                index += 1
    return list(records.values())  # in the order of TIERS, then index
