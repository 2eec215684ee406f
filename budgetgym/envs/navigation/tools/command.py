"""command: one game action, typed into the text game (``go north``, ``take key``, ``open chest``).

A call holds one game action. Inform's parser, which reads Navigation-v0's commands, would run
several in one line (checked on the shipped games): ``take key. go north`` and ``take key then go
north`` run both, ``e, w`` both moves, ``take key and apple``, ``take key, apple``, ``take both`` and
``take all but key`` take several objects. So ``command_error`` refuses, before anything runs:

* text that is not printable ASCII without backslashes: a NUL made the Z-machine loop forever in C
  (out of any time limit's reach) or die of SIGSEGV, a line opening with a backslash is one of
  dumb-frotz's own commands, a lone surrogate cannot be encoded, and the games' words are ASCII;
* a full stop that is not the last character, a comma, and the words ``then`` (chaining) and
  ``and``, ``all``, ``both``, ``every``, ``everything``, ``each``, ``except``, ``but`` (several
  objects); no object of a shipped game is named with one (a test checks every game);
* the interpreter's meta commands, as the first word: ``save``, ``restore``, ``script``,
  ``transcript``, ``unscript``, ``noscript``, ``recording``, ``replay`` and ``verify`` read or write
  files in the host's current folder; ``quit``, ``restart``, ``undo`` and ``oops`` (``o``) step outside
  the game's turns.

Words are compared as the Z-machine compares them: lower case, cut to their first 9 letters
(``transcriptzz`` is ``transcript`` to the game). The command tool checks a call with
``command_error`` as part of its validation, so a refused command is an invalid action: the turn is
spent and nothing reaches the game. ALFWorld-v0's commands follow the same rules.
"""

from __future__ import annotations

import re
from typing import Any

from budgetgym.core import Tool
from budgetgym.core.tools import object_schema

MAX_COMMAND_BYTES = 198  # the Z-machine's input buffer (Jericho cuts longer input)
WORD_LENGTH = 9
"""Letters of a word the Z-machine's dictionary keeps (versions 5 to 8): longer words match on these."""
CHAINING_WORDS = frozenset({"then"})
MULTIPLE_OBJECT_WORDS = frozenset({"and", "all", "both", "every", "everything", "each", "except", "but"})
META_VERBS = frozenset({"save", "restore", "script", "transcript", "unscript", "noscript", "recording", "replay",
                        "verify", "quit", "q", "die", "restart", "undo", "oops", "o"})
_TEXT = re.compile(r"[ -\[\]-~]*")  # printable ASCII but the backslash
_WORD = re.compile(r"[^ .,\"]+")  # the Z-machine's words: separated by spaces, full stops, commas and quotes
_CHAINING = frozenset(w[:WORD_LENGTH] for w in CHAINING_WORDS)
_MULTIPLE = frozenset(w[:WORD_LENGTH] for w in MULTIPLE_OBJECT_WORDS)
_META = frozenset(w[:WORD_LENGTH] for w in META_VERBS)
ONE_ACTION = "one game action a command: send each action in its own turn"


def command_error(text: str) -> str | None:
    """Why the game command ``text`` is refused before it reaches the game, or None (see the module)."""
    if not _TEXT.fullmatch(text):
        bad = next(c for c in text if not _TEXT.fullmatch(c))
        what = "a backslash" if bad == "\\" else f"the character {ascii(bad)}"
        return f"the command holds {what}; game commands are printable ASCII text without backslashes"
    body = text.strip().rstrip(". ")
    if "." in body or "," in body:
        mark = "a full stop" if "." in body else "a comma"
        return f"{mark} in {text.strip()!r} makes the game's parser run several actions; {ONE_ACTION}"
    words = _WORD.findall(body)
    if words and words[0].lower()[:WORD_LENGTH] in _META:
        return (f"{words[0]!r} is a meta command of the interpreter (it saves, restores, records or leaves the game), "
                f"not a game action")
    for word in words:
        key = word.lower()[:WORD_LENGTH]
        if key in _CHAINING:
            return f"{word!r} in {text.strip()!r} chains commands; {ONE_ACTION}"
        if key in _MULTIPLE:
            return f"{word!r} in {text.strip()!r} names several objects at once; {ONE_ACTION}, one object each"
    return None


def command(env, command: str) -> str:
    """Send ``command`` to ``env``'s game; the env answers with the game's text."""
    return env.send(command)


class CommandTool(Tool):
    """The ``command`` tool: its schema, then ``command_error``, decide whether a call is valid."""

    def validation_error(self, arguments: Any) -> str | None:
        problem = super().validation_error(arguments)
        if problem is None:
            problem = command_error(arguments["command"])
        return problem

    def __reduce__(self) -> str:
        return "TOOL"  # pickled by reference: the module's one instance


TOOL = CommandTool(
    name="command",
    description="Type one game action into the text game, e.g. 'go north', 'take brass key', 'unlock door with "
                "brass key', 'put apple on table': one action and one object a command (no '.', ',', 'then', "
                "'and' or 'all'). The commands the game accepts now are in info['admissible_actions'].",
    parameters=object_schema({"command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_BYTES,
                                          "pattern": "^[^\\n\\r]*$"}}, ["command"]),
    function=command,
)
