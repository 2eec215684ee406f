"""The Navigation game generator: TextWorld games per tier, rebuilt from their recorded provenance
(library code; the family's data command is ``python -m budgetgym.envs.navigation.assets``).

Every game comes from TextWorld's own generator (``textworld.generator.make_game`` and
``compile_game``; the Inform 7 compiler ships in the ``textworld`` wheel, so no network is needed),
with the options of its tier (``TIERS``) and a seed.

Two steps, kept apart so the shipped set is reproducible from source:

* **Selecting** a tier's seeds (``build_games(reselect=True)``, ``--reselect``): from the tier's
  ``seed_base`` upwards, a seed whose quest the generator cannot build (or whose walkthrough is
  shorter than the tier's ``min_commands``, or whose oracle does not win it, or takes more turns
  than its ``max_oracle_turns`` or than its walkthrough) is skipped, and the tier is the first
  ``per_tier`` (or the tier's ``games``) seeds that work. Which seeds pass depends on the oracle and
  on TextWorld, so a selection made with other code can give other games: it ships a new set.
* **Rebuilding** the shipped set (the default): ``manifest.json`` (``MANIFEST_PATH``) records, per
  tier, the options, the selection's parameters, the TextWorld version and each game's seed and
  content hashes (``game_hashes``); every game is built again from its recorded seed and must give
  the recorded hashes, or the build stops (:class:`ProvenanceMismatch`) before writing anything
  that differs. ``build_games(only=ID)`` rebuilds one game so.

The xlong tier is why the two differ: its seeds were selected when the oracle was TextWorld's
per-quest policies alone, which took more turns than the walkthrough on seeds 5000, 5002 and 5007
(40, 34 and 40 against 33, 28 and 38), so the filter skipped them; the oracle has since followed
the walkthrough where it is shorter, so a selection today keeps those seeds, drops 5009, 5012 and
5014, and every xlong id names another game. The games each seed gives are unchanged.

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
import hashlib
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from budgetgym.core.tasks import ASSETS

GAMES_DIR = ASSETS / "navigation" / "games"
TASKS_PATH = ASSETS / "navigation" / "tasks.jsonl"
MANIFEST_PATH = ASSETS / "navigation" / "manifest.json"
"""Each tier's recorded provenance: what rebuilds its shipped games (see :func:`tier_manifest`)."""
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

    def options(self) -> dict[str, Any]:
        """The generator's options for this tier's games (a seed's game depends on these alone)."""
        return {"rooms": self.rooms, "objects": self.objects, "quest_length": self.quest_length,
                "quests": self.quests, "only_last_action": self.only_last_action, "include_adj": self.include_adj}

    def selection(self) -> dict[str, Any]:
        """What chose the tier's seeds when it was selected (which seeds, not what a seed gives)."""
        return {"seed_base": self.seed_base, "min_commands": self.min_commands,
                "max_oracle_turns": self.max_oracle_turns}


TIERS: tuple[Tier, ...] = (
    Tier("easy", 1000, rooms=3, objects=5, quest_length=3, quests=1, only_last_action=False, include_adj=False),
    Tier("medium", 2000, rooms=6, objects=12, quest_length=4, quests=2, only_last_action=False, include_adj=True),
    Tier("hard", 3000, rooms=10, objects=20, quest_length=5, quests=2, only_last_action=True, include_adj=True),
    # Long horizons: four parallel quests across twelve rooms, 15-40 commands (full budgets 30-80).
    Tier("long", 4000, rooms=12, objects=24, quest_length=5, quests=4, only_last_action=False, include_adj=True,
         games=7, min_commands=15),
    # Longer still: five 8-action quests across sixteen rooms, oracles of 26-40 (full budgets 52-80).
    # Shipped from seeds 5001, 5004, 5005, 5009, 5012 and 5014 (manifest.json); a selection with
    # today's oracle would keep 5000, 5002 and 5007 too (the module docstring says why).
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
        "generator": {"seed": seed, **tier.options(), "textworld": textworld.__version__},
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


# ------------------------------------------------------------------ provenance


def game_hashes(game: str, directory: Path = GAMES_DIR) -> dict[str, str]:
    """The content hashes of ``game``'s files in ``directory``: SHA-256 of the unpacked story (the
    gzip around it may differ between zlib builds) and of the record."""
    story = gzip.decompress((directory / f"{game}.z8.gz").read_bytes())
    record = (directory / f"{game}.json").read_bytes()
    return {"story_sha256": hashlib.sha256(story).hexdigest(), "record_sha256": hashlib.sha256(record).hexdigest()}


def tier_manifest(tier: Tier, records: Sequence[dict], directory: Path = GAMES_DIR) -> dict[str, Any]:
    """The provenance of ``tier``'s games (``records`` in index order, their files in ``directory``):
    the generator's options and the TextWorld version (with a game's seed, all that rebuilds it),
    how the seeds were selected, and each game's seed and content hashes (:func:`game_hashes`)."""
    versions = sorted({record["generator"]["textworld"] for record in records})
    if len(versions) != 1:
        raise ValueError(f"tier {tier.name!r}: its games were built by TextWorld {versions}, not one version")
    return {"options": tier.options(), "textworld": versions[0], "selection": tier.selection(),
            "games": [{"id": record["id"], "seed": record["generator"]["seed"],
                       **game_hashes(record["game"], directory)} for record in records]}


def read_manifest(path: Path = MANIFEST_PATH) -> dict[str, dict[str, Any]]:
    """The recorded provenance of every shipped tier, by tier name (empty where none is recorded)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


class ProvenanceMismatch(RuntimeError):
    """A game built from its tier's recorded provenance is not the game the manifest records."""


def rebuild_game(game: str, out: Path, manifest: dict[str, dict[str, Any]] | None = None) -> dict:
    """Build shipped ``game`` again from its recorded seed and options into ``out`` (its ``.z8.gz``
    and ``.json``; TextWorld's side files in ``out / "work"``); return its draft task record.

    Raises :class:`ProvenanceMismatch`, saying what differs, where the tier's options in ``TIERS``
    are not the recorded ones, where the seed no longer gives a game of the tier, or where the built
    files' content hashes are not the recorded ones (naming the recorded and the installed
    TextWorld). Nothing outside ``out`` is written."""
    import textworld

    manifest = read_manifest(MANIFEST_PATH) if manifest is None else manifest
    found = [(name, entry, index) for name, entry in manifest.items()
             for index, recorded in enumerate(entry["games"]) if recorded["id"] == game]
    if not found:
        raise ValueError(f"no game {game!r} in the manifest ({MANIFEST_PATH.name})")
    name, entry, index = found[0]
    tier = next((tier for tier in TIERS if tier.name == name), None)
    if tier is None or game != game_id(name, index):
        raise ProvenanceMismatch(f"{game}: the manifest's tier {name!r} is not a tier of TIERS, "
                                 "or lists it out of order")
    if entry["options"] != tier.options():
        raise ProvenanceMismatch(f"{game}: tier {name!r} was built with options {entry['options']}, TIERS now "
                                 f"says {tier.options()}; reselect the tier to ship games of the new options")
    seed = entry["games"][index]["seed"]
    versions = f"TextWorld {entry['textworld']} built it, {textworld.__version__} is installed"
    record = build_game(tier, index, seed, out / "work", out=out)
    if record is None:
        raise ProvenanceMismatch(f"{game}: seed {seed} no longer gives a game of tier {name!r} ({versions})")
    differ = [key.removesuffix("_sha256") for key, value in game_hashes(game, out).items()
              if value != entry["games"][index][key]]
    if differ:
        raise ProvenanceMismatch(f"{game}: seed {seed} now builds a different {' and '.join(differ)} ({versions})")
    return record


def _install(game: str, built: Path) -> None:
    """Put ``game``'s verified files from ``built`` into ``GAMES_DIR``, where the shipped ones are
    missing or differ in content (equal ones are left as they are), and make the env read them."""
    from budgetgym.envs.navigation.games import forget

    try:
        same = game_hashes(game) == game_hashes(game, built)
    except (OSError, EOFError):  # a shipped file missing or corrupt (gzip raises both)
        same = False
    if not same:
        GAMES_DIR.mkdir(parents=True, exist_ok=True)
        for name in (f"{game}.z8.gz", f"{game}.json"):
            shutil.copyfile(built / name, GAMES_DIR / name)
    forget(game)


def build_games(per_tier: int = PER_TIER, only: str | None = None, tasks_only: bool = False,
                tiers: Sequence[str] | None = None, reselect: bool = False) -> list[dict]:
    """The finished task records of the game set, the games written to ``GAMES_DIR`` on the way.

    ``tiers`` (all when None) are rebuilt from their provenance in ``MANIFEST_PATH``
    (:func:`rebuild_game`: the shipped games again, or :class:`ProvenanceMismatch` before a
    differing file is written) and the other tiers' shipped records kept. With ``reselect`` their
    seeds are selected afresh from each ``seed_base`` (``per_tier`` games, or the tier's
    ``games``) and their new provenance written to the manifest: a new set of games wherever the
    oracle or TextWorld now selects other seeds. ``only`` rebuilds one game from the manifest,
    ``tasks_only`` none (the records are recomputed from the shipped games)."""
    from budgetgym.core.jsonl import read_jsonl, write_text
    from budgetgym.envs.navigation.games import forget

    existing = {r["id"]: r for r in read_jsonl(TASKS_PATH)} if TASKS_PATH.exists() else {}
    manifest = read_manifest(MANIFEST_PATH)
    unknown = set(tiers or ()) - {tier.name for tier in TIERS}
    if unknown:
        raise ValueError(f"no tier {sorted(unknown)}; the tiers are {[tier.name for tier in TIERS]}")
    if only is not None and only not in existing:
        raise ValueError(f"no shipped game {only!r} to rebuild")
    if reselect and (only is not None or tasks_only):
        raise ValueError("reselect selects whole tiers' seeds: not with only or tasks_only")
    to_build = [tier for tier in TIERS if (tiers is None or tier.name in tiers) and only is None and not tasks_only]
    unrecorded = [tier.name for tier in to_build if tier.name not in manifest]
    if unrecorded and not reselect:
        raise ValueError(f"tiers {unrecorded} have no recorded provenance in {MANIFEST_PATH.name}; "
                         "select their seeds with reselect (--reselect)")
    records: dict[str, dict] = {}
    selected: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="budgetgym-navgen-") as tmp:
        work = Path(tmp)
        for tier in TIERS:
            if tier not in to_build:
                for gid, rec in existing.items():
                    if rec["tier"] != tier.name:
                        continue
                    if only == gid:
                        rec = rebuild_game(gid, work / gid, manifest)
                        _install(gid, work / gid)
                    records[gid] = finish_record(rec)
                continue
            if not reselect:
                for recorded in manifest[tier.name]["games"]:
                    gid = recorded["id"]
                    rec = rebuild_game(gid, work / gid, manifest)
                    _install(gid, work / gid)
                    records[gid] = finish_record(rec)
                    print(f"{gid}: seed {recorded['seed']}, as recorded", file=sys.stderr, flush=True)
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
            selected[tier.name] = tier_manifest(tier, [r for r in records.values() if r["tier"] == tier.name])
    if selected:
        merged = {**manifest, **selected}
        ordered = {tier.name: merged[tier.name] for tier in TIERS if tier.name in merged}
        write_text(MANIFEST_PATH, json.dumps(ordered, indent=1) + "\n")
    return list(records.values())  # in the order of TIERS, then index
