"""TextEnv keeps the parse of each action text it sees (``TextEnv._parse``): a kept parse must be the
parse, for the tools of the moment, and nothing a refusal or a long text could grow."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetgym.core import ActionError, Tool, parse_action
from budgetgym.core import env as core_env
from tests.toy_env import ADD, SAY, CounterEnv


def fresh_env() -> CounterEnv:
    env = CounterEnv()
    env.reset(seed=0, options={"task_id": "toy-01"})
    return env


def direct(env: CounterEnv, text: str):
    """The parse of ``text`` by the shared parser itself, as the env's rules ask it."""
    return parse_action(text, env.tools, bare=env._parse_bare, allow_message=env.accepts_messages,
                        max_calls=env.max_calls_per_turn, rule=env._action_rule)


def test_a_text_parsed_again_is_the_same_calls_in_a_new_action():
    env = fresh_env()
    first, again, third = env.parse("add 2"), env.parse("add 2"), env.parse("add 2")
    assert third == again == first == direct(env, "add 2")
    assert third is not again  # families may tell turns apart by the Action's identity
    assert third.calls[0] is again.calls[0]  # the kept calls themselves, shared
    with pytest.raises(TypeError, match="read-only"):
        again.calls[0].arguments["n"] = 3  # so nobody can change what the next turn runs
    assert env.step("add 2")[0] == "Counter: 2."


def test_a_parse_with_a_list_or_an_object_for_an_argument_is_not_kept():
    # A tool may change a list it is handed (its keyword arguments are a copy, their values are not).
    env = fresh_env()
    env.tools = {"add": ADD, "say": SAY, "log": Tool("log", "Log values.", {
        "type": "object", "properties": {"values": {"type": "array"}}, "required": ["values"]})}
    first = env.parse('log(values=["a"])')
    first.calls[0].arguments["values"].append("b")
    assert env.parse('log(values=["a"])').calls[0].arguments == {"values": ["a"]}
    assert 'log(values=["a"])' not in env._parses


def test_a_kept_parse_is_not_read_against_other_tools():
    env = fresh_env()
    assert env.parse('say(text="hi")').calls[0].name == "say"
    env.tools = {"add": ADD}  # a new mapping: a family's tools of a new user turn
    with pytest.raises(ActionError, match="say"):
        env.parse('say(text="hi")')
    env.tools = {"add": ADD, "say": SAY}
    assert env.parse('say(text="hi")').calls[0].arguments == {"text": "hi"}


def test_a_kept_parse_outlives_turns_with_other_tools():
    # Families keep one tools mapping per task (or user turn): texts of a task that comes back are
    # still kept after episodes of tasks with other tools.
    env = fresh_env()
    first_tools = env.tools
    env.parse("add 1")
    kept = env.parse("add 1").calls[0]
    env.tools = {"add": ADD}
    assert env.parse("add 2").calls[0].arguments == {"n": 2}
    env.tools = first_tools
    assert env.parse("add 1").calls[0] is kept


def test_a_refusal_is_not_kept_and_is_refused_again_alike():
    env = fresh_env()
    with pytest.raises(ActionError) as first:
        env.parse("add 7")  # the bare form, out of the schema's range
    with pytest.raises(ActionError) as again:
        env.parse("add 7")
    assert str(again.value) == str(first.value)
    assert "add 7" not in env._parses


def test_the_kept_parses_are_bounded_and_long_texts_are_not_kept():
    env = fresh_env()
    for n in range(core_env._PARSES_KEPT + 50):
        env.parse(f'say(text="{n}")')
    assert len(env._parses) == core_env._PARSES_KEPT
    assert 'say(text="0")' not in env._parses  # the oldest forgotten first
    long_text = 'say(text="' + "x" * core_env._PARSED_TEXT_MAX + '")'
    assert env.parse(long_text).calls[0].arguments["text"] == "x" * core_env._PARSED_TEXT_MAX
    assert long_text not in env._parses


def test_a_sibling_with_other_tools_leaves_this_envs_parses_as_they_were():
    # A restore rebuilds the episode on a sibling (a shallow copy, sharing the kept parses) and swaps
    # only on success: a refused restore whose replay met other tools must not leave their parses
    # to be read against this env's tools.
    env = fresh_env()
    assert env.parse('say(text="hi")').calls[0].name == "say"
    sibling = env._sibling()
    sibling.tools = {"add": ADD, "say": Tool("say", "Say a number.", {
        "type": "object", "properties": {"text": {"type": "integer"}}, "required": ["text"]})}
    with pytest.raises(ActionError):
        sibling.parse('say(text="hi")')
    assert sibling.parse("say(text=3)").calls[0].arguments == {"text": 3}
    assert env.parse('say(text="hi")').calls[0].arguments == {"text": "hi"}  # this env's tools, still
    with pytest.raises(ActionError):
        env.parse("say(text=3)")


def test_a_step_reads_a_kept_parse_as_it_read_the_first():
    env = fresh_env()
    observations = [env.step("add 1")[0] for _ in range(2)]
    assert observations == ["Counter: 1.", "Counter: 2."]


_TEXTS = st.one_of(
    st.text(max_size=40),
    st.builds(lambda n: f"add {n}", st.integers(-2, 6)),
    st.builds(lambda s: f"say(text={s!r})", st.text(max_size=12)),
    st.builds(lambda n, s: f'[add(n={n}), say(text="{s}")]', st.integers(0, 4), st.sampled_from(["a", "", "\\u0000"])),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=12))
def test_every_text_parses_through_the_env_as_the_parser_parses_it(texts):
    env = fresh_env()
    for text in texts + texts:  # each text a second time, its parse kept or refused again
        try:
            expected = direct(env, text)
        except ActionError as err:
            with pytest.raises(ActionError) as refused:
                env.parse(text)
            assert str(refused.value) == str(err)
        else:
            assert env.parse(text) == expected
