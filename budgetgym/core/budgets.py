"""The budget vocabulary: one place that says what a budget is, in every unit and form.

Names, one per concept (the same in ``info``, episode records, reports and arguments):

* **full budget** (``info["full_budget"]``, a task record's ``max_turns``): the turns the bare env
  allows a task before it truncates. :func:`full_budget` sizes it from the oracle's turn count.
* **budget**: what a user writes for a cap, in one of the :data:`UNITS` and one of three forms:
  an int (``8``: absolute), a float in (0, 1] (``0.5``: a share of the full budget; turns only,
  the one unit in which a task has a full budget), or a string ``"1.5x"`` (a multiple of the
  task's shortest solution in that unit: the oracle's turns, tool calls or tokens).
  :func:`check_budget` and :func:`parse_budget` read it; ``BudgetMix`` draws one per episode.
* **cap** (``info["budget"]["cap"]``): a budget resolved for one task, an int in its unit
  (:func:`resolve_cap`).
* **used** (``info["budget"]["used"]``): what the episode has spent so far, in every unit
  (``{"turns", "calls", "tokens"}``) whatever unit is capped; ``remaining`` is ``cap`` minus the
  use in the capped unit, never below 0.

Units: ``turns`` (model outputs, one a step), ``calls`` (tool calls run; a message or an invalid
action runs none) and ``tokens`` (the tokens of the agent's outputs, its actions, not of the whole
context: the context depends on how a trainer renders the chat, the outputs do not). Tokens are
counted by a tokenizer the user passes, a callable from text to its tokens (a Hugging Face
tokenizer's ``encode`` fits) or to their count; the default, :func:`regex_tokens`, needs no model:
it cuts text into pieces of at most 5 characters (ASCII word characters and whitespace four at a
time, every other character alone), so no encoding of a payload (a base32 or base64 word, bits in
whitespace, CJK letters) carries more than 25.1 bits a token.

What an agent is told (``reveal``): ``"none"`` (the unannounced cap), ``"total"`` (the cap, once,
with the first observation) or ``"remaining"`` (what remains, after every observation), in the
texts of :data:`REVEAL_TEMPLATES`; :func:`read_reveal` is their one reader (the budget-aware agent
and the study's features use it). A revealed text is at most :data:`REVEAL_ROOM` characters, and the
env leaves that much room in its observation space, so a revealed observation still fits it.
"""

from __future__ import annotations

import math
import numbers
import re
import string
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence, Sized, Union

MIN_FULL_BUDGET = 6
SOLUTION_MULTIPLE = 2

#: The units a budget can be given in.
UNITS = ("turns", "calls", "tokens")
#: What the agent is told of its cap.
REVEAL_MODES = ("none", "total", "remaining")
#: The texts the budget wrappers add to observations, per unit and reveal mode (fields ``{cap}``,
#: ``{remaining}``, ``{used}``). :func:`read_reveal` reads them back.
REVEAL_TEMPLATES: Mapping[str, Mapping[str, str]] = {
    "turns": {"total": "\n\n[Turn budget: you have {cap} turns in total.]",
              "remaining": "\n\n[Turns remaining: {remaining} of {cap}]"},
    "calls": {"total": "\n\n[Tool-call budget: you have {cap} tool calls in total.]",
              "remaining": "\n\n[Tool calls remaining: {remaining} of {cap}]"},
    "tokens": {"total": "\n\n[Token budget: you have {cap} output tokens in total.]",
               "remaining": "\n\n[Output tokens remaining: {remaining} of {cap}]"},
}
#: The most characters a revealed text may take (a template formatted with 15-digit numbers must
#: fit): the room every env leaves at the end of its observation space.
REVEAL_ROOM = 160
_TEMPLATE_FIELDS = ("cap", "remaining", "used")
_LARGEST = 10**15 - 1

Tokenizer = Callable[[str], Union[Sized, int]]
# One token: an optional leading space and up to 4 ASCII word characters or one other visible
# character, else up to 4 whitespace characters (the contract is regex_tokens' docstring).
_TOKEN = re.compile(r" ?(?:[A-Za-z0-9_]{1,4}|[^\sA-Za-z0-9_])|\s{1,4}")
_MULTIPLE = re.compile(r"(\d+(?:\.\d+)?|\.\d+)x")
_FORMS = "an int >= 1, a float in (0, 1] (a share of the full budget, turns only) or a multiple of the " \
         "shortest solution such as '1.5x'"


def full_budget(oracle_turns: int) -> int:
    """The full turn budget of a task whose oracle solves it in ``oracle_turns`` turns.

    Twice the shortest known solution, so an agent has room for as many detours and repairs as
    needed steps, and never fewer than six turns, so a one-step task still leaves room to look
    around and recover. Every family's generator calls this function; a contract test checks every
    shipped task against it."""
    if not isinstance(oracle_turns, int) or isinstance(oracle_turns, bool) or oracle_turns < 1:
        raise ValueError(f"oracle_turns must be a positive int, got {oracle_turns!r}")
    return max(MIN_FULL_BUDGET, SOLUTION_MULTIPLE * oracle_turns)


def regex_tokens(text: str) -> list[str]:
    """The default tokenizer: ``text`` cut into pieces that join back into it, each of them

    * an optional single leading space and then a run of 1 to 4 ASCII word characters
      (``[A-Za-z0-9_]``: ``" retu"``, ``"rn"``) or one other character that is not whitespace
      (a punctuation mark, a non-ASCII letter, a control character: ``" ("``, ``"é"``), or
    * a run of 1 to 4 whitespace characters (any Unicode whitespace: spaces, tabs, newlines).

    A token holds at most 5 characters, and there are fewer than ``2**25.1`` distinct tokens, so
    whatever the encoding (a base32 or base64 word, bits in runs of spaces and tabs, base65536-style
    CJK letters), a text of n tokens carries at most ``25.1 * n`` bits: a payload of b bits costs at
    least ``b / 25.1`` tokens. (A BPE token carries at most log2 of its vocabulary: 15.6 bits for
    SmolLM2's 49,152.) On this project's docs, source and the oracles' actions the counts are
    1.06-1.38x those of SmolLM2's BPE tokenizer. A rule without a vocabulary cannot charge
    random-looking text more than prose, as a BPE does: a base64-encoded payload costs somewhat
    fewer tokens here than the same text written out (0.74-0.77x on three Coding fixes), where
    SmolLM2's BPE charges it 2.2-2.7x. The counts are a stand-in: for a model's own, pass its
    tokenizer (``tokenizer=`` of the budget wrappers, e.g. a Hugging Face tokenizer's ``encode``).
    """
    return _TOKEN.findall(text)


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    """The tokens of ``text`` by ``tokenizer`` (its output's length, or the count it returns); by
    default ``len(regex_tokens(text))``."""
    if tokenizer is None:
        return len(regex_tokens(text))
    tokens = tokenizer(text)
    return int(tokens) if isinstance(tokens, numbers.Integral) else len(tokens)


def check_unit(unit: Any) -> str:
    """``unit`` if it is one of :data:`UNITS`, else a ValueError that lists them."""
    if unit not in UNITS:
        raise ValueError(f"a budget's unit is one of {', '.join(UNITS)}; got {unit!r}")
    return unit


def check_reveal(reveal: Any) -> str:
    """``reveal`` if it is one of :data:`REVEAL_MODES`, else a ValueError that lists them."""
    if reveal not in REVEAL_MODES:
        raise ValueError(f"reveal must be one of {', '.join(REVEAL_MODES)}; got {reveal!r}")
    return reveal


def multiple_of(budget: str) -> float:
    """``"1.5x"`` -> 1.5: the multiple of the task's shortest solution a budget string names."""
    match = _MULTIPLE.fullmatch(budget) if isinstance(budget, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(f"a budget is {_FORMS}; a multiple is a positive number followed by x "
                         f"(e.g. '1x', '1.5x'), got {budget!r}")
    return float(match.group(1))


def check_budget(value: Any, unit: str = "turns") -> int | float | str:
    """``value`` if it is a budget in ``unit`` (see the module doc), else a ValueError saying why;
    a multiple comes back in its canonical spelling (``"1.50x"`` -> ``"1.5x"``)."""
    check_unit(unit)
    if isinstance(value, str):
        return f"{multiple_of(value):g}x"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"a budget is {_FORMS}, got {value!r}")
    if isinstance(value, numbers.Integral):
        if value < 1:
            raise ValueError(f"a budget as an int must be >= 1, got {value}")
        return int(value)
    if unit != "turns":
        raise ValueError(f"a share of the full budget ({value}) is in turns only (a task's full budget is counted "
                         f"in turns): give {unit} as an int or a multiple of the shortest solution such as '1.5x'")
    if not 0.0 < float(value) <= 1.0:
        hint = f" (for {value:g} times the shortest solution, write {value:g}x)" if float(value) > 1 else ""
        raise ValueError(f"a budget as a float is a share of the full budget and must be in (0, 1], got {value}"
                         + hint)
    return float(value)


def parse_budget(text: str, unit: str = "turns") -> int | float | str:
    """A budget written as text: ``"8"`` (eight of the unit), ``"0.5"`` (half of each task's full
    budget) or ``"1.5x"`` (one and a half times each task's shortest solution, kept as ``"1.5x"``)."""
    if not isinstance(text, str):
        raise ValueError(f"a budget written as text is a str, got {type(text).__name__}")
    stripped = text.strip().lower()
    if stripped.endswith("x"):
        return check_budget(stripped, unit)
    try:
        value: int | float = int(stripped)
    except ValueError:
        try:
            value = float(stripped)
        except ValueError:
            raise ValueError(f"a budget is {_FORMS}, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"a budget is {_FORMS}, got {text!r}")
    return check_budget(value, unit)


def as_budget(value: Any, unit: str = "turns") -> int | float | str:
    """A budget in any form, as a value or as text (``8``, ``0.5``, ``"1.5x"``, ``"8"``): the one
    reader the entry points share (wrappers, ``budgetgym.make``, adapters, the CLI, the plugin)."""
    return parse_budget(value, unit) if isinstance(value, str) else check_budget(value, unit)


def resolve_cap(budget: int | float | str, full_budget: int | None, shortest: int | None,
                unit: str = "turns") -> int:
    """The cap a budget means for one task, in ``unit``.

    Args:
        budget: a checked budget (see :func:`check_budget`).
        full_budget: the task's full budget in turns (the cap in turns never exceeds it); ignored
            for calls and tokens, which the bare env does not cap.
        shortest: the task's shortest solution in ``unit`` (the oracle's turns, calls or tokens),
            needed for a multiple; None where it is not known.

    An int is absolute (in turns never above the full budget); a share is of the full budget,
    rounded up, at least 1 (the rounding guard keeps 0.1 * 30 at 3, not 4); ``"1.5x"`` is that
    multiple of ``shortest``, rounded up, at least 1 (and in turns at most the full budget).
    """
    ceiling = full_budget if unit == "turns" else None
    if isinstance(budget, str):
        if shortest is None:
            raise ValueError(f"budget {budget!r} is in solution lengths, but the task's shortest solution in {unit} "
                             f"is not known: give the budget as an int" + (" or a share of the full budget"
                                                                        if unit == "turns" else ""))
        cap = max(1, math.ceil(round(multiple_of(budget) * shortest, 9)))
    elif isinstance(budget, numbers.Integral):
        cap = int(budget)
    else:
        if unit != "turns" or full_budget is None:
            raise ValueError(f"a share of the full budget ({budget}) is in turns only")
        cap = max(1, math.ceil(round(float(budget) * full_budget, 9)))
    return min(cap, ceiling) if ceiling is not None else cap


def describe_budget(budget: int | float | str | None, unit: str = "turns") -> str:
    """A budget in words, for messages and reports: ``8 turns``, ``0.5 of the full budget``,
    ``1.5x the shortest solution in calls``, ``the full budget`` (None)."""
    if budget is None:
        return "the full budget"
    if isinstance(budget, str):
        return f"{budget} the shortest solution" + ("" if unit == "turns" else f" in {unit}")
    if isinstance(budget, numbers.Integral):
        noun = {"turns": "turn", "calls": "tool call", "tokens": "token"}[unit]
        return f"{budget} {noun}" + ("" if budget == 1 else "s")
    return f"{float(budget):g} of the full budget"


def check_template(template: str) -> str:
    """A user's reveal template: it may use only ``{cap}``, ``{remaining}`` and ``{used}``, and its
    text must fit in :data:`REVEAL_ROOM` characters with the largest numbers."""
    if not isinstance(template, str):
        raise ValueError(f"template must be a str, got {type(template).__name__}")
    control = next((c for c in template if c < " " and c not in "\n\t" or c == "\x7f"), None)
    if control is not None:
        raise ValueError(f"template holds a control character ({control!r}): it is shown to the agent as text")
    try:
        # Only the bare names: a field's attribute or item ("{remaining.__class__}") reaches Python's internals.
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
        bad = next((field for field in fields if field not in _TEMPLATE_FIELDS), None)
        if bad is not None:
            raise KeyError(bad)
        text = template.format(**{name: _LARGEST for name in _TEMPLATE_FIELDS})
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(f"template may only use {{cap}}, {{remaining}} and {{used}}: {err!r}") from None
    if len(text) > REVEAL_ROOM:
        raise ValueError(f"template must fit in {REVEAL_ROOM} characters with 15-digit numbers, "
                         f"got {len(text)}")
    return template


def reveal_text(template: str, cap: int, used: int) -> str:
    """The revealed text for a cap and the use so far in its unit."""
    return template.format(cap=cap, remaining=max(0, cap - used), used=used)


@dataclass(frozen=True)
class Revealed:
    """What a revealed text told the agent: the unit, the cap, and what remained (None where only
    the total was said)."""

    unit: str
    cap: int
    remaining: int | None


def _pattern(template: str) -> re.Pattern[str]:
    pattern = re.escape(template.strip())
    for name in _TEMPLATE_FIELDS:
        pattern = pattern.replace(re.escape("{" + name + "}"), f"(?P<{name}>\\d+)")
    return re.compile(pattern)


_READERS = tuple((unit, mode, _pattern(text)) for unit, modes in REVEAL_TEMPLATES.items()
                 for mode, text in modes.items())


def read_reveal(observation: str) -> Revealed | None:
    """The last budget the default texts reveal in ``observation``, or None when none is shown.
    Only text is read: ``info["budget"]`` is the runner's, under ``reveal="none"`` too."""
    best: tuple[int, Revealed] | None = None
    for unit, mode, pattern in _READERS:
        for match in pattern.finditer(observation):
            found = Revealed(unit, int(match["cap"]), int(match["remaining"]) if mode == "remaining" else None)
            if best is None or match.start() >= best[0]:
                best = (match.start(), found)
    return best[1] if best is not None else None


def budget_grid(budgets: Sequence[Any], unit: str = "turns") -> tuple[int | float | str, ...]:
    """Budgets for one grid, each checked, distinct by value (``1`` is one turn and ``1.0`` the full
    budget: records and reports tell T apart by value, so they cannot both be in one grid)."""
    checked = tuple(as_budget(b, unit) for b in budgets)
    if not checked:
        raise ValueError("budgets must not be empty")
    keys = {(type(b) is str, b if isinstance(b, str) else float(b)) for b in checked}
    if len(keys) != len(checked):
        raise ValueError(f"budgets must be distinct, got {checked!r} (1 is one turn, 1.0 the full budget: "
                         "use one of them)")
    return checked
