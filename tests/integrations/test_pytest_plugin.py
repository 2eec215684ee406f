"""The pytest plugin, enabled by the ``pytest11`` entry point: run in inner pytest sessions."""

import pytest

from budgetgym.testing import assert_solves, required_successes

pytest_plugins = ["pytester"]

FC = "budgetgym/FunctionCalling-v0"

TESTS = f'''
import json

STALL = json.dumps({{"name": "no_such_tool", "arguments": {{}}}})


def test_env_by_id_with_a_budget(budgetgym_env):
    env = budgetgym_env("{FC}", budget=2, reveal="total", split="test")
    observation, info = env.reset(seed=0)
    assert info["budget"]["cap"] == 2 and observation.endswith("[Turn budget: you have 2 turns in total.]")


def test_the_oracle_solves_within_the_full_budget(assert_solves):
    report = assert_solves("oracle", "{FC}", tasks=2, attempts=2, at_least=2, split="test")
    assert report.success_rate == 1.0 and len(report.tasks) == 2


def test_an_agent_object_is_played(assert_solves):
    from budgetgym.eval.agents import NoisyOracleAgent

    assert_solves(NoisyOracleAgent(0.0), "{FC}", tasks=1, attempts=3, at_least=1.0, split="test")


def test_a_stalling_agent_fails(assert_solves):
    assert_solves(lambda observation, info, env: STALL, "{FC}", tasks=1, turns=3, attempts=2, at_least=0.5,
                  split="test")


def test_the_oracle_under_a_one_turn_cap_fails(assert_solves):
    assert_solves("oracle", "{FC}", tasks=["fc-curated-filesystem-project-cleanup"], turns=1, attempts=2,
                  at_least=1, split="test")
'''


def test_fixtures_come_from_the_installed_entry_point(pytester):
    """A subprocess pytest with nothing but the installed package: the entry point enables the plugin."""
    pytester.makepyfile(test_agent=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3, failed=2)
    output = result.stdout.str()
    # The failure messages: counts per task, then the failing episode's transcript.
    # (fnmatch reads "[" as a character class: "[[]" is a literal one.)
    result.stdout.fnmatch_lines([
        "*1 of 1 tasks of budgetgym/FunctionCalling-v0 not solved within 3 turns in at least 1 of 2 attempts:*",
        "*: solved 0 of 2*",
        "*Transcript of *, attempt 1 (seed 0):*",
        '*[[]turn 1] action: {"name": "no_such_tool", "arguments": {}}*',
        "*[[]turn 1] observation: Invalid action: *",
        "*[[]end] truncated: out of turns after 3 turns of a 3-turn cap*",
    ])
    result.stdout.fnmatch_lines([
        "*not solved within 1 turn in at least 1 of 2 attempts:*",
        "*fc-curated-filesystem-project-cleanup: solved 0 of 2*",
        "*[[]start] You are the file assistant*",
        "*User: In /projects/app, rename draft.md to README.md.*",
        '*[[]turn 1] action: {"name": "move"*',
        "*[[]end] truncated: out of turns after 1 turn of a 1-turn cap*",
    ])
    assert "fixture 'budgetgym_env' not found" not in output
    assert "budgetgym/testing/__init__.py" not in output  # the helper's own frames are hidden


def test_envs_made_by_the_fixture_are_closed(pytester):
    pytester.makepyfile(test_closing='''
        made = []

        def test_make(budgetgym_env):
            made.append(budgetgym_env("budgetgym/FunctionCalling-v0"))
            made[-1].reset(seed=0)

        def test_closed_after():
            env = made[0].unwrapped
            assert not env._ready  # close() ends the episode
    ''')
    pytester.runpytest("-p", "no:cacheprovider", "-q").assert_outcomes(passed=2)


def test_shares_and_counts():
    assert required_successes(0.5, 4) == 2 and required_successes(0.51, 4) == 3 and required_successes(3, 4) == 3
    for bad in (0, 5, 0.0, 1.5, True, "2"):
        with pytest.raises(ValueError):
            required_successes(bad, 4)
    with pytest.raises(ValueError, match="attempts"):
        assert_solves("oracle", FC, tasks=1, attempts=0)
    with pytest.raises(TypeError, match="agent must be"):
        assert_solves(42, FC, tasks=1)
