"""The shipped games: unpacking the gzipped stories and loading TextWorld's game records, once per process.

A story (``<id>.z8.gz``) is unpacked into a private temporary folder the first time a process plays
it (Jericho reads stories from a path) and removed at exit. Game records share one parsed knowledge
base: every game of the set carries the same one, and parsing it is most of a record's load time.

Envs in several threads (the threads executor) load games at once: TextWorld's logic parser is one
per process and not thread-safe (two parses at once fail with garbled parse errors), so loading a
game, and building an engine from it (``TEXTWORLD_LOCK``), takes turns. Playing does not parse.
"""

from __future__ import annotations

import atexit
import functools
import gzip
import hashlib
import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from budgetgym.core.extras import MissingExtra
from budgetgym.core.tasks import ASSETS

GAMES_DIR = ASSETS / "navigation" / "games"
_UNPACKED: dict[str, str] = {}
_TMP: list[str] = []
TEXTWORLD_LOCK = threading.RLock()
"""Held while TextWorld parses (loading a game record, building an engine) and while a story is
unpacked: both are process-wide and must not run in two threads at once."""


BACKEND_MODULES = ("jericho", "textworld")


def require_textworld() -> None:
    """Fail with the install command unless TextWorld and Jericho are installed, without importing
    them: importing TextWorld is most of what making the env would cost (it is imported when the
    first game is loaded, at reset or ``check_backend``, where :func:`import_textworld` checks it)."""
    import importlib.util

    for name in BACKEND_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError) as err:  # a broken parent package, or a module without a spec
            found, detail = False, f"{name}: {err}"
        else:
            detail = f"no module named {name!r}"
        if not found:
            raise NavigationNotInstalled("navigation", "budgetgym/Navigation-v0", missing="TextWorld", detail=detail)


def import_textworld() -> None:
    """Import TextWorld and Jericho, or fail with the install command (an installed package that
    does not import is refused here, before a game is loaded)."""
    try:
        import jericho  # noqa: F401
        import textworld  # noqa: F401
    except ImportError as err:
        raise NavigationNotInstalled("navigation", "budgetgym/Navigation-v0", missing="TextWorld",
                                     detail=f"import failed: {err}") from err


class NavigationNotInstalled(MissingExtra):
    """TextWorld is missing: the message names the extra to install."""


def story_path(game: str, directory: Path = GAMES_DIR) -> str:
    """The path of the unpacked ``.z8`` story of ``game``."""
    packed = directory / f"{game}.z8.gz"
    key = str(packed)
    with TEXTWORLD_LOCK:
        return _unpacked(packed, key, game)


def _unpacked(packed: Path, key: str, game: str) -> str:
    if key not in _UNPACKED:
        if not packed.exists():
            raise FileNotFoundError(f"no story for game {game!r} at {packed}")
        if not _TMP:
            _TMP.append(tempfile.mkdtemp(prefix="budgetgym-nav-"))
            atexit.register(shutil.rmtree, _TMP[0], True)
        data = gzip.decompress(packed.read_bytes())
        target = Path(_TMP[0]) / f"{game}-{hashlib.sha256(data).hexdigest()[:12]}.z8"
        target.write_bytes(data)
        _UNPACKED[key] = str(target)
    return _UNPACKED[key]


@functools.lru_cache(maxsize=None)
def _knowledge_base(blob: str) -> Any:
    from textworld.generator.data import KnowledgeBase

    return KnowledgeBase.deserialize(json.loads(blob))


def load_game(game: str, directory: Path = GAMES_DIR) -> Any:
    """TextWorld's ``Game`` for ``game`` (as ``Game.load``, with the knowledge base shared), loaded
    once per process."""
    import_textworld()
    with TEXTWORLD_LOCK:
        return _load_game(game, directory)


@functools.lru_cache(maxsize=None)
def _load_game(game: str, directory: Path) -> Any:
    from textworld.generator.game import EntityInfo, Game, Quest
    from textworld.generator.text_grammar import GrammarOptions
    from textworld.generator.world import World

    path = directory / f"{game}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("version", Game._SERIAL_VERSION) != Game._SERIAL_VERSION:
        raise ValueError(f"{path}: TextWorld game version {data.get('version')}, this TextWorld reads "
                         f"{Game._SERIAL_VERSION}")
    kb = _knowledge_base(json.dumps(data["KB"], sort_keys=True))
    result = Game(World.deserialize(data["world"], kb=kb))
    result.grammar_options = GrammarOptions(data["grammar"])
    result.quests = tuple(Quest.deserialize(q) for q in data["quests"])
    result._infos = {k: EntityInfo.deserialize(v) for k, v in data["infos"]}
    result.metadata = data.get("metadata", {})
    result._objective = data.get("objective")
    return result


def forget(game: str, directory: Path = GAMES_DIR) -> None:
    """Drop this process's unpacked story and loaded record of ``game`` (the generator rewrote its
    files): the next load reads them afresh."""
    with TEXTWORLD_LOCK:
        _UNPACKED.pop(str(directory / f"{game}.z8.gz"), None)
        _load_game.cache_clear()  # per game is not offered by lru_cache; reloading a record is cheap
