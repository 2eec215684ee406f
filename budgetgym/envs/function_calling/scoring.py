"""Scoring one user turn: the state must match the expected one on the fields that matter, and the
agent's message must answer the request: carry the facts it asked for, state none of the turn's
distractors, not bury the answer under far more values than asked for, decline exactly when the
request cannot be done, not paste the tools' raw output (a JSON object), and not refuse a request
that was carried out or can be answered. Exact and
cheap: one projection, one dict comparison, a few regular expressions; no model in the loop.

Facts are only what the request asks for (a balance, a path, a time); for an ambiguous request they
are the candidates, so a good clarifying question names them. Distractors are what a wrong or lazy
answer would state instead (the other account's balance, the other file's path, the other event's
time), recorded by the generators; the oracle's answer states none of them. Numbers are matched by
value, other facts and distractors as whole, case-insensitive words.

Why: facts matched by presence alone let an answer that pastes every tool result pass (answer
stuffing; raw or stripped of its JSON, the paste then states the other candidates the results show,
which the generators record as distractors), and a turn that checked only the state let "Sorry, I
can't do that." pass after the work was done. The exploit probe (``budgetgym probe exploits``)
measures both.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Mapping, Sequence

from budgetgym.envs.function_calling.domain import Domain

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_NUMERIC_FACT = re.compile(r"-?\d+(?:\.\d+)?")
_APOSTROPHE = "['\u2019]"
# Ways of saying "I can't do that" (or "it would fail"), so an impossible request is declined, not faked.
# Lenient on purpose: it only has to hear a decline where one is due. An apology alone ("sorry")
# is none: it says nothing about the work, and "Sorry if anything went wrong." would pass both a
# turn to decline and a turn done.
# Each pattern opens with a lookahead on the letters its alternatives start with: the engine then
# skips every other position fast (a 65,536-character answer is read in a few ms, not tens) and
# the matches are the same (tests/envs/test_function_calling.py checks it on random phrases).
_DECLINE_WORDS = re.compile(
    rf"(?=[acdinuw])\b(?:can ?not|can{_APOSTROPHE}?t|couldn{_APOSTROPHE}?t|won{_APOSTROPHE}?t be able|unable|not able|not possible"
    rf"|impossible|no (?:tool|way|option|function|ability)|don{_APOSTROPHE}?t have|do not have"
    rf"|isn{_APOSTROPHE}?t (?:possible|supported)|not supported|unavailable|not something i can|insufficient"
    rf"|not enough|(?:isn|aren|wasn){_APOSTROPHE}t enough|conflicts?|unfortunately)\b",
    re.IGNORECASE,
)
# Refusals and bad news: what a message that reports success, or gives the answer, must not say.
# Narrower than _DECLINE_WORDS ("sorry for the wait", "you don't have anything on Friday", "not enough
# for two shares" are fine in an answer).
_REFUSAL = re.compile(
    rf"(?=[cdinuw])\b(?:can ?not|can{_APOSTROPHE}?t|couldn{_APOSTROPHE}?t|could not|won{_APOSTROPHE}?t be able|unable|not able"
    rf"|wasn{_APOSTROPHE}?t able|not possible|impossible|isn{_APOSTROPHE}?t possible|not supported"
    rf"|isn{_APOSTROPHE}?t supported|unfortunately|i{_APOSTROPHE}?m afraid|no (?:tool|way|function|ability)"
    rf"|(?:don{_APOSTROPHE}?t|do not) have (?:a|an|the|any) (?:tool|way|function))\b",
    re.IGNORECASE,
)
# Reports of work done ("Done.", "Moved ...", "I've sent it"): a message that says so is no decline,
# and one on a request that changed the state which hears a decline ("sorry if anything was
# unavailable") must say so, or one hedge would pass both kinds of turn. A report is negated by a
# "not", "n't", "no", "nothing" or "never" just before it ("can't be done", "nothing was moved").
_DONE = re.compile(
    r"\b(?:done|completed?|finished|all set|successfully|i{_A}ve|i have|booked|sent|moved|deleted|created|added"
    r"|paid|transferred|bought|sold|cancell?ed|renamed|copied|updated|scheduled|saved|removed|changed|fixed"
    r"|replied|forwarded|restored|written|wrote|appended|replaced|emptied|made|set up|submitted|blocked|invited"
    r"|reserved|archived|trashed|emailed|texted|messaged|is now|are now)\b"
    .replace("{_A}", _APOSTROPHE),
    re.IGNORECASE,
)
_NEGATED = re.compile(r"(?:\b(?:not|no|nothing|never|neither|nor)\b|n['\u2019]t\b)\W*(?:\w+\W+){0,2}$", re.IGNORECASE)
# The kinds of value tool results are full of: emails, file paths, ISO dates, clock times, phone
# numbers and decimal amounts. An answer is judged by how many distinct ones it states.
# Each kind with the character any of its values holds: a kind whose character is absent from a
# message cannot match there, and leaving it out of the alternation changes no match (most answers
# hold no '@', '/', '+' or digit, and are then read at once).
_VALUE_KINDS = (
    ("@", r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # email (from the start of its run: a match
    # tried from every position inside a long word was quadratic, 30 s for a 65,536-character word)
    ("/", r"(?<![\w/.])/[\w.-]+(?:/[\w.-]+)*"),  # absolute path
    ("0", r"\b\d{4}-\d{2}-\d{2}\b"),  # ISO date
    ("0", r"\b\d{1,2}:\d{2}\b"),  # clock time
    ("+", r"\+\d[\d -]{6,}\d"),  # phone number
    ("0", r"\b\d[\d,]*\.\d+\b"),  # decimal amount ("0": any digit)
)
_DIGIT = re.compile(r"\d")
#: The kinds by name, each pattern on its own (for the values of one kind, :func:`values_of_kind`).
VALUE_KIND_NAMES = ("email", "path", "date", "time", "phone", "amount")
_KIND_PATTERNS = {name: re.compile(pattern) for name, (_, pattern) in zip(VALUE_KIND_NAMES, _VALUE_KINDS)}
#: The kinds :func:`stated_values` finds by their patterns: all but the amounts, which it counts
#: with every other number, as the fact check reads numbers (:func:`numbers_in`, wherever written).
_PATTERN_KINDS = tuple(kind for name, kind in zip(VALUE_KIND_NAMES, _VALUE_KINDS) if name != "amount")
_VALUE = re.compile("|".join(pattern for _, pattern in _PATTERN_KINDS))
#: The kinds whose digits are one value (blanked before the other numbers are counted).
_WHOLE_VALUES = re.compile("|".join(pattern for name, (_, pattern) in zip(VALUE_KIND_NAMES, _VALUE_KINDS)
                                    if name in ("date", "time", "phone")))


@functools.lru_cache(maxsize=16)
def _value_pattern(present: frozenset[str]) -> re.Pattern[str] | None:
    kinds = [pattern for needed, pattern in _PATTERN_KINDS if needed in present]
    return re.compile("|".join(kinds)) if kinds else None


#: An answer may state at most ``VALUES_PER_FACT`` x facts + ``VALUES_SLACK`` distinct values.
VALUES_PER_FACT = 3
VALUES_SLACK = 5

# What the user says, and why. None of these may itself read as a decline or a refusal, or an agent
# that repeats the user's words back would pass a turn.
STATE_WRONG = "That isn't right yet: what I asked for isn't all done, or something else was changed."
STATE_CHANGED_ON_DECLINE = "I didn't want anything changed for that request, but things have changed."
NOT_DECLINED = "Can that actually be done? Please tell me plainly."
REFUSED_DONE = ("Your message says it didn't work, but it looks done to me. Please tell me plainly how it went, "
                "without apologising for something that worked.")
REFUSED_ANSWERABLE = "Your message says there's no answer, but there is one. Please just tell me what I asked."
DISTRACTED = ("Some of what you tell me doesn't fit my question: it's about something else. Please tell me just "
              "what I asked, not every result you found.")
TOO_MUCH = "That's far more than I asked for. Please tell me just what I asked, not every result you found."
MISSING = "You haven't told me what I asked for."
PASTED = "That's the tools' raw output. Please tell me in your own words, just what I asked."

# A tool result is a JSON object: an answer holding one (``{"path": ...``) pasted raw output instead
# of answering. No reference answer, and no answer a user would want, holds one.
_RAW_RESULT = re.compile(r'\{\s*"[^"\n]{1,64}"\s*:')


#: A tool result's record (a JSON object) with at least this many fields is a paste when an answer
#: restates every one of them (one field the request neither names nor asks for among them).
RECORD_FIELDS = 3
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=4)
def numbers_in(text: str) -> frozenset[float]:
    """Every number written in ``text`` ("$1,250.00" -> 1250.0). Read once per answer however many
    facts and distractors it is checked for; without its commas every token is a valid float."""
    return frozenset(map(float, " ".join(_NUMBER.findall(text)).replace(",", "").split()))


@functools.lru_cache(maxsize=4)
def _folded(text: str) -> str:
    return text.casefold()


@functools.lru_cache(maxsize=4096)
def _word_pattern(word: str) -> re.Pattern[str]:
    # Compiled once per fact: re's own cache (512 patterns) cycles through a task set's facts.
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)


def has_fact(message: str, fact: str | list[str]) -> bool:
    """Whether ``message`` states ``fact`` (any of its alternatives when it is a list).

    A numeric fact matches any number of equal value ("1250" matches "$1,250.00"); any other fact
    matches case-insensitively as a whole token ("Sam Lee" does not match "Sam Leeds")."""
    alternatives = fact if isinstance(fact, list) else [fact]
    numbers: frozenset[float] | None = None
    for alternative in alternatives:
        if _NUMERIC_FACT.fullmatch(alternative):
            if numbers is None:
                numbers = numbers_in(message)
            if float(alternative) in numbers:
                return True
        elif alternative.casefold() in _folded(message) and _word_pattern(alternative).search(message):
            return True
    return False


def declines(message: str) -> bool:
    """Whether the message tells the user that something cannot be done (leniently: every refusal,
    and also "insufficient", "not enough", "conflicts", "unavailable", ...). An apology alone
    ("Sorry if anything went wrong.") says nothing about the work, so it is no decline."""
    return _DECLINE_WORDS.search(message) is not None or _REFUSAL.search(message) is not None


def reports_done(message: str) -> bool:
    """Whether the message reports work done ("Done.", "Moved the file", "I've sent it"), a report
    with a negation just before it aside ("that can't be done", "nothing was transferred")."""
    return any(not _NEGATED.search(message, max(0, match.start() - 40), match.start())
               for match in _DONE.finditer(message))


def refuses(message: str) -> bool:
    """Whether the message refuses or reports failure ("I can't", "unfortunately", "I'm afraid")."""
    return _REFUSAL.search(message) is not None


def stated_values(message: str) -> set[str]:
    """The distinct values the message states: its emails, paths, dates, times and phone numbers,
    and every other number that the fact check reads (as written, without a sign).

    Numbers are counted where :func:`numbers_in` reads them, whole numbers too, not only decimal
    amounts written as whole words: an amount glued to a word ("n537.50") or inside a path or an
    email states that fact all the same, and so does each number of a list. Counted as whole-word
    decimals only, every number of the tool results, glued, passed 76 of the 180 shipped turns that
    ask for numbers, and "0 1 2 ... 9999" answered every count. The digits of a date, a time or a
    phone number are that one value."""
    present = frozenset(c for c in "@/+" if c in message) | ({"0"} if _DIGIT.search(message) else set())
    pattern = _value_pattern(present)
    values = set() if pattern is None else {value.rstrip(".").lower() for value in pattern.findall(message)}
    if "0" in present:
        rest = _WHOLE_VALUES.sub(" ", message)
        values.update(text.lstrip("-") for text in _NUMBER.findall(rest))
    return values


def value_kinds(text: str) -> set[str]:
    """The kinds of value (``VALUE_KIND_NAMES``) that ``text`` is, read as a whole ("537.50": amount)."""
    return {name for name, pattern in _KIND_PATTERNS.items() if pattern.fullmatch(text.strip())}


def values_of_kind(text: str, kind: str) -> set[str]:
    """The distinct values of one kind that ``text`` states (``stated_values`` for that kind alone)."""
    return {value.rstrip(".") for value in _KIND_PATTERNS[kind].findall(text)}


def value_cap(turn: Mapping[str, Any]) -> int:
    """How many distinct values an answer to ``turn`` may state."""
    return VALUES_PER_FACT * len(turn.get("facts", ())) + VALUES_SLACK


def answer_problem(turn: Mapping[str, Any], message: str) -> str | None:
    """What the user finds wrong with ``message`` as the answer to ``turn`` (its state aside), or None.

    A turn that must be declined needs a decline. Any other turn whose request changed the state
    (``changes``) or asks for facts must not be refused: an answer that says it failed after the work
    was done, or that there is no answer when there is one, contradicts itself (a clarifying question,
    ``clarify``, may say "I can't tell which one you mean"). Then no distractor may be stated, nor
    more distinct values than the turn's cap, and every fact must be."""
    return TurnCheck(turn).answer_problem(message)


def turn_problem(domain: Domain, state: Mapping[str, Any], turn: Mapping[str, Any], message: str) -> str | None:
    """What the user finds wrong with the answer to ``turn``, or None when the turn is done."""
    return TurnCheck(turn).problem(domain, state, message)


def _matcher(fact: str | list[str]) -> tuple[frozenset[float], tuple[tuple[str, re.Pattern[str]], ...]]:
    """A fact's alternatives read once: the numeric ones as values, the others as (casefolded text, pattern)."""
    alternatives = fact if isinstance(fact, list) else [fact]
    numbers = frozenset(float(a) for a in alternatives if _NUMERIC_FACT.fullmatch(a))
    words = tuple((a.casefold(), _word_pattern(a)) for a in alternatives if not _NUMERIC_FACT.fullmatch(a))
    return numbers, words


class TurnCheck:
    """The check of one user turn (:func:`turn_problem`, :func:`answer_problem`), with the turn read
    once: its facts and distractors as values and patterns, its flags and its cap. The env keeps one
    per task and user turn; the verdicts are those of the functions above, which build one per call."""

    __slots__ = ("expected", "decline", "changes", "no_refusal", "refused", "distractors", "facts", "cap")

    def __init__(self, turn: Mapping[str, Any]) -> None:
        facts = turn.get("facts", ())
        self.expected = turn.get("expected")  # None where only the answer is checked
        self.decline = bool(turn.get("decline"))
        self.changes = bool(turn.get("changes"))
        self.no_refusal = not self.decline and bool(turn.get("changes") or (facts and not turn.get("clarify")))
        self.refused = REFUSED_DONE if turn.get("changes") else REFUSED_ANSWERABLE
        self.distractors = tuple(_matcher(d) for d in turn.get("distractors", ()))
        self.facts = tuple(_matcher(f) for f in facts)
        self.cap = value_cap(turn)

    def problem(self, domain: Domain, state: Mapping[str, Any], message: str) -> str | None:
        """What the user finds wrong with ``message`` as the answer in ``state``, or None."""
        if domain.project(state) != self.expected:
            return STATE_CHANGED_ON_DECLINE if self.decline else STATE_WRONG
        return self.answer_problem(message)

    def answer_problem(self, message: str) -> str | None:
        if self.decline:
            # One verdict a message: "Done. Sorry if anything was unavailable." reports success, and
            # "Sorry if anything went wrong." only apologises; neither declines.
            if not declines(message) or (reports_done(message) and not refuses(message)):
                return NOT_DECLINED
        elif self.no_refusal and refuses(message):
            return self.refused
        elif self.changes and declines(message) and not reports_done(message):
            # "Sorry if anything was unavailable." after the work would be heard as the decline of a
            # turn to decline: on a request carried out, a message that declines must say it is done.
            return self.refused
        if "{" in message and _RAW_RESULT.search(message):
            return PASTED
        if any(_states(message, d) for d in self.distractors):
            return DISTRACTED
        if self.facts and len(stated_values(message)) > self.cap:
            return TOO_MUCH
        if not all(_states(message, f) for f in self.facts):
            return MISSING
        return None


def _states(message: str, matcher: tuple[frozenset[float], tuple[tuple[str, re.Pattern[str]], ...]]) -> bool:
    """``has_fact`` on a prepared fact."""
    numbers, words = matcher
    if numbers and not numbers.isdisjoint(numbers_in(message)):
        return True
    if words:
        folded = _folded(message)
        return any(word in folded and pattern.search(message) for word, pattern in words)
    return False


def _add_records(value: Any, records: list[tuple[Any, ...]]) -> None:
    """Add each JSON object inside ``value`` that has at least ``RECORD_FIELDS`` scalar fields
    (strings, casefolded with white space collapsed, and numbers with a fraction, also those of its
    lists) to ``records``, as the tuple of its fields: an object's inner objects before it."""
    if isinstance(value, dict):
        fields = []
        for item in value.values():
            for leaf in (item if isinstance(item, list) else (item,)):
                if isinstance(leaf, str):
                    words = leaf.split()  # str.split's white space is the regular expression's \s
                    if words:
                        fields.append(" ".join(words).casefold())
                elif isinstance(leaf, float) and not leaf.is_integer():
                    fields.append(leaf)  # whole numbers are left out (see restates_record)
            if isinstance(item, (dict, list)):
                _add_records(item, records)
        if len(fields) >= RECORD_FIELDS:
            records.append(tuple(fields))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)):
                _add_records(item, records)


@functools.lru_cache(maxsize=1024)
def records_in(observation: str) -> tuple[tuple[Any, ...], ...]:
    """The records of an observation of tool results (one JSON result a line) that have at least
    ``RECORD_FIELDS`` fields, each as its fields (strings casefolded, white space collapsed)."""
    records: list[tuple[Any, ...]] = []
    for line in observation.splitlines():
        try:
            result = json.loads(line)
        except ValueError:
            continue
        _add_records(result, records)
    return tuple(records)


def restates_record(message: str, observations: Sequence[str], request: str, facts: Sequence[Any]) -> bool:
    """Whether ``message`` restates a whole record of the tool results (``observations``): every
    field of one, among them one that ``request`` does not name and that holds no fact. Whole
    numbers are no fields (a count, a number of shares or a line number is too short to tell where
    it came from), so an order's confirmation ("Bought 6 VTI for 1591.80.") is no record. The tools'
    output with its JSON stripped ("/notes/keys.txt ; 1 ; e5 ; Budget sync ; 2025-03-06 ; 09:30"):
    an answer says what was asked (the event's time, not its id and every other field)."""
    text = _SPACE.sub(" ", message).casefold()
    asked_text = _SPACE.sub(" ", request).casefold()
    numbers = numbers_in(message)
    for observation in observations:
        for fields in records_in(observation):
            if all((field in numbers) if isinstance(field, float) else _shown(field, text) for field in fields) and any(
                    not _asked(field, asked_text, facts) for field in fields):
                return True
    return False


def _shown(field: str, text: str) -> bool:
    return field in text and _word_pattern(field).search(text) is not None


def _asked(field: Any, request: str, facts: Sequence[Any]) -> bool:
    """Whether a record's field is one the user named or asked for."""
    if isinstance(field, float):
        return field in numbers_in(request) or any(has_fact(f"{field:g}", fact) for fact in facts)
    return _shown(field, request) or any(has_fact(field, fact) for fact in facts)
