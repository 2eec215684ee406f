"""The shared action parser: every accepted form, every rejection, and properties over inputs."""

from __future__ import annotations

import json

import fastjsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetgym.core import Action, ActionError, Tool, ToolCall, parse_action

MV = Tool("mv", "Move a file.", {
    "type": "object",
    "properties": {"source": {"type": "string"}, "destination": {"type": "string"}, "overwrite": {"type": "boolean"}},
    "required": ["source", "destination"], "additionalProperties": False})
LS = Tool("ls", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}, "additionalProperties": False})
TAG = Tool("tag", "Tag items.", {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "integer"}}, "meta": {"type": "object"}},
    "required": ["items"], "additionalProperties": False})
TOOLS = {t.name: t for t in (MV, LS, TAG)}
MOVE = ToolCall("mv", {"source": "a.txt", "destination": "b/"})


@pytest.mark.parametrize("text", [
    '{"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}',
    '{"name": "mv", "arguments": "{\\"source\\": \\"a.txt\\", \\"destination\\": \\"b/\\"}"}',
    '{"type": "function", "function": {"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}}',
    '<tool_call>\n{"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}\n</tool_call>',
    'Let me move it.\n<tool_call>{"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}</tool_call>',
    "mv(source='a.txt', destination='b/')",
    'mv("a.txt", "b/")',
    "FileSystem.mv(source='a.txt', destination=\"b/\")",
    "```json\n{\"name\": \"mv\", \"arguments\": {\"source\": \"a.txt\", \"destination\": \"b/\"}}\n```",
    "  mv(source='a.txt',\n     destination='b/')  ",
])
def test_every_form_parses_to_the_same_call(text):
    assert parse_action(text, TOOLS) == Action(calls=(MOVE,))


def test_several_calls_in_order():
    expected = (ToolCall("ls", {"path": "/"}), MOVE)
    forms = [
        '[{"name": "ls", "arguments": {"path": "/"}}, {"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}]',
        '<tool_call>{"name": "ls", "arguments": {"path": "/"}}</tool_call> then '
        '<tool_call>{"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}</tool_call>',
        "[ls(path='/'), mv(source='a.txt', destination='b/')]",
        "ls(path='/')\nmv(source='a.txt', destination='b/')",
        "ls(path='/'); mv(source='a.txt', destination='b/')",
    ]
    for text in forms:
        assert parse_action(text, TOOLS).calls == expected, text


def test_call_syntax_values_become_json_values():
    action = parse_action("tag(items=(1, 2), meta={'k': [True, None, 1.5]})", TOOLS)
    assert action.calls[0].arguments == {"items": [1, 2], "meta": {"k": [True, None, 1.5]}}


def test_plain_text_is_a_message_only_where_allowed():
    assert parse_action("The file is moved.", TOOLS, allow_message=True) == Action(calls=(), message="The file is moved.")
    assert parse_action("Done (all of it).", TOOLS, allow_message=True).is_message
    with pytest.raises(ActionError, match="Could not read a tool call"):
        parse_action("The file is moved.", TOOLS)


def test_bare_commands_go_to_the_env_parser():
    def bare(text):
        return ToolCall("ls", {"path": text[3:]}) if text.startswith("ls ") else None

    assert parse_action("ls /tmp", TOOLS, bare=bare).calls == (ToolCall("ls", {"path": "/tmp"}),)


@pytest.mark.parametrize("text,match", [
    ("", "empty"),
    ("{nope", "Malformed JSON"),
    ('{"arguments": {}}', 'string "name"'),
    ('{"name": "rm", "arguments": {}}', r"Unknown tool 'rm'\. Expected a tool call.*Tools: mv\(source: string"),
    ("rm(path='/')", "Unknown tool 'rm'"),
    ('{"name": "mv", "arguments": {"source": "a"}}', "'destination' is a required property"),
    ('{"name": "mv", "arguments": {"source": 1, "destination": "b"}}', "1 is not of type 'string'"),
    ('{"name": "mv", "arguments": {"source": "a", "destination": "b", "force": true}}', "Additional properties"),
    ('{"name": "mv", "arguments": "{broken"}', "not valid JSON"),
    ('{"name": "mv", "arguments": [1]}', "must be a JSON object"),
    ("mv(source='a', destination=", "Could not parse the call"),
    ("mv(source=open('x'), destination='b')", "must be literals"),
    ("mv(**{'source': 'a'})", r"'\*\*' arguments"),
    ("mv('a', 'b', True, 4)", "at most 3 arguments"),
    ("mv('a', source='b', destination='c')", "given twice"),
    ("<tool_call>{\"name\": \"ls\"}", "Unclosed <tool_call>"),
    ("<tool_call>just words</tool_call>", "Could not read the <tool_call> block"),
    ("[ls(path='/'), {'name': 'x'}]", "Could not read a tool call"),
    ("__import__('os').system('ls')", "must name a tool directly"),
])
def test_rejections_name_the_problem_and_the_expected_form(text, match):
    with pytest.raises(ActionError, match=match) as err:
        parse_action(text, TOOLS)
    assert "Expected" in str(err.value)


def test_one_bad_call_rejects_the_whole_turn():
    text = "[ls(path='/'), mv(source='a')]"
    with pytest.raises(ActionError, match="call 2, nothing was run"):
        parse_action(text, TOOLS)


def test_call_syntax_is_never_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    for text in (f"ls(path=open({str(marker)!r}, 'w').name)", f"__import__('pathlib').Path({str(marker)!r}).touch()"):
        with pytest.raises(ActionError):
            parse_action(text, TOOLS)
    assert not marker.exists()


@pytest.mark.parametrize("text", ["``````", "```json\n```", "```   ```", "  ```\n\n```  "])
@pytest.mark.parametrize("allow_message", [False, True])
def test_an_empty_code_block_is_a_clear_error(text, allow_message):
    # It raised IndexError out of the parser (and out of every env's step).
    with pytest.raises(ActionError, match="The action is an empty code block. Expected a tool call"):
        parse_action(text, TOOLS, allow_message=allow_message)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FREE = Tool("free", "Any arguments.", {"type": "object"})


@settings(max_examples=200, deadline=None)
@given(arguments=st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), json_values, max_size=5),
       form=st.sampled_from(["json", "tool_call", "call"]))
def test_round_trip_property(arguments, form):
    """Any JSON arguments survive every form unchanged."""
    if form == "json":
        text = json.dumps({"name": "free", "arguments": arguments})
    elif form == "tool_call":
        # A block ends at its first closing tag and may not hold an opening one, as Hermes-format
        # parsers read it: a tag inside a JSON string travels escaped (JSON's \u003c is "<").
        body = json.dumps({"name": "free", "arguments": arguments}).replace("<", "\\u003c")
        text = f"<tool_call>{body}</tool_call>"
    else:
        text = "free(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")"
        if any(keyword in arguments for keyword in ("if", "in", "is", "or", "and", "not", "for", "def", "as")):
            return
    action = parse_action(text, {"free": FREE})
    assert action.calls == (ToolCall("free", arguments),)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=200))
def test_any_text_parses_or_raises_action_error_only(text):
    try:
        result = parse_action(text, TOOLS, allow_message=True)
    except ActionError as err:
        assert str(err)
    else:
        assert isinstance(result, Action)
        for call in result.calls:
            assert call.name in TOOLS and TOOLS[call.name].validation_error(call.arguments) is None


@settings(max_examples=300, deadline=None)
@given(text=st.from_regex(r"(mv|ls|tag|rm)\((\w+=)?[\w'\"\[\]{}:, .()*-]{0,30}\)", fullmatch=True))
def test_call_like_text_never_escapes_as_another_exception(text):
    try:
        parse_action(text, TOOLS)
    except ActionError:
        pass


SCHEMAS = [
    MV.parameters, LS.parameters, TAG.parameters,
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 5},
                                      "s": {"type": "string", "pattern": "^a", "maxLength": 3},
                                      "e": {"enum": ["x", 1, None]}, "f": {"type": "number", "multipleOf": 0.5},
                                      "o": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "boolean"}}]}},
     "required": ["n"]},
    # Draft 2020-12's tuple form, which the fast validator reads as Draft 7's array form of items.
    {"type": "object", "properties": {"items": {"type": "array", "prefixItems": [{"enum": ["a", "b"]}, {"type": "object"}],
                                                "minItems": 2, "maxItems": 2},
                                      "meta": {"type": "array", "prefixItems": [{"type": "integer"}],
                                               "items": {"type": "string"}}}},
]


@settings(max_examples=400, deadline=None)
@given(schema=st.sampled_from(SCHEMAS),
       arguments=st.dictionaries(st.sampled_from(["source", "destination", "overwrite", "path", "items", "meta",
                                                  "n", "s", "e", "f", "o", "extra"]), json_values, max_size=5))
def test_fast_validation_agrees_with_jsonschema(schema, arguments):
    """The compiled fast path never accepts what jsonschema (the authority) rejects, nor the reverse."""
    import jsonschema

    tool = Tool("t", "t", schema)
    assert tool.validator.fast
    expected = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert (tool.validation_error(arguments) is None) == expected
    try:  # the compiled validator's own verdict, both ways
        tool.validator._fast(arguments)
        fast_verdict = True
    except fastjsonschema.JsonSchemaException:
        fast_verdict = False
    assert fast_verdict == expected


TEXT_SCHEMAS = [
    {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    {"type": "object", "properties": {"q": {"type": "string", "minLength": 1, "maxLength": 3, "description": "Q."}},
     "required": ["q"], "additionalProperties": False},
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 2}}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "minLength": 2}},
     "required": ["a"], "additionalProperties": False},
]
texts = st.one_of(st.text(max_size=5), st.sampled_from(["", "\ud800", "\U0001f600\U0001f600", "abc", "abcd"]))


class _Text(str):
    pass


@settings(max_examples=400, deadline=None)
@given(schema=st.sampled_from(TEXT_SCHEMAS),
       arguments=st.one_of(st.dictionaries(st.sampled_from(["q", "a", "b", "x"]), st.one_of(texts, json_values), max_size=3),
                           json_values))
def test_the_plain_check_of_text_fields_agrees_with_jsonschema(schema, arguments):
    """Schemas of string properties only get a plain check instead of the compiled one: it accepts
    only what jsonschema accepts, and every plain dict of plain strings that jsonschema accepts."""
    import jsonschema

    tool = Tool("t", "t", schema)
    accepts = tool.validator._accepts
    assert accepts is not None
    expected = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert (tool.validation_error(arguments) is None) == expected
    if accepts(arguments):
        assert expected
    elif expected:  # turned down, valid all the same: only what is not a plain dict of plain strings
        assert type(arguments) is not dict or any(type(v) is not str for v in arguments.values())


def test_the_plain_check_leaves_subclasses_and_other_schemas_to_the_validators():
    tool = Tool("t", "t", TEXT_SCHEMAS[1])
    assert not tool.validator._accepts({"q": _Text("ab")}) and tool.validation_error({"q": _Text("ab")}) is None
    assert tool.validation_error({"q": ""}) == "'' should be non-empty (at 'q')"
    assert tool.validation_error({"q": "abcd"}) == "'abcd' is too long (at 'q')"
    assert Tool("l", "l", LS.parameters).validator._accepts({"path": "/"})
    for other in (MV.parameters, SCHEMAS[3],
                  {"type": "object", "properties": {"q": {"type": "string", "pattern": "^a"}}, "additionalProperties": False},
                  {"type": "object", "properties": {"q": {"type": "string"}}}):
        assert Tool("o", "o", other).validator._accepts is None


def test_tuple_schemas_are_validated_fast_and_alike():
    tool = Tool("t", "t", SCHEMAS[-1])
    assert tool.validator.fast
    for good in ({"items": ["a", {}]}, {"meta": [1]}, {"meta": [1, "x", "y"]}, {"meta": []}):
        assert tool.validation_error(good) is None, good
    for bad, where in (({"items": ["c", {}]}, "items/0"), ({"items": ["a", 1]}, "items/1"), ({"items": ["a"]}, "items"),
                       ({"meta": ["x"]}, "meta/0"), ({"meta": [1, 2]}, "meta/1")):
        assert f"(at '{where}')" in tool.validation_error(bad), bad


def test_fast_validation_does_not_fill_defaults():
    tool = Tool("d", "d", {"type": "object", "properties": {"x": {"type": "integer", "default": 3}}})
    arguments = {}
    assert tool.validation_error(arguments) is None and arguments == {}


def test_schemas_beyond_the_shared_keywords_use_jsonschema_only():
    tool = Tool("p", "p", {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}],
                                                                     "unevaluatedItems": False}}})
    assert not tool.validator.fast
    assert tool.validation_error({"pair": [1]}) is not None and tool.validation_error({"pair": ["a"]}) is None
    assert tool.validation_error({"pair": ["a", "b"]}) is not None


@pytest.mark.parametrize("text", ['{"name": "tag", "arguments": {"items": [NaN]}}',
                                  '{"name": "tag", "arguments": "{\\"items\\": [Infinity]}"}',
                                  '[{"name": "tag", "arguments": {"items": [-Infinity]}}]'])
def test_non_finite_numbers_are_not_json(text):
    with pytest.raises(ActionError, match="not a JSON value: numbers must be finite"):
        parse_action(text, TOOLS)


def test_integral_floats_of_integer_parameters_become_ints():
    count = Tool("count", "Count.", {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}})
    call = parse_action('{"name": "count", "arguments": {"n": 2.0, "x": 2.0}}', {"count": count}).calls[0]
    assert call.arguments == {"n": 2, "x": 2.0} and type(call.arguments["n"]) is int and type(call.arguments["x"]) is float
    with pytest.raises(ActionError, match="is not of type 'integer'"):
        parse_action('{"name": "count", "arguments": {"n": 2.5}}', {"count": count})


@pytest.mark.parametrize("text", ["[Done] moved it.", "[x] all three files", "{ this is not json, just a brace"])
def test_bracketed_prose_is_a_message_where_messages_are_allowed(text):
    if text.startswith("{"):  # an object always means JSON: a broken one is an error, not a message
        with pytest.raises(ActionError, match="Malformed JSON"):
            parse_action(text, TOOLS, allow_message=True)
    else:
        assert parse_action(text, TOOLS, allow_message=True) == Action(calls=(), message=text)


def test_openai_schema_is_a_fresh_copy_each_time():
    first = MV.openai_schema()
    first["function"]["parameters"]["properties"].clear()
    assert MV.openai_schema()["function"]["parameters"]["properties"].keys() == {"source", "destination", "overwrite"}
    assert MV.openai_schema() == {"type": "function", "function": {"name": "mv", "description": "Move a file.",
                                                                    "parameters": dict(MV.parameters)}}


@pytest.mark.parametrize("text,match", [
    ('{"name": "tag", "arguments": {"items": [' + "9" * 5000 + "]}}", "5000 digits is too long"),
    ('{"name": "tag", "arguments": "{\\"items\\": [' + "9" * 65 + ']}"}', "65 digits is too long"),
    ('{"name": "tag", "arguments": {"items": [1e999]}}', "1e999 is out of range"),
    ("tag(items=[" + "9" * 5000 + "])", "Could not parse|too long|outside its string literals"),
    ("tag(items=[" + "9" * 70 + "])", "more than 64 digits"),
    ("tag(items=[1e999])", "out of range"),
])
def test_numbers_beyond_any_tool_are_refused_not_raised(text, match):
    """Python itself raises ValueError past 4300 digits; the parser must turn that into an ActionError."""
    with pytest.raises(ActionError, match=match):
        parse_action(text, TOOLS)


def test_sixty_four_digit_integers_still_parse():
    big = int("9" * 64)
    assert parse_action(json.dumps({"name": "tag", "arguments": {"items": [big, -big]}}), TOOLS).calls[0].arguments == {"items": [big, -big]}


# ---------------------------------------------------------------------------- the fast JSON path

JSON_TEXTS = [
    '{"name": "mv", "arguments": {"source": "a.txt", "destination": "b/"}}',
    '[{"name": "ls", "arguments": {}}, {"name": "mv", "arguments": {"source": "a", "destination": "b"}}]',
    '{"name": "mv", "arguments": {"source": "a\x7f", "destination": "b"}}',  # DEL: the full path's message
    '{"name": "mv", "arguments": {"source": "a\x01", "destination": "b"}}',
    '{"name": "tag", "arguments": {"items": [NaN]}}',
    '{"name": "tag", "arguments": {"items": [' + "9" * 65 + "]}}",
    '{"name": "tag", "arguments": {"items": [2.0, 1e999]}}',
    '{"name": "tag", "arguments": {"items": "x"}}',
    '{"name": "nope", "arguments": {}}',
    '{"name": "mv", "arguments": {"source": "<tool_call>", "destination": "</tool_call>"}}',
    '{"broken": <tool_call>{"name": "ls", "arguments": {}}</tool_call>',
    "[Done] moved it.",
    "[1, 2, 3]",
    "[]",
    '{"name": "ls"} trailing',
]


def _outcome(text, allow_message):
    try:
        return parse_action(text, TOOLS, allow_message=allow_message)
    except ActionError as err:
        return f"ActionError: {err}"


@pytest.mark.parametrize("allow_message", [False, True])
@pytest.mark.parametrize("text", JSON_TEXTS)
def test_the_fast_json_path_gives_what_the_full_path_gives(text, allow_message, monkeypatch):
    from budgetgym.core import actions

    fast = _outcome(text, allow_message)
    monkeypatch.setattr(actions, "_fast_json_calls", lambda text: None)
    assert fast == _outcome(text, allow_message)


json_leaves = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**70, max_value=10**70),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
json_values = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["mv", "ls", "tag", "other"]), arguments=json_values, wrap=st.booleans(),
       raw=st.text(max_size=30))
def test_fast_json_path_agrees_with_the_full_path_on_any_json(name, arguments, wrap, raw):
    from budgetgym.core import actions

    call = {"name": name, "arguments": arguments}
    texts = [json.dumps([call] if wrap else call), json.dumps(call, ensure_ascii=False) + raw, "{" + raw, "[" + raw]
    original = actions._fast_json_calls
    for text in texts:
        fast = _outcome(text, True)
        actions._fast_json_calls = lambda text: None
        try:
            assert fast == _outcome(text, True), text
        finally:
            actions._fast_json_calls = original



# Mostly the simple form, with each way out of it now and then.
_call_names = st.sampled_from(["mv", "ls", "tag", "other"] * 8 + ["True", "None", "lambda", "mv.x"])
_argument_names = st.sampled_from(["source", "destination", "items", "path", "x"] * 8 + ["True", "if", "é"])
_quoted = st.builds(lambda quote, body: quote + body + quote, st.sampled_from(["'", '"']),
                    st.one_of(st.text(alphabet=st.sampled_from(list("ab (),=[]#-1")), max_size=8),
                              st.text(alphabet=st.sampled_from(list("ab('\"\\\n\t1é")), max_size=4)))
_number = st.one_of(st.from_regex(r"-?(0|[1-9][0-9]{0,21})(\.[0-9]{1,22})?", fullmatch=True),
                    st.from_regex(r"-?[0-9]{1,3}(\.[0-9]{0,2})?(e[0-9])?", fullmatch=True))
_scalar = st.one_of(_quoted, _number, st.sampled_from(["True", "False", "None"] * 2 + ["Truex", "x", "b'x'"]))
_list = st.builds(lambda items, comma: "[" + ", ".join(items) + ("," if comma else "") + "]",
                  st.lists(_scalar, max_size=3), st.booleans())
_value = st.one_of(_scalar, _scalar, _scalar, _list, st.sampled_from(["{'a': 1}", "(1, 2)", "'a' 'b'", "-x"]))
_space = st.sampled_from(["", " ", "  "] * 8 + ["\t", "\n"])
_argument = st.builds(lambda name, s1, s2, value: f"{name}{s1}={s2}{value}", _argument_names, _space, _space, _value)
_call = st.builds(lambda name, arguments, positional, comma: f"{name}(" + ", ".join(positional + arguments) +
                  ("," if comma and arguments else "") + ")",
                  _call_names, st.lists(_argument, max_size=3), st.sampled_from([[]] * 5 + [["'a'"], ["1"]]), st.booleans())


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # Python's parser on generated escapes
@settings(max_examples=800, deadline=None)
@given(calls=st.lists(_call, min_size=1, max_size=3), bracket=st.booleans(), separator=st.sampled_from([", ", ",", " , ", ",\n"]))
def test_the_simple_call_path_gives_what_the_parser_gives(calls, bracket, separator):
    """Call syntax in the simple form is read without Python's parser: the same calls, the same
    values and types (repr: True is not 1, -0.0 is not 0), or the same error, as through ast."""
    from budgetgym.core import actions

    text = separator.join(calls)
    if bracket or len(calls) > 1:
        text = f"[{text}]"
    original = actions._simple_calls
    fast = repr(_outcome(text, True))
    actions._simple_calls = lambda text: None
    try:
        assert fast == repr(_outcome(text, True)), text
    finally:
        actions._simple_calls = original


def test_the_simple_call_path_reads_the_common_form():
    from budgetgym.core import actions

    text = "[mv(source='a.txt', destination=\"b/\", overwrite=False), tag(items=[1, -2, 3,]), ls()]"
    assert actions._simple_calls(text) == [ToolCall("mv", {"source": "a.txt", "destination": "b/", "overwrite": False}),
                                           ToolCall("tag", {"items": [1, -2, 3]}), ToolCall("ls", {})]
    for other in ("mv('a.txt', destination='b')", "tag(items=[1], items=[2])", "ls(path='a\\b')", "ls(path=1e3)",
                  "ls(path='é')", "[ls(),]", "ls(path='a'\n)"):
        assert actions._simple_calls(other) is None, other


# ---------------------------------------------------------------------------- compiled and shared schemas

def test_tools_with_the_same_schema_share_one_compiled_validator():
    schema = {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}}, "additionalProperties": False}
    first, second = Tool("a", "A.", schema), Tool("b", "B.", json.loads(json.dumps(schema)))
    assert first.validator is second.validator
    assert first.validation_error({"q": "x"}) is not None and second.validation_error({"q": "xy"}) is None


def test_an_invalid_schema_is_refused_when_compiled():
    import jsonschema

    tool = Tool("bad", "Bad.", {"type": "object", "properties": {"x": {"type": "no such type"}}})
    with pytest.raises(jsonschema.SchemaError):
        tool.compile()


def test_the_shared_schema_is_read_only_json_and_copies_are_plain():
    import copy
    import pickle

    shared = MV.shared_schema
    assert shared == MV.openai_schema() and json.loads(json.dumps(shared)) == shared
    with pytest.raises(TypeError, match="read-only"):
        shared["function"]["name"] = "x"
    with pytest.raises(TypeError, match="read-only"):
        shared["function"]["parameters"]["required"].append("x")
    for copied in (copy.deepcopy(shared), pickle.loads(pickle.dumps(shared))):
        assert copied == shared and type(copied) is dict
        assert type(copied["function"]["parameters"]["required"]) is list
        copied["function"]["parameters"]["required"].append("x")  # a copy is the caller's to change
    assert MV.shared_schema["function"]["parameters"]["required"] == ["source", "destination"]


def test_a_tool_pickles_without_its_compiled_code():
    import pickle

    MV.compile()
    copied = pickle.loads(pickle.dumps(MV))
    assert copied == MV and copied.validation_error({"source": 1, "destination": "b"}) is not None


# ------------------------------------------------------------------ limits checked before parsing

from budgetgym.core.actions import MAX_CALL_CODE, MAX_NESTING_DEPTH, MAX_OPERATORS, MAX_VALUES  # noqa: E402


@pytest.mark.parametrize("text,match", [
    ("[" * 1000 + "]" * 1000, "nested 1000 levels deep"),
    ('{"name": "tag", "arguments": ' + '{"a": ' * 500 + "1" + "}" * 501, "nested 501 levels deep"),
    ('{"name": "tag", "arguments": "' + "[" * 900 + "]" * 900 + '"}', "not valid JSON: The JSON is nested 900"),
    ('{"name": "tag", "arguments": {"items": [' + "1," * 3000 + "1]}}", "holds about 3004 values"),
    ("tag(items=" + "[" * 40 + "]" * 40 + ")", "nested 41 levels deep"),
    ("tag(items=" + "-" * 3000 + "1)", "holds 1?[0-9]{4} operators"),
    ("tag(items=" + "-" * 30000 + "1)", "outside its string literals"),
    ("tag(items=" + "not " * 1000 + "1)", "'not' is a Python keyword"),
    ("tag(items=" + "lambda:" * 300 + "1)", "'lambda' is a Python keyword"),
    ("tag(items=" + "1 if 1 else " * 300 + "1)", "'if' is a Python keyword"),
    ("tag(items=a" + ".b" * 1000 + ")", "holds 1?[0-9]{4} operators"),
    ("tag(items=a" + "()" * 1000 + ")", "holds 1?[0-9]{4} operators"),
    ("tag(items=a" + "[0]" * 1000 + ")", "holds 1?[0-9]{4} operators"),
    ("tag(items=" + "1+" * 1000 + "1)", "holds 1?[0-9]{4} operators"),
    ("tag(" + "1," * 1500 + ")", "holds about 1500 values"),
    ("tag(items=f'{" + "-" * 3000 + "1}')", "f-strings are not"),
    ("tag(items=1) # '\ntag(items=" + "-" * 1000 + "1)", "holds 1?[0-9]{4} operators"),
    ('tag(items="""a"b""", meta=' + "-" * 1000 + "1)", "holds 1?[0-9]{4} operators"),
    ("</tool_call>" * 2700 + "<tool_call>" * 2700, r"Too many <tool_call> blocks \(2700\)"),
    ("<tool_call>" * 20 + "</tool_call>" * 20, "opens inside another"),
    ('ls(path="\ud800")', "lone surrogate"),
])
def test_inputs_that_once_raised_or_stalled_are_refused_with_a_message(text, match):
    """Each input is refused by a linear check before json.loads or ast.parse: no RecursionError,
    MemoryError or quadratic scan."""
    with pytest.raises(ActionError, match=match):
        parse_action(text, TOOLS)


def test_inputs_within_the_limits_still_parse():
    deep = "[" * (MAX_NESTING_DEPTH - 3) + "1" + "]" * (MAX_NESTING_DEPTH - 3)
    assert parse_action('{"name": "tag", "arguments": {"items": [1], "meta": {"x": ' + deep + "}}}", TOOLS).calls
    assert parse_action("tag(items=[1], meta={'x': " + deep + "})", TOOLS).calls
    many = list(range(-MAX_VALUES // 2 + 10, 0))
    assert parse_action(f"tag(items={many})", TOOLS).calls[0].arguments == {"items": many}
    assert parse_action(json.dumps({"name": "tag", "arguments": {"items": many}}), TOOLS).calls
    text = "x, " * 30_000  # commas and brackets inside strings count for nothing
    assert parse_action(json.dumps({"name": "mv", "arguments": {"source": text, "destination": "[" * 100}}), TOOLS).calls
    assert parse_action(f"mv(source={text!r}, destination={'(' * 100!r})", TOOLS).calls
    assert parse_action('mv(source="""it\'s "quoted" # not a comment""", destination=\'b\')', TOOLS).calls
    numbers = parse_action("tag(items=[], meta={'x': [1e-05, -2.5e+300, 0x1F, 1_000, .5]})", TOOLS)
    assert numbers.calls[0].arguments["meta"] == {"x": [1e-05, -2.5e+300, 31, 1000, 0.5]}
    assert MAX_OPERATORS < 1500 and MAX_CALL_CODE < 8192  # the chains Python's parser survives


def test_prose_that_opens_like_a_call_stays_a_message():
    text = "Note (this is not a call, it is what I did)"
    assert parse_action(text, TOOLS, allow_message=True).is_message


class _Finalized:
    """Cyclic garbage with a finalizer: collecting it runs Python code, where threads switch."""

    def __del__(self) -> None:
        for _ in range(3):
            pass


def test_threads_parsing_call_syntax_at_once_do_not_break_each_others_parse():
    """Python 3.11's AST builder keeps one depth counter for all threads: two parses at once (envs
    stepped from a thread pool) failed with "SystemError: AST constructor recursion depth mismatch"
    when a collection ran Python code mid-parse. Parses take turns; this stress makes the race."""
    import gc
    import sys
    import threading

    errors: list[str] = []

    def work() -> None:
        try:
            for i in range(2000):
                assert parse_action(f"[tag([{i}]), tag(items=[{i}]), ls('/a')]", TOOLS).calls[0].arguments == {"items": [i]}
                if i % 5 == 0:
                    for _ in range(50):
                        a, b = _Finalized(), _Finalized()
                        a.other, b.other = b, a
        except Exception as err:  # noqa: BLE001 - collected for the assertion
            errors.append(repr(err))

    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50, 2, 2)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    assert errors == []


def test_invalid_escapes_in_call_syntax_neither_warn_nor_depend_on_the_hosts_warning_filters(capfd):
    import warnings

    tools = {"f": Tool("f", "F.", {"type": "object", "properties": {"x": {"type": "string"}}})}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a host that runs with -W error
        action = parse_action('f(x="a\\d b", )', tools)
    assert action.calls[0].arguments == {"x": "a\\d b"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parse_action('f(x="\\q")', tools)
    assert not caught and capfd.readouterr().err == ""
