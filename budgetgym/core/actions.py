"""The one action parser every budgetgym environment shares.

A model's output for one turn may hold tool calls in any of these forms:

* a JSON object ``{"name": "ls", "arguments": {"path": "/"}}`` (``arguments`` may also be a JSON
  string, as OpenAI's API returns it, and the object may be wrapped as ``{"function": {...}}``),
  or a JSON list of such objects;
* the same objects inside ``<tool_call>...</tool_call>`` blocks (Qwen and Hermes models), any text
  around the blocks being the model's reasoning;
* call syntax, ``ls(path="/")``, several calls on separate lines or in a list
  ``[cd(folder="a"), ls()]`` (BFCL style), parsed with :mod:`ast` and ``ast.literal_eval`` only:
  model output is never evaluated;
* a bare command that the environment understands itself (``go north``, ``search[red shirt]``);
* plain text with no call: a message to the user, where the environment accepts messages.

Every call is checked against its tool's JSON Schema *before* the environment runs any of them, so
one bad call rejects the whole output and leaves the state as it was. Errors are
:class:`ActionError` with a message written for the model: what was wrong and the expected form.
"""

from __future__ import annotations

import ast
import itertools
import json
import keyword
import math
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from budgetgym.core.tools import Tool


@dataclass(frozen=True, init=False)
class ToolCall:
    """One call of a tool by name. An env keeps the parse of each text it sees (``TextEnv._parse``):
    the calls it hands out again hold their ``arguments`` read-only."""

    name: str
    arguments: Mapping[str, Any]

    def __init__(self, name: str, arguments: Mapping[str, Any]) -> None:
        # Frozen all the same (assignment raises): the generated __init__ sets each field through
        # object.__setattr__, twice the cost of filling the instance's dict, on every step's path.
        fields = self.__dict__
        fields["name"] = name
        fields["arguments"] = arguments

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "arguments": dict(self.arguments)}, ensure_ascii=False)


@dataclass(frozen=True, init=False)
class Action:
    """A parsed turn: the tool calls to run in order, or (with no calls) a message to the user."""

    calls: tuple[ToolCall, ...]
    message: str = ""

    def __init__(self, calls: tuple[ToolCall, ...], message: str = "") -> None:
        fields = self.__dict__  # as ToolCall's
        fields["calls"] = calls
        fields["message"] = message

    @property
    def is_message(self) -> bool:
        return not self.calls


class ActionError(ValueError):
    """The output could not be turned into valid calls; ``str(err)`` is the text for the model."""


class _Problem(Exception):
    """What was wrong, and with which tool (if any): parse_action adds the expected form once."""

    def __init__(self, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


BareParser = Callable[[str], "ToolCall | None"]

_OPEN_TAG, _CLOSE_TAG = "<tool_call>", "</tool_call>"
_CODE_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)
# First characters of JSON (an object or a list) and of a code fence.
_OPENS_ANOTHER_FORM = frozenset("{[`")
_CALL_START = re.compile(r"^\[?\s*([A-Za-z_][\w.]*)\s*\(")
# An object, or a list that opens like JSON; "[Done] moved it" is a message, not broken JSON.
_JSON_START = re.compile(r'^(\{|\[\s*[\[{"\d\-\]]|\[\s*(true|false|null)\b)')
MAX_CALLS_PER_STEP = 32  # one turn may hold several calls, but not an unbounded batch
MAX_INTEGER_DIGITS = 64
# Limits checked by linear scans *before* json.loads or ast.parse run: both recurse per nesting level
# (RecursionError at about 1,000 levels, MemoryError from Python's parser on long operator chains),
# and ast.parse plus literal_eval take about 100 ms for 30,000 list items. Within these limits the
# parse of any action up to the length limit takes a few milliseconds and nests a few hundred frames.
MAX_NESTING_DEPTH = 32  # brackets ( [ { outside strings
MAX_VALUES = 1024  # separators (',' and ':') outside strings: arguments, list items, dict entries
MAX_CALL_CODE = 4096  # call syntax: characters outside string literals (names, numbers, punctuation)
MAX_OPERATORS = 512  # call syntax: signs, operators, attribute dots, subscripts and calls
# C0 controls but tab and newlines: no model writes them, a garbled byte stream does.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def expected_forms(tools: Mapping[str, Tool]) -> str:
    """The reminder appended to every parse error: the accepted forms, with a real tool as example."""
    example = next(iter(tools.values()), None)
    if example is None:
        return "Expected a command."
    name = example.name
    return (
        f'Expected a tool call: {{"name": "{name}", "arguments": {{...}}}}, the same inside '
        f"<tool_call>...</tool_call>, or {name}(...). Tools: "
        + "; ".join(t.signature() for t in tools.values())
    )


def parse_action(
    text: str,
    tools: Mapping[str, Tool],
    *,
    bare: BareParser | None = None,
    allow_message: bool = False,
    max_calls: int = MAX_CALLS_PER_STEP,
    rule: str = "",
) -> Action:
    """Parse one turn of model output into validated tool calls, or a message.

    ``bare`` reads the env's own commands: given the stripped text, it returns the call it means or
    None; a function of the text alone (it may be asked twice). ``max_calls`` is the env's action rule (``TextEnv.max_calls_per_turn``): an output with more
    calls is refused (nothing runs), with ``rule`` (why the env takes no more) in the message.

    Raises:
        ActionError: the output is malformed, names an unknown tool, or breaks a tool's schema; its
            text says what was wrong and the expected form.
    """
    if bare is not None and type(text) is str and max_calls >= 1:
        # The commonest turn, a bare command (search[red shirt], go north) that its tool's plain
        # check accepts, read without the general path's steps. A text here (printable, opening no
        # other form: JSON, a code fence, call syntax, a <tool_call> block) reaches the bare parser
        # there too, last, with the same call; anything else, every error included, takes that path
        # (``bare`` is a function of the text alone: it may be asked twice).
        stripped = text.strip()
        if (stripped and stripped[0] not in _OPENS_ANOTHER_FORM and "(" not in stripped
                and _OPEN_TAG not in stripped and stripped.isprintable()):
            call = bare(stripped)
            if call is not None:
                tool = tools.get(call.name)
                accepts = tool._plain_accepts if tool is not None else None  # set once the tool is compiled
                if accepts is not None and accepts(call.arguments):
                    return Action((call,))
    try:
        action = _parse(text, tools, bare, allow_message)
    except _Problem as problem:
        tool = tools.get(problem.tool) if problem.tool else None
        expected = f"Expected {tool.signature()}." if tool is not None else expected_forms(tools)
        raise ActionError(f"{problem} {expected}") from None
    if len(action.calls) > max_calls:
        because = f"; {rule}" if rule else f"; this env takes at most {max_calls} a turn"
        raise ActionError(f"This turn holds {len(action.calls)} tool calls{because}. Nothing was run.")
    return action


def _parse(text: str, tools: Mapping[str, Tool], bare: BareParser | None, allow_message: bool) -> Action:
    if not isinstance(text, str):
        raise _Problem(f"The action must be text, got {type(text).__name__}.")
    stripped = text.strip()
    if not stripped:
        raise _Problem("The action is empty.")
    if stripped[0] == "{" or (stripped[0] == "[" and _JSON_START.match(stripped)):  # not "[cd(...)]"
        calls = _fast_json_calls(stripped)
        if calls is not None:
            return _validated(calls, tools)
    # isprintable is one C pass with no match object: a printable text holds no control character.
    control = None if stripped.isprintable() else _CONTROL_CHARACTERS.search(stripped)
    if control:
        raise _Problem(f"The action holds a control character ({control.group()!r} at {control.start()}): it is not text.")
    if stripped.startswith("```"):
        fence = _CODE_FENCE.match(stripped)
        if fence:
            stripped = fence.group(1).strip()
            if not stripped:  # the steps below read its first character
                raise _Problem("The action is an empty code block.")

    # JSON and call syntax are tried before <tool_call> blocks: an argument may contain that tag.
    calls: list[ToolCall] | None = None
    has_blocks = "<tool_call>" in stripped
    if stripped[0] in "{[" and _JSON_START.match(stripped):
        try:
            calls = _calls_from_json(_load_json(stripped))
        except _Problem:
            if not has_blocks:
                raise
    if calls is None and "(" in stripped and not (has_blocks and stripped.startswith("<")):
        calls = _parse_call_syntax(stripped, tools)  # None without a "(": not call syntax
    if calls is None and has_blocks:
        calls = _parse_tool_call_blocks(stripped, tools)
    if calls is None:
        call = bare(stripped) if bare is not None else None
        if call is not None:
            calls = [call]
        elif allow_message:
            return Action(calls=(), message=stripped)
        else:
            raise _Problem(f"Could not read a tool call in {_excerpt(stripped)}.")

    return _validated(calls, tools)


def _fast_json_calls(text: str) -> list[ToolCall] | None:
    """The common form, a JSON call or list of calls, read in one pass; None sends the text down the
    full path (which words every error). Equivalent to it: a JSON text that decodes cannot hold a
    C0 control character (JSON allows none outside strings, the decoder none inside), so only DEL
    needs a look, and a code fence or a <tool_call> block never starts with a bracket."""
    if "\x7f" in text or _json_size_problem(text) is not None:
        return None
    try:
        # The decoder's scanner itself: the text is stripped, so it decodes exactly when the scan
        # ends at its end (JSONDecoder.decode adds two whitespace matches and a wrapper call).
        value, end = _SCAN(text, 0)
        return _calls_from_json(value) if end == len(text) else None
    except (_Problem, StopIteration, ValueError):  # JSONDecodeError is a ValueError
        return None


def _validated(calls: list[ToolCall], tools: Mapping[str, Tool]) -> Action:
    if not calls:
        raise _Problem("No tool call found.")
    if len(calls) > MAX_CALLS_PER_STEP:
        raise _Problem(f"Too many calls in one turn ({len(calls)}); at most {MAX_CALLS_PER_STEP}.")
    for index, call in enumerate(calls):
        tool = tools.get(call.name)
        if tool is None:
            raise _Problem(f"Unknown tool '{call.name}'.")
        given = call.arguments
        accepts = tool._plain_accepts  # set once the tool is compiled (Tool.compile says when)
        if accepts is not None and accepts(given):
            continue  # valid, and nothing to normalise
        problem = tool.validation_error(given)
        if problem is not None:
            where = f"call {index + 1}, " if len(calls) > 1 else ""
            raise _Problem(f"Invalid arguments for '{call.name}' ({where}nothing was run): {problem}.", call.name)
        arguments = tool.normalise(given)
        if arguments is not given:
            calls[index] = ToolCall(call.name, arguments)
    return Action(tuple(calls))


def _parse_tool_call_blocks(text: str, tools: Mapping[str, Tool]) -> list[ToolCall]:
    opened, closed = text.count(_OPEN_TAG), text.count(_CLOSE_TAG)
    if opened > MAX_CALLS_PER_STEP:
        raise _Problem(f"Too many <tool_call> blocks ({opened}); at most {MAX_CALLS_PER_STEP} calls in one turn.")
    if opened != closed:
        raise _Problem("Unclosed <tool_call> block: each <tool_call> needs a matching </tool_call>.")
    calls: list[ToolCall] = []
    position = 0
    # One left-to-right pass with str.find: a regex search from every opening tag is quadratic.
    while (start := text.find(_OPEN_TAG, position)) != -1:
        end = text.find(_CLOSE_TAG, start)
        if end == -1:
            raise _Problem("Unclosed <tool_call> block: each <tool_call> needs a matching </tool_call>.")
        body = text[start + len(_OPEN_TAG):end].strip()
        position = end + len(_CLOSE_TAG)
        if _OPEN_TAG in body:
            raise _Problem("A <tool_call> block opens inside another: close each block before the next.")
        if body.startswith(("{", "[")):
            calls.extend(_calls_from_json(_load_json(body)))
        else:
            parsed = _parse_call_syntax(body, tools)
            if parsed is None:
                raise _Problem(f"Could not read the <tool_call> block {_excerpt(body)}.")
            calls.extend(parsed)
    return calls


def _reject_constant(name: str) -> Any:
    raise _Problem(f"{name} is not a JSON value: numbers must be finite.")


def _checked_int(digits: str) -> int:
    # Python refuses to read integers past 4300 digits (a ValueError, not a JSON error); no tool needs
    # a fraction of that, and huge integers are how a call makes a backend compute for minutes.
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _Problem(f"An integer of {len(digits.lstrip('-'))} digits is too long: at most {MAX_INTEGER_DIGITS}.")
    return int(digits)


def _checked_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 reads as infinity
        raise _Problem(f"{text} is out of range: numbers must be finite.")
    return value


# Built once: json.loads with hooks builds a decoder per call (most of the cost of reading a short
# call); the hooks themselves cost about 0.15 us a number.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_checked_int, parse_float=_checked_float)
_SCAN = _DECODER.scan_once


def _load_json(text: str) -> Any:
    problem = _json_size_problem(text)
    if problem is not None:
        raise _Problem(problem)
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as err:
        raise _Problem(f"Malformed JSON ({err.msg} at line {err.lineno} column {err.colno}).") from None


def _calls_from_json(value: Any) -> list[ToolCall]:
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict):
            raise _Problem('A JSON tool call must be an object with a string "name".')
        function = item.get("function")
        if isinstance(function, dict):
            item = function  # OpenAI's {"type": "function", "function": {...}} wrapper
        name = item.get("name")
        if not isinstance(name, str):
            raise _Problem('A JSON tool call must be an object with a string "name".')
        arguments = item["arguments"] if "arguments" in item else item.get("parameters", {})
        if isinstance(arguments, str):
            try:
                arguments = _load_json(arguments) if arguments.strip() else {}
            except _Problem as problem:
                raise _Problem(f"The arguments of '{item['name']}' are not valid JSON: {problem}", item["name"]) from None
        if not isinstance(arguments, dict):
            raise _Problem(f"The arguments of '{item['name']}' must be a JSON object, got {type(arguments).__name__}.", item["name"])
        calls.append(ToolCall(name, arguments))
    return calls


def _parse_call_syntax(text: str, tools: Mapping[str, Tool]) -> list[ToolCall] | None:
    """Calls written as Python call syntax, or None when the text does not look like calls at all."""
    match = _CALL_START.match(text) if "(" in text else None
    if match is None:
        return None
    problem = _call_size_problem(text)
    if problem is not None:
        if _short_name(match.group(1)) in tools:
            raise _Problem(problem, _short_name(match.group(1)))
        return None  # prose that opens like a call ("Note (it is ...)"): not call syntax
    calls = _simple_calls(text)
    if calls is not None:
        return calls
    try:
        with _AST_LOCK, warnings.catch_warnings():
            # "\d" in a string literal makes Python's parser warn (or, under -W error, refuse): the
            # model's escapes are read as Python reads them, and the host's stderr and warning
            # filters play no part in the verdict.
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            module = ast.parse(text, mode="exec")
    except UnicodeEncodeError as err:  # Python source must be encodable: no lone surrogates
        if _short_name(match.group(1)) in tools:
            raise _Problem(f"The call holds a lone surrogate ({text[err.start]!r} at {err.start}), which call syntax "
                           "cannot carry; write the call as JSON.", _short_name(match.group(1))) from None
        return None
    except (SyntaxError, ValueError):
        if _short_name(match.group(1)) in tools:
            raise _Problem(f"Could not parse the call {_excerpt(text)}: check quotes and brackets.", _short_name(match.group(1))) from None
        return None
    nodes: list[ast.expr] = []
    for statement in module.body:
        if not isinstance(statement, ast.Expr):
            return None
        value = statement.value
        nodes.extend(value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value])
    if not nodes or not all(isinstance(n, ast.Call) for n in nodes):
        return None
    return [_call_from_node(node, tools) for node in nodes]  # type: ignore[arg-type]


# Call syntax in its most common form, read without Python's parser (which is most of the cost of a
# call-syntax step): one call, or a bracketed list of calls, each with keyword arguments only, whose
# values are plain literals: a quoted string without backslashes or line breaks, a decimal number of
# at most 20 digits each side of the point, True, False, None, or a flat list of those; ASCII
# names, spaces only between tokens. Each token of that language starts with a character of its
# own, so a match is read one way only. It is a subset of what ``ast.parse`` + ``literal_eval`` read,
# to the same values (a test checks both paths on generated calls); anything else (positional
# arguments, dicts, escapes, exponents, tabs or line breaks between tokens, a repeated argument,
# non-ASCII text) goes to the parser. The limits of ``_call_size_problem`` were checked before.
_SIMPLE_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_SIMPLE_SCALAR = r"""'[^'\\\r\n]*'|"[^"\\\r\n]*"|-?(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,20})?|True|False|None"""
_SIMPLE_VALUE = rf"(?:{_SIMPLE_SCALAR}|\[ *(?:(?:{_SIMPLE_SCALAR})(?: *, *(?:{_SIMPLE_SCALAR}))* *,?)? *\])"
_SIMPLE_ARGUMENTS = rf"(?: *{_SIMPLE_NAME} *= *{_SIMPLE_VALUE} *,)*(?: *{_SIMPLE_NAME} *= *{_SIMPLE_VALUE})? *"
_SIMPLE_CALL = rf"{_SIMPLE_NAME}\({_SIMPLE_ARGUMENTS}\)"
_SIMPLE_CALLS = re.compile(rf"\[ *{_SIMPLE_CALL}(?: *, *{_SIMPLE_CALL})* *\]|{_SIMPLE_CALL}")
_ONE_SIMPLE_CALL = re.compile(rf"({_SIMPLE_NAME})\(({_SIMPLE_ARGUMENTS})\)")
_ONE_SIMPLE_ARGUMENT = re.compile(rf"({_SIMPLE_NAME}) *= *({_SIMPLE_VALUE})")
_ONE_SIMPLE_SCALAR = re.compile(_SIMPLE_SCALAR)
# Python 3.11 keeps the depth counter of its AST object builder in one place for every thread:
# two threads that parse at once (envs stepped from a thread pool) can fail each other's parse
# with "SystemError: AST constructor recursion depth mismatch". Parses here take turns.
_AST_LOCK = threading.Lock()
_CONSTANT_NAMES = frozenset({"True", "False", "None"})  # keywords that the keyword check lets through
_CONSTANTS = {"True": True, "False": False, "None": None}


def _simple_scalar(token: str) -> Any:
    first = token[0]
    if first == "'" or first == '"':
        return token[1:-1]
    if first in "TFN":
        return _CONSTANTS[token]
    return float(token) if "." in token else int(token)


def _simple_calls(text: str) -> list[ToolCall] | None:
    """The calls of ``text`` when it is in the simple form above, else None (the parser decides)."""
    if not text.isascii() or _SIMPLE_CALLS.fullmatch(text) is None:  # isascii: O(1), a flag of the string
        return None
    calls = []
    # The text matched as a whole, so the calls (and each call's arguments) are found left to right,
    # separated by spaces and commas only: no match can start inside a string.
    for name, body in _ONE_SIMPLE_CALL.findall(text):
        if name in _CONSTANT_NAMES:
            return None
        arguments: dict[str, Any] = {}
        for key, value in _ONE_SIMPLE_ARGUMENT.findall(body):
            if key in arguments or key in _CONSTANT_NAMES:
                return None  # Python refuses these: the parser words the error
            arguments[key] = ([_simple_scalar(item) for item in _ONE_SIMPLE_SCALAR.findall(value)]
                              if value[0] == "[" else _simple_scalar(value))
        calls.append(ToolCall(name, arguments))
    return calls


def _call_from_node(node: ast.Call, tools: Mapping[str, Tool]) -> ToolCall:
    name = _dotted(node.func)
    if name is None:
        raise _Problem("A call must name a tool directly, as tool_name(arg=value).")
    name = _short_name(name)
    arguments: dict[str, Any] = {}
    tool = tools.get(name)
    if node.args:
        if tool is None:
            raise _Problem(f"Unknown tool '{name}'.")
        order = tool.param_names
        if len(node.args) > len(order):
            raise _Problem(f"'{name}' takes at most {len(order)} arguments.", name)
        for param, arg in zip(order, node.args):
            arguments[param] = _literal(arg, name)
    for keyword in node.keywords:
        if keyword.arg is None:
            raise _Problem(f"'**' arguments are not allowed in a call to '{name}'.", name)
        if keyword.arg in arguments:
            raise _Problem(f"Argument '{keyword.arg}' given twice in a call to '{name}'.", name)
        arguments[keyword.arg] = _literal(keyword.value, name)
    return ToolCall(name, arguments)


def _literal(node: ast.expr, name: str) -> Any:
    if type(node) is ast.Constant:
        value = node.value  # what literal_eval returns for a constant, without its set-up per call
    else:
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise _Problem(f"Arguments of '{name}' must be literals (strings, numbers, lists, dicts, True/False/None).", name) from None
    return _jsonable(value)


def _jsonable(value: Any) -> Any:
    if type(value) is str:
        return value
    # Tuples and sets from call syntax become lists, so schemas of type "array" accept them.
    if isinstance(value, (tuple, list, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (bytes, complex)):
        raise _Problem("Arguments must be JSON values: no bytes or complex numbers.")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Problem(f"{value} is out of range: numbers must be finite.")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_INTEGER_DIGITS:
        raise _Problem(f"An integer of more than {MAX_INTEGER_DIGITS} digits is too long.")
    return value


# ------------------------------------------------------------------ limits checked before parsing
#
# Each check is a few passes of C code (str.count, str.replace, regular expressions that cannot
# backtrack, one running sum in C), linear in the text; the slower patterns of call syntax only
# run once the code outside string literals is known to be short (MAX_CALL_CODE).

# Escaped characters first (a pair of backslashes, then a backslash and the next character), so the
# string patterns below need no escape handling and cannot backtrack.
_ESCAPES = (("\\\\", "__"), ('\\"', "__"), ("\\'", "__"), ("\\\n", "__"), ("\\\r", "__"))
# Python's own tokens that hide text: comments, then triple-quoted before single-quoted strings (the
# order Python's tokenizer reads them in). An unterminated string runs to the end (or, single-quoted,
# to the end of its line, where Python stops with an error): a match can never fail and backtrack.
_PYTHON_SKIPPED = re.compile(
    r'\#[^\r\n]*|""".*?(?:"""|\Z)|\'\'\'.*?(?:\'\'\'|\Z)|"[^"\r\n]*"?|\'[^\'\r\n]*\'?', re.DOTALL)
_FSTRING = re.compile(r'(?<!\w)(?:[rRbBuU]?[fF]|[fF][rRbB])""')
_KEYWORD = re.compile(r"\b(?:" + "|".join(k for k in keyword.kwlist if k not in ("True", "False", "None")) + r")\b")
# A number token (with its exponent sign, dots and suffix), so that its '-' and '.' are no operators.
_NUMBER_TOKEN = re.compile(r"(?<![\w.])\.?\d(?:[\w.]|(?<=[eE])[-+])*")
_POSTFIX = re.compile(r"[\w)\]}\"]\s*[(\[]")  # a call or a subscript
_OPERATOR_CHARACTERS = "-+*/%@&|^~<>!."
_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_BRACKET_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _without_escapes(text: str) -> str:
    for escaped, blank in _ESCAPES:
        if escaped in text:
            text = text.replace(escaped, blank)
    return text


def _outside_quotes(text: str, quote: str) -> str:
    """``text`` with the inside of every ``quote``-delimited string emptied (escapes already blanked).

    Splitting on the quote is one C pass: the even pieces are outside strings; an unterminated
    string runs to the end."""
    pieces = text.split(quote)
    return (quote * 2).join(pieces[0::2]) if len(pieces) > 1 else text


def _python_code(text: str) -> str:
    """The call-syntax text outside comments and string literals (each literal left as ``""``)."""
    text = _without_escapes(text)
    if "#" not in text:
        # With one kind of quote and no triple quotes, splitting on it reads the strings as Python
        # does; a string that Python would find unterminated at a line end stops the parse there.
        if "'" not in text and '"""' not in text:
            return _outside_quotes(text, '"')
        if '"' not in text and "\'\'\'" not in text:
            return _outside_quotes(text, "'").replace("''", '""')
    return _PYTHON_SKIPPED.sub('""', text)


def _nesting_depth(code: str) -> int:
    brackets = _NOT_BRACKETS.sub("", code)
    if len(brackets) <= MAX_NESTING_DEPTH:
        return len(brackets)  # an upper bound that is within the limit
    # The running sum of +1 per opening and -1 per closing bracket, all in C (map, accumulate, max).
    return max(itertools.accumulate(map(_BRACKET_DELTA.__getitem__, brackets)))


def _structure_problem(code: str, what: str) -> str | None:
    depth = _nesting_depth(code)
    if depth > MAX_NESTING_DEPTH:
        return f"The {what} is nested {depth} levels deep; at most {MAX_NESTING_DEPTH}."
    values = code.count(",") + code.count(":")
    if values > MAX_VALUES:
        return f"The {what} holds about {values} values; at most {MAX_VALUES} arguments, items and entries in one turn."
    return None


def _json_size_problem(text: str) -> str | None:
    """Why ``text`` is too deep or too large to hand to ``json.loads``, or None."""
    if text.count("[") + text.count("{") <= MAX_NESTING_DEPTH and text.count(",") + text.count(":") <= MAX_VALUES:
        return None  # the raw counts bound the counts outside strings
    return _structure_problem(_outside_quotes(_without_escapes(text), '"'), "JSON")


def _call_size_problem(text: str) -> str | None:
    """Why ``text`` must not reach ``ast.parse`` (too deep, too large, not literals), or None."""
    code = _python_code(text)
    if len(code) > MAX_CALL_CODE:
        return (f"The call has {len(code)} characters outside its string literals; at most {MAX_CALL_CODE} "
                "(arguments are literals: long text belongs in strings).")
    problem = _structure_problem(code, "call")
    if problem is not None:
        return problem
    if _FSTRING.search(code):
        return "Arguments must be literals: f-strings are not."
    found = _KEYWORD.search(code)
    if found:
        return f"Arguments must be literals: '{found.group()}' is a Python keyword."
    if len(code) <= MAX_OPERATORS:
        # Every operator counted below is a character of its own (a call or subscript: its bracket),
        # and replacing number tokens never lengthens the code: a code this short is within the limit.
        return None
    bare = _NUMBER_TOKEN.sub("0", code)
    operators = sum(bare.count(c) for c in _OPERATOR_CHARACTERS) + len(_POSTFIX.findall(bare))
    if operators > MAX_OPERATORS:
        return f"The call holds {operators} operators; arguments must be literals (at most {MAX_OPERATORS} signs and calls in one turn)."
    return None


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _short_name(name: str) -> str:
    # "GorillaFileSystem.ls" -> "ls": some models qualify a tool with its class.
    return name.rsplit(".", 1)[-1]


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
