"""budgetgym/FunctionCalling-v0 on its real backends: oracle, failure states, malformed calls, tool
errors, impossible and ambiguous requests, scoring, determinism and the generators. No mocks."""

from __future__ import annotations

import collections
import copy
import json
import random
import re

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import MAX_CALLS_PER_STEP, SnapshotError, TaskSet, ToolCall, load_failure_states, load_tasks, rollout, write_jsonl
from budgetgym.core.tasks import ASSETS
from budgetgym.envs.function_calling import FunctionCallingEnv
from budgetgym.envs.function_calling.assets import main as assets_main, shipped_failure_states, shipped_tasks
from budgetgym.envs.function_calling.calendar.generator import clock_spellings, date_spellings
from budgetgym.envs.function_calling.domains import DOMAINS
from budgetgym.core.failures import oracle_plan
from budgetgym.envs.function_calling.mistakes import KINDS
from budgetgym.envs.function_calling.generate import LONG_MIN_BUDGET, LONG_MIN_USER_TURNS, generate_tasks
from budgetgym.envs.function_calling.env import OBJECTION
from budgetgym.envs.function_calling.scoring import declines, has_fact

ENV_ID = "budgetgym/FunctionCalling-v0"
TASKS = load_tasks("function_calling")
FAILURES = load_failure_states("function_calling")


def make(**kwargs) -> gym.Env:
    return gym.make(ENV_ID, **kwargs)


def run_oracle(env: gym.Env) -> tuple[dict, int]:
    """Play the oracle to the end of the episode; return the last info and the steps taken."""
    played = rollout(env, "oracle", reset=False)
    for step in played.steps:
        assert step.info["action_valid"], (step.action, step.info["action_error"])
    return played.last_info, played.turns


def state_of(env: gym.Env) -> dict:
    return copy.deepcopy(dict(env.unwrapped.backend_state))


def first_task(predicate) -> str:
    return next(t.id for t in TASKS if predicate(t))


# ---------------------------------------------------------------------------- assets


def test_assets_meet_the_counts():
    splits = collections.Counter(t.split for t in TASKS)
    assert len(TASKS) >= 150 and splits["train"] > 0 and splits["test"] > 0
    assert {t["domain"] for t in TASKS} == set(DOMAINS) and len(DOMAINS) >= 4
    assert any(t["source"] == "curated" for t in TASKS)
    for task in TASKS:
        assert task.max_turns == max(6, 2 * task["oracle_turns"])
    kinds = collections.Counter(state["kind"] for state in FAILURES)
    assert len(FAILURES) >= 100 and set(kinds) == set(KINDS) and len(KINDS) >= 5
    assert len({state["id"] for state in FAILURES}) == len(FAILURES)


def test_assets_are_byte_identical_to_what_their_generators_write(tmp_path):
    # The generators and the failure builder run on the core kit; the shipped files are what they write.
    folder = ASSETS / "function_calling"
    write_jsonl(tmp_path / "tasks.jsonl", shipped_tasks())
    assert (tmp_path / "tasks.jsonl").read_bytes() == (folder / "tasks.jsonl").read_bytes()
    write_jsonl(tmp_path / "failure_states.jsonl", shipped_failure_states(TASKS))
    assert (tmp_path / "failure_states.jsonl").read_bytes() == (folder / "failure_states.jsonl").read_bytes()


def test_tasks_cover_the_request_types():
    turns = [turn for task in TASKS for turn in task["turns"]]
    assert sum(turn["decline"] for turn in turns) >= 20  # impossible requests
    assert sum(bool(turn["facts"]) for turn in turns) >= 50  # answers that must carry facts
    assert sum(len(turn["lookups"]) >= 1 for turn in turns) >= 50  # information from a result first
    assert sum(len(task["turns"]) >= 3 for task in TASKS) >= 50  # real conversations
    assert any(len(task["tools"]) < len(DOMAINS[task["domain"]].tools) for task in TASKS)  # a tool is missing


def test_long_conversations_on_both_splits_with_failure_states():
    # Long horizons (issue 22): conversations of 8+ user turns with full budgets of 30+, in every
    # domain and split, and failure states on them in both splits.
    long = [task for task in TASKS if task["source"] == "generated-long"]
    assert len(long) >= 40
    for task in long:
        assert len(task["turns"]) >= LONG_MIN_USER_TURNS == 8 and task.max_turns >= LONG_MIN_BUDGET == 30, task.id
    assert {(task["domain"], task.split) for task in long} == {(d, s) for d in DOMAINS for s in ("train", "test")}
    ids = {task.id: task.split for task in long}
    states = [state for state in FAILURES if state["task_id"] in ids]
    assert {ids[state["task_id"]] for state in states} == {"train", "test"}
    assert {state["kind"] for state in states if ids[state["task_id"]] == "test"} == set(KINDS)
    assert len(states) >= 30


# ---------------------------------------------------------------------------- oracle


@pytest.mark.parametrize("split", ["train", "test"])
def test_oracle_solves_every_task_within_its_budget(split):
    env = make(split=split)
    for index in range(len(env.unwrapped.tasks)):
        env.reset(options={"task_index": index})
        task = env.unwrapped.task
        info, steps = run_oracle(env)
        assert info["success"] and info["progress"] == 1.0, task.id
        assert steps == task["oracle_turns"] <= task.max_turns, task.id


def test_oracle_answers_none_once_the_episode_is_over():
    env = make()
    env.reset(options={"task_index": 0})
    run_oracle(env)
    assert env.unwrapped.oracle_action() is None


# ---------------------------------------------------------------------------- failure states


@pytest.mark.parametrize("fast", [True, False], ids=["fast_restore", "replay"])
def test_every_failure_state_restores_and_the_oracle_recovers(fast):
    env = make()
    reference = make()
    for failure in FAILURES:
        snapshot = copy.deepcopy(dict(failure["snapshot"]))
        assert snapshot["task_id"] == failure["task_id"] and failure["description"]
        assert 0 <= failure["error_step"] < len(snapshot["transcript"])
        if not fast:
            snapshot["state"] = None  # the universal path: replay every action
        observation, info = env.reset(options={"snapshot": snapshot})
        assert observation == snapshot["transcript"][-1][1]
        assert info["turn"] == snapshot["turn"] and not info["success"]
        reference.reset(options={"snapshot": failure["snapshot"]})
        assert env.unwrapped.backend_state == reference.unwrapped.backend_state, failure["id"]
        # The fast path counts the calls from the observations; the replay counts them as it steps.
        assert info["calls"] == reference.unwrapped.calls > 0, failure["id"]
        info, steps = run_oracle(env)
        assert info["success"], failure["id"]
        assert info["turn"] <= env.unwrapped.task.max_turns


def test_no_failure_state_holds_a_failed_answer():
    # A failed answer ends the episode: no state to recover from holds one.
    assert "premature_answer" not in KINDS
    for failure in FAILURES:
        assert not any(observation.startswith(OBJECTION) for _, observation in failure["snapshot"]["transcript"])


def test_a_failure_state_really_holds_its_mistake():
    # The state-changing kinds leave the service in a state the clean solution never passes through.
    env = make()
    for failure in FAILURES:
        if failure["kind"] not in ("wrong_argument", "wrong_tool", "destructive_call"):
            continue
        env.reset(options={"task_id": failure["task_id"]})
        project = DOMAINS[env.unwrapped.task["domain"]].project
        clean = [json.dumps(project(env.unwrapped.backend_state), sort_keys=True)]
        while (action := env.unwrapped.oracle_action()) is not None:
            env.step(action)
            clean.append(json.dumps(project(env.unwrapped.backend_state), sort_keys=True))
        env.reset(options={"snapshot": failure["snapshot"]})
        assert json.dumps(project(env.unwrapped.backend_state), sort_keys=True) not in clean, failure["id"]


def test_the_oracle_repairs_any_domain_mistake_at_any_point():
    # Beyond the curated states: every scripted mistake, at every step of fresh tasks that offer
    # every tool, is repaired by the oracle (budgets are widened: this is about the planner).
    records = [r for r in generate_tasks(seed=21, n=60) if len(r["tools"]) == len(DOMAINS[r["domain"]].tools)]
    for record in records:
        record["max_turns"] = 200
    env = make(tasks=TaskSet(records))
    tried = 0
    for task in env.unwrapped.tasks:
        domain, rng = DOMAINS[task["domain"]], random.Random(task.id)
        for snapshot, intended, _ in oracle_plan(env, task)[0]:
            env.reset(options={"snapshot": snapshot})
            state, call = env.unwrapped.backend_state, None if intended.is_message else intended.calls[0]
            mistakes = [domain.mistakes.destructive(state, rng)]
            if call is not None:
                mistakes += [domain.mistakes.wrong_argument(call, state, rng), domain.mistakes.wrong_tool(call, state, rng)]
            for mistake in filter(None, mistakes):
                env.reset(options={"snapshot": snapshot})
                env.step(mistake.to_json())
                info, _ = run_oracle(env)
                assert info["success"], (task.id, mistake)
                tried += 1
    assert tried > 300


def test_snapshot_mid_turn_restores_the_same_way_both_paths():
    env = make()
    env.reset(options={"task_id": first_task(lambda t: len(t["turns"][0]["lookups"]) >= 2)})
    env.step(env.unwrapped.oracle_action())
    snapshot = env.unwrapped.snapshot()
    json.dumps(snapshot)  # JSON-serialisable
    expected_next = env.unwrapped.oracle_action()
    for state in (snapshot["state"], None):
        env.reset(options={"snapshot": {**snapshot, "state": state}})
        assert env.unwrapped.oracle_action() == expected_next


def test_snapshot_is_a_copy_and_restoring_twice_works():
    env = make()
    env.reset(options={"task_index": 3})
    snapshot = env.unwrapped.snapshot()
    frozen = json.dumps(snapshot, sort_keys=True)
    for _ in range(2):
        env.reset(options={"snapshot": snapshot})
        run_oracle(env)
    assert json.dumps(snapshot, sort_keys=True) == frozen


def test_a_corrupt_fast_state_is_refused():
    env = make()
    env.reset(options={"task_index": 0})
    snapshot = env.unwrapped.snapshot()
    for bad in ({"backend": [], "user_turn": 0, "turn_calls": []}, {"backend": {}, "user_turn": 99, "turn_calls": []}, 7):
        with pytest.raises(SnapshotError):
            env.reset(options={"snapshot": {**snapshot, "state": bad}})
    # A restore remembers the digests whose state passed the schema; an edited state has another
    # digest, so it is checked in full even with its digest recomputed (a forgery).
    from budgetgym.core.env import snapshot_digest

    env.reset(options={"snapshot": snapshot})
    forged = copy.deepcopy(snapshot)
    forged["state"]["backend"]["cwd"] = 7
    forged["digest"] = snapshot_digest(forged)
    with pytest.raises(SnapshotError, match="state schema"):
        env.reset(options={"snapshot": forged})


def test_a_fast_state_outside_its_tasks_bounds_is_refused_and_changes_nothing():
    """Past its user turns, more calls than its budget allows, a tool it does not offer: each refused,
    with its cause where the snapshot's digest matches (else as a state its transcript does not give)."""
    from budgetgym.core.env import snapshot_digest

    env = make()
    env.reset(options={"task_index": 0})
    task = env.unwrapped.task
    snapshot = env.unwrapped.snapshot()
    state = snapshot["state"]
    offered = task["tools"][0]
    cases = {
        "user turns": {**state, "user_turn": len(task["turns"]) + 1},
        "calls in the user turn": {**state, "turn_calls": [[offered, {}]] * (MAX_CALLS_PER_STEP * task.max_turns + 1)},
        "does not offer": {**state, "turn_calls": [["format_disk", {}]]},
    }
    env.step(env.unwrapped.oracle_action())
    before = env.unwrapped.snapshot()
    for cause, bad in cases.items():
        forged = {**snapshot, "state": bad}
        for candidate, message in ((forged, "digest does not match"), ({**forged, "digest": snapshot_digest(forged)}, cause)):
            with pytest.raises(SnapshotError, match=message):
                env.reset(options={"snapshot": candidate})
            assert env.unwrapped.snapshot() == before


# ---------------------------------------------------------------------------- malformed calls


MALFORMED = {
    "unknown tool": '{"name": "format_disk", "arguments": {}}',
    "missing argument": '{"name": "move", "arguments": {"source": "/docs"}}',
    "mistyped argument": '{"name": "delete", "arguments": {"path": 17}}',
    "extra argument": '{"name": "delete", "arguments": {"path": "/x", "force": true}}',
    "bad JSON": '{"name": "delete", "arguments": {"path": "/x"',
    "bad call syntax": 'delete(path="/x"',
    "one bad call among good ones": '[{"name": "make_directory", "arguments": {"path": "/fresh"}}, '
                                    '{"name": "delete", "arguments": {"path": 3}}]',
    "one unknown call after a good one": 'make_directory(path="/fresh")\nformat_disk()',
    "a number that is not finite": '[{"name": "make_directory", "arguments": {"path": "/fresh"}}, '
                                   '{"name": "delete", "arguments": {"path": NaN}}]',
}


@pytest.mark.parametrize("action", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_calls_are_refused_and_change_nothing(action):
    env = make()
    env.reset(options={"task_id": first_task(lambda t: t["domain"] == "filesystem" and "delete" in t["tools"])})
    before = state_of(env)
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation.startswith("Invalid action: ")
    assert info["action_valid"] is False and info["action_error"] and info["turn"] == 1
    assert not terminated and reward == 0.0
    assert state_of(env) == before and env.unwrapped.user_turn == 0
    assert "make_directory" in observation or "Unknown tool" in observation or "delete" in observation or "move" in observation


def test_a_valid_batch_runs_every_call_in_order():
    env = make()
    env.reset(options={"task_id": first_task(lambda t: t["domain"] == "filesystem")})
    observation, *_ , info = env.step('make_directory(path="/fresh")\nwrite_file(path="/fresh/a.txt", content="hi")')
    assert info["action_valid"]
    results = [json.loads(line) for line in observation.splitlines()]
    assert results == [{"created": ["/fresh"]}, {"path": "/fresh/a.txt", "size": 2, "created": True}]
    assert env.unwrapped.backend_state["files"]["/fresh/a.txt"] == "hi"


# ---------------------------------------------------------------------------- tool errors


TOOL_ERRORS = [
    ("filesystem", 'read_file(path="/no/such/file.txt")', "No such file: /no/such/file.txt"),
    ("filesystem", 'delete(path="/")', "Cannot delete the root directory"),
    ("filesystem", 'make_directory(path="/a/b/c")', "No such directory: /a/b"),
    ("messaging", 'send_message(to="Nobody Here", text="hi")', "No contact named 'Nobody Here'"),
    ("messaging", 'read_message(message_id="m999")', "No message with id 'm999'"),
    ("calendar", 'create_event(title="x", date="2025-02-01", start="10:00", end="11:00")', "Cannot schedule in the past"),
    ("calendar", 'create_event(title="x", date="2025-03-04", start="11:00", end="10:00")', "must be after the start"),
    ("calendar", 'list_events(date="2025-02-30")', "Invalid date: 2025-02-30"),
    ("banking", 'transfer(from_account="checking", to_account="savings", amount=9999999)', "Insufficient funds"),
    ("banking", 'transfer(from_account="checking", to_account="savings", amount=1.005)', "at most two decimals"),
    ("banking", 'transfer(from_account="checking", to_account="checking", amount=1)', "must differ"),
    ("banking", 'sell_stock(symbol="ZZZZ", quantity=1)', "Unknown symbol 'ZZZZ'"),
]


@pytest.mark.parametrize("domain,action,message", TOOL_ERRORS, ids=[f"{d}:{m}" for d, _, m in TOOL_ERRORS])
def test_tool_errors_are_observations_and_change_nothing(domain, action, message):
    env = make()
    env.reset(options={"task_id": first_task(lambda t: t["domain"] == domain and t["source"] == "generated")})
    before = state_of(env)
    observation, _, terminated, _, info = env.step(action)
    assert info["action_valid"] is True and not terminated
    assert message in json.loads(observation)["error"]
    assert state_of(env) == before


def test_a_calendar_conflict_names_the_event_in_the_way():
    env = make()
    env.reset(options={"task_id": "fc-curated-calendar-dentist-shuffle"})
    observation, *_ = env.step('reschedule_event(event_id="e1", date="2025-03-06", start="10:30", end="11:30")')
    assert json.loads(observation) == {"error": "Conflicts with e2 'Budget sync' 10:00-11:00 on 2025-03-06"}


# ---------------------------------------------------------------------------- user turns and scoring


def test_an_impossible_request_must_be_declined_without_changes():
    env = make(retry_answers=True)
    env.reset(options={"task_id": "fc-curated-filesystem-tax-receipts"})
    while env.unwrapped.user_turn < 3:
        env.step(env.unwrapped.oracle_action())
    turn = env.unwrapped.task["turns"][3]
    assert turn["decline"]
    objection = f"{OBJECTION} My request was: {turn['request']}"
    observation, *_ = env.step("Done, I emailed it.")
    assert observation == objection and env.unwrapped.user_turn == 3
    env.step('delete(path="/documents/taxes/2023/return.txt")')
    observation, *_ = env.step("Sorry, I can't send emails.")
    assert observation == objection and env.unwrapped.user_turn == 3
    env.step('write_file(path="/documents/taxes/2023/return.txt", content="Tax return 2023: filed\\n")')
    observation, reward, terminated, _, info = env.step("Sorry, I can't send emails: I only have file tools.")
    assert terminated and info["success"] and reward == 1.0


def test_file_text_is_compared_by_its_lines():
    # Blank lines and a missing final newline do not matter to the user; the words do.
    env = make()
    env.reset(options={"task_id": "fc-curated-filesystem-tax-receipts"})
    while env.unwrapped.user_turn < 2:
        env.step(env.unwrapped.oracle_action())
    env.step('write_file(path="/documents/taxes/2024/total.txt", content="\\nTotal: 537.50  ")')
    env.step("Done.")
    assert env.unwrapped.user_turn == 3
    env.reset(options={"task_id": "fc-curated-filesystem-tax-receipts"})
    while env.unwrapped.user_turn < 2:
        env.step(env.unwrapped.oracle_action())
    env.step('write_file(path="/documents/taxes/2024/total.txt", content="Total: 537.5")')
    observation, reward, terminated, _, info = env.step("Done.")
    assert observation == OBJECTION and terminated and not info["success"] and reward == 0.0
    assert env.unwrapped.user_turn == 2


def test_an_ambiguous_request_is_answered_by_asking():
    env = make(retry_answers=True)
    env.reset(options={"task_id": "fc-curated-messaging-two-alexes"})
    env.step('find_contact(query="Alex")')
    observation, *_ = env.step("Which Alex do you mean?")
    assert observation.startswith(OBJECTION) and env.unwrapped.user_turn == 0
    observation, *_ = env.step("Do you mean Alex Berg or Alex Moreau?")
    assert observation == "User: Both of them, actually."


def test_a_premature_answer_fails_the_episode_and_the_user_says_only_that():
    env = make(reward_mode="progress")
    for task_id, turn_index in (("fc-curated-banking-rent-month", 0), ("fc-curated-filesystem-tax-receipts", 1)):
        env.reset(options={"task_id": task_id})
        while env.unwrapped.user_turn < turn_index:
            env.step(env.unwrapped.oracle_action())
        progress = env.unwrapped.user_turn / len(env.unwrapped.task["turns"])
        observation, reward, terminated, truncated, info = env.step("Paid the rent: moved 450.00 first.")
        assert observation == OBJECTION and terminated and not truncated and not info["success"]
        assert reward == 0.0 and info["progress"] == progress and env.unwrapped.oracle_action() is None
        # The ended episode restores as ended, both paths; a snapshot that goes on after it is refused.
        snapshot = env.unwrapped.snapshot()
        assert snapshot["failed"]
        for fast in (True, False):
            other = make(reward_mode="progress")
            copy_of = copy.deepcopy(snapshot)
            if not fast:
                copy_of["state"] = None
            other.reset(options={"snapshot": copy_of})
            assert not other.unwrapped.running and other.unwrapped.oracle_action() is None
        forged = copy.deepcopy(snapshot)
        forged["transcript"].append(["Done.", "User: Thanks, that's everything I needed."])
        forged["turn"] += 1
        del forged["digest"]
        with pytest.raises(SnapshotError):
            make().reset(options={"snapshot": forged})


def test_with_retry_answers_a_premature_answer_leaves_the_turn_open():
    env = make(reward_mode="progress", retry_answers=True)
    env.reset(options={"task_id": "fc-curated-banking-rent-month"})
    request = env.unwrapped.task["turns"][0]["request"]
    observation, reward, terminated, _, info = env.step("Paid the rent: moved 450.00 first.")
    assert observation == f"{OBJECTION} My request was: {request}"
    assert reward == 0.0 and info["progress"] == 0.0 and not terminated
    # Its snapshot restores in the lenient env only: the strict one never leaves a turn open.
    snapshot = env.unwrapped.snapshot()
    make(retry_answers=True).reset(options={"snapshot": copy.deepcopy(snapshot)})
    for fast in (True, False):
        copy_of = copy.deepcopy(snapshot)
        if not fast:
            copy_of["state"] = None
        with pytest.raises(SnapshotError):
            make().reset(options={"snapshot": copy_of})
    total = 0.0
    while (action := env.unwrapped.oracle_action()) is not None:
        _, reward, terminated, _, info = env.step(action)
        total += reward
        assert info["progress"] == env.unwrapped.user_turn / len(env.unwrapped.task["turns"])
    assert terminated and info["success"] and total == pytest.approx(1.0)


def test_facts_are_matched_by_value_and_as_whole_words():
    assert has_fact("The total is $1,250.00.", "1250.00") and has_fact("It is 1250", "1250.00")
    assert not has_fact("It is 12500", "1250") and not has_fact("room 4821", "482")
    assert has_fact("Sam Lee said so", "Sam Lee") and not has_fact("Sam Leeds said so", "Sam Lee")
    assert has_fact("at 9:30", ["09:30", "9:30"]) and not has_fact("at 19:30", ["09:30", "9:30"])
    assert has_fact("in /notes/keys.txt.", "/notes/keys.txt")
    assert has_fact("at 1 PM", clock_spellings("13:00")) and not has_fact("at 11 pm", clock_spellings("13:00"))
    assert has_fact("on Wednesday, March 5th", date_spellings("2025-03-05"))
    assert not has_fact("on March 15", date_spellings("2025-03-05"))


def test_declines_are_recognised():
    for message in ("Sorry, I can't do that.", "I cannot print files.", "Unfortunately there is no tool for it.",
                    "That isn't possible here.", "I don't have an email tool.", "Checking has insufficient funds."):
        assert declines(message), message
    for message in ("Done!", "I moved the file.", "Canned response sent."):
        assert not declines(message), message


def test_sparse_reward_is_paid_once_at_the_end():
    env = make()
    env.reset(options={"task_index": 5})
    rewards = []
    while (action := env.unwrapped.oracle_action()) is not None:
        _, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
    assert rewards[-1] == 1.0 and sum(rewards) == 1.0 and terminated and not truncated


def test_the_budget_truncates_a_stalling_agent():
    # A stalling answer ends the episode by default; with retry_answers it costs turns until the budget.
    env = make(retry_answers=True)
    _, info = env.reset(options={"task_index": 0})
    for turn in range(1, info["full_budget"] + 1):
        _, _, terminated, truncated, info = env.step("Let me think about it.")
        assert not terminated
    assert truncated and not info["success"]
    strict = make()
    strict.reset(options={"task_index": 0})
    _, _, terminated, truncated, info = strict.step("Let me think about it.")
    assert terminated and not truncated and not info["success"]


def test_the_first_observation_and_tools_follow_the_task():
    env = make()
    task = TASKS.get(first_task(lambda t: len(t["tools"]) < len(DOMAINS[t["domain"]].tools)))
    observation, info = env.reset(options={"task_id": task.id})
    assert observation == f"{task.instruction}\n\nUser: {task['turns'][0]['request']}"
    assert [tool["function"]["name"] for tool in info["tools"]] == list(task["tools"])
    missing = next(name for name in DOMAINS[task["domain"]].tools if name not in task["tools"])
    observation, *_ = env.step(json.dumps({"name": missing, "arguments": {}}))
    assert observation.startswith(f"Invalid action: Unknown tool '{missing}'")


# ---------------------------------------------------------------------------- robustness and determinism


def _argument_values():
    scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.text(max_size=30),
                       st.floats(allow_nan=True, allow_infinity=True),
                       st.sampled_from(["/", ".", "..", "m1", "e1", "p1", "AAPL"]))
    return st.recursive(
        scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=5)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_calls_never_raise_and_invalid_ones_change_nothing(data):
    env = make()
    domain = data.draw(st.sampled_from(sorted(DOMAINS)))
    env.reset(options={"task_id": first_task(lambda t: t["domain"] == domain)})
    tools = env.unwrapped.tools
    for _ in range(3):
        if data.draw(st.booleans()) and data.draw(st.booleans()):
            # A message (or junk): scored, never raises; a failed answer ends the episode.
            _, _, terminated, truncated, _ = env.step(data.draw(st.text(min_size=1, max_size=40)))
            if terminated or truncated:
                break
            continue
        tool = tools[data.draw(st.sampled_from(sorted(tools)))]
        arguments = {name: data.draw(_argument_values()) for name in tool.param_names if data.draw(st.booleans())}
        before = state_of(env)
        observation, _, terminated, truncated, info = env.step(json.dumps({"name": tool.name, "arguments": arguments}))
        assert isinstance(observation, str)
        if not info["action_valid"]:
            assert state_of(env) == before
        else:
            # One JSON result per call, separated by "\n" (text may hold U+2028 or U+0085, which
            # str.splitlines would also split on).
            assert len([json.loads(line) for line in observation.split("\n")]) == 1
        if terminated or truncated:
            break


def test_same_task_and_actions_give_the_same_observations():
    def transcript(seed):
        env = make()
        env.reset(seed=seed, options={"task_index": 11})
        rng = random.Random(0)
        out = []
        while (action := env.unwrapped.oracle_action()) is not None:
            if rng.random() < 0.3:
                action = rng.choice(['list_directory(path="/")', "I am done.", '{"bad": ', 'read_file(path="/nope")'])
            observation, _, terminated, truncated, _ = env.step(action)
            out.append(observation)
            if terminated or truncated:
                break
        return out
    assert transcript(1) == transcript(1) == transcript(2)


def test_generators_are_reproducible(tmp_path):
    first = generate_tasks(seed=5, n=12)
    assert first == generate_tasks(seed=5, n=12)
    assert generate_tasks(seed=5, n=4) == first[:4]  # task i does not depend on n
    assert [t["initial_state"] for t in generate_tasks(seed=6, n=4)] != [t["initial_state"] for t in first[:4]]
    for name in ("a.jsonl", "b.jsonl"):
        assert assets_main(["--seed", "5", "--n", "12", "--out", str(tmp_path / name)]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()] == \
        [json.loads(json.dumps(t)) for t in first]


def test_freshly_generated_tasks_run_in_the_env():
    records = generate_tasks(seed=11, n=40)
    env = FunctionCallingEnv(tasks=TaskSet(records), split="test")
    for index in range(len(env.tasks)):
        env.reset(options={"task_index": index})
        assert env.task.split == "test"
        assert rollout(env, "oracle", reset=False).success, env.task.id


def test_an_integral_float_for_an_integer_parameter_acts_as_the_integer():
    task_id = first_task(lambda t: t["domain"] == "banking" and "buy_stock" in t["tools"])
    envs = [make(), make()]
    for env in envs:
        env.reset(options={"task_id": task_id})
    as_int, *_ = envs[0].step('buy_stock(symbol="AAPL", quantity=2)')
    as_float, _, _, _, info = envs[1].step('{"name": "buy_stock", "arguments": {"symbol": "AAPL", "quantity": 2.0}}')
    assert info["action_valid"] and as_float == as_int and state_of(envs[0]) == state_of(envs[1])


def test_the_oracle_skips_a_lookup_made_in_any_spelling_and_after_a_restore():
    """Lookups made are found by value (key order, 2 and 2.0 alike), also when they were made before
    a fast restore; the oracle's answer does not depend on having been asked before."""
    task_id = first_task(lambda t: len(t["turns"][0]["lookups"]) >= 2)
    lookup = TASKS.get(task_id)["turns"][0]["lookups"][0]
    reordered = json.dumps({"arguments": dict(reversed(list(lookup["arguments"].items()))), "name": lookup["name"]})
    asked, silent = make(), make()
    asked.reset(options={"task_id": task_id})
    silent.reset(options={"task_id": task_id})
    first = asked.unwrapped.oracle_action()
    for env in (asked, silent):
        env.step(reordered)
    assert asked.unwrapped.oracle_action() == silent.unwrapped.oracle_action() != first
    snapshot = silent.unwrapped.snapshot()
    fresh = make()
    fresh.reset(options={"snapshot": snapshot})
    assert fresh.unwrapped.oracle_action() == silent.unwrapped.oracle_action()


# ---------------------------------------------------------------------------- scoring speed


SCORING_PIECES = ["can", "not", "can't", "won't be able", "Sorry", "ſorry", "unable", "no tool", "don't have",
                  "I'm afraid", "a", "b.c", "@", "x.example", "/", "docs", "2025-03-04", "09:30", "+1 555 201 4410",
                  "1,250.00", "12.5", " ", ".", "-", "+", "7", "é", "'", "\u2019"]


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(SCORING_PIECES), max_size=14))
def test_the_fast_scoring_patterns_find_what_the_plain_ones_find(pieces):
    """The lookaheads that let the decline and refusal patterns skip positions, and the value kinds
    left out when their character is absent, change no match."""
    from budgetgym.envs.function_calling import scoring

    message = "".join(pieces)
    for fast in (scoring._DECLINE_WORDS, scoring._REFUSAL):
        plain = re.compile(re.sub(r"^\(\?=\[\w+\]\)", "", fast.pattern), re.IGNORECASE)
        assert plain.pattern != fast.pattern
        assert bool(fast.search(message)) == bool(plain.search(message))
    numbers = {text.lstrip("-") for text in scoring._NUMBER.findall(scoring._WHOLE_VALUES.sub(" ", message))}
    assert scoring.stated_values(message) == {v.rstrip(".").lower() for v in scoring._VALUE.findall(message)} | numbers


def test_a_long_answer_is_scored_in_linear_time():
    """A 65,536-character word once took about 30 s (an email pattern tried from every position)."""
    from budgetgym.envs.function_calling import scoring

    turn = {"facts": ["1250", "Sam Lee"], "distractors": ["999"], "changes": True}
    for message in ("a" * 65_536, "1" * 65_536, ("x@y.co /a/b 2025-01-01 " * 3000)[:65_536]):
        assert scoring.answer_problem(turn, message) is not None


# ---------------------------------------------------------------------------- the shortest solution


def test_the_oracle_batches_and_its_turns_are_oracle_turns():
    """The oracle sends together the calls it can write from what it has seen (several in a turn
    on many tasks), every one of its actions is valid, and its turn count is the task's
    ``oracle_turns``: the dependency depth the merge attack below cannot beat."""
    env = make()
    batched = 0
    for task in TASKS:
        env.reset(options={"task_id": task.id})
        turns = 0
        while (action := env.unwrapped.structured_oracle()) is not None:
            batched += len(action.calls) > 1
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            assert info["action_valid"], (task.id, info["action_error"])
            turns += 1
        assert info["success"] and turns == task["oracle_turns"], task.id
    assert batched > 50


def test_a_turn_that_uses_a_value_only_its_own_results_show_is_invalid_and_changes_nothing():
    env = make()
    env.reset(options={"task_id": "fc-curated-filesystem-tax-receipts"})
    before = state_of(env)
    merged = json.dumps([{"name": "find_files", "arguments": {"name": "receipt-*.txt"}},
                         {"name": "move", "arguments": {"source": "/downloads/receipt-glasses.txt",
                                                        "destination": "/documents/receipt-glasses.txt"}}])
    observation, reward, terminated, _, info = env.step(merged)
    assert not info["action_valid"] and "a value you have not seen" in info["action_error"]
    assert "receipt-glasses" not in observation  # the refusal does not show the value either
    assert state_of(env) == before and not terminated and env.unwrapped.calls_this_turn == []
    # Once a result has shown the path, the same calls may share a turn with others.
    env.step('find_files(name="receipt-*.txt")')
    _, _, _, _, info = env.step(merged)
    assert info["action_valid"]


def test_an_answer_that_states_a_fact_the_agent_never_saw_fails():
    env = make()
    env.reset(options={"task_id": "fc-curated-filesystem-project-cleanup"})
    while env.unwrapped.user_turn < 2:
        env.step(env.unwrapped.oracle_action())
    answer = env.unwrapped.task["turns"][2]["answer"]  # the key, never read in this episode yet
    observation, reward, terminated, _, info = env.step(answer)
    assert observation == OBJECTION and terminated and not info["success"]


def test_merging_or_reversing_the_oracles_calls_never_beats_oracle_turns_on_any_task():
    """The merge attack of tests/test_budgets_bind.py on every shipped task: runs of 2, 3 or all
    consecutive calls of the oracle merged into one turn, in order or reversed."""
    from budgetgym.core import render_action

    env = make()
    base = env.unwrapped
    for task in TASKS:
        env.reset(seed=3, options={"task_id": task.id})
        solution = []
        while (action := base.structured_oracle()) is not None:
            solution.append(action)
            env.step(base.render_oracle(action))
        for width in (2, 3, None):
            for reverse in (False, True):
                turns, run = [], []
                for action in solution + [None]:
                    if action is None or action.is_message:
                        for start in range(0, len(run), width or max(1, len(run))):
                            group = run[start:start + (width or len(run))]
                            turns.append(json.dumps([{"name": c.name, "arguments": dict(c.arguments)}
                                                     for c in (group[::-1] if reverse else group)]))
                        run = []
                        if action is not None:
                            turns.append(render_action(action))
                    else:
                        run.extend(action.calls)
                env.reset(seed=3, options={"task_id": task.id})
                for used, text in enumerate(turns, 1):
                    _, _, terminated, truncated, info = env.step(text)
                    if terminated or truncated:
                        break
                assert not (info["success"] and used < task["oracle_turns"]), (task.id, width, reverse, used)


@pytest.mark.parametrize("respell", [lambda p: p.replace("/", "/./", 1) if p.count("/") > 1 else p + "/.",
                                     lambda p: "/" + p, lambda p: p.rsplit("/", 1)[0] + "/../" + p.lstrip("/")])
def test_a_respelled_path_from_the_turns_own_results_is_still_unseen(respell):
    """``/docs/./a.md`` or ``//docs/a.md`` is the path ``find_files`` of the same turn returns: the
    file system reads it so, and the batching rule does too."""
    env = gym.make("budgetgym/FunctionCalling-v0")
    env.reset(options={"task_id": "fc-filesystem-s0-0052"})
    find = env.unwrapped.oracle_action()
    observation = env.step(find)[0]
    path = json.loads(observation.splitlines()[0])["matches"][0]
    env.reset(options={"task_id": "fc-filesystem-s0-0052"})
    calls = json.loads(find)
    calls = (calls if isinstance(calls, list) else [calls]) + [
        {"name": "move", "arguments": {"source": respell(path), "destination": "/"}}]
    observation, _, _, _, info = env.step(json.dumps(calls))
    assert not info["action_valid"] and "not seen" in observation


def test_the_oracle_kept_plan_gives_the_actions_of_one_planned_afresh():
    """The oracle keeps the rest of its plan for the state its batch leads to (``_Plan``): from every
    state of noisy oracles' episodes (each task, a few seeds), the oracle's rollout, planning from
    the kept plan where it may, sends the actions of an oracle that plans each state afresh (an env
    restored to that state, which keeps no plan); and the kept plan is used."""
    import gymnasium as gym

    from budgetgym.core import rollout
    from budgetgym.eval.agents.scripted import NoisyOracleAgent
    from budgetgym.eval.episodes import play_episode

    env, fresh = gym.make("budgetgym/FunctionCalling-v0"), gym.make("budgetgym/FunctionCalling-v0")
    base = env.unwrapped
    planned = []
    original = type(base)._remaining_solution

    def counting(self):
        plan = original(self)
        planned.append(plan.ran)
        return plan

    type(base)._remaining_solution = counting
    try:
        for number, task_id in enumerate(base.tasks.ids[:8]):
            start = {"seed": number, "options": {"task_id": task_id}}
            actions = play_episode(env, NoisyOracleAgent(p=0.4), **start).actions
            env.reset(**start)
            for action in [None, *actions]:
                if action is not None:
                    env.step(action)
                if not base.running:
                    break
                snap = base.snapshot()
                kept = rollout(env, "oracle", reset=False).actions
                fresh_actions = []
                fresh.reset(options={"snapshot": snap})
                while fresh.unwrapped.running:
                    sent = fresh.unwrapped.oracle_action()
                    fresh_actions.append(sent)
                    fresh.step(sent)
                    fresh.reset(options={"snapshot": fresh.unwrapped.snapshot()})  # no plan kept
                assert kept == fresh_actions, (task_id, action)
                env.reset(options={"snapshot": snap})
    finally:
        type(base)._remaining_solution = original
    assert any(planned) and not all(planned)
    env.close()
    fresh.close()


def test_a_step_that_sends_the_oracle_batch_takes_its_copy_and_plays_as_if_it_ran_the_calls():
    """The oracle runs its batch on a copy (the rule's trial, or its plan's copy) and offers it; a step
    that sends those calls next takes the copy. Live play (the oracle asked before every step, a
    refusal or another call sometimes sent instead) and a replay of the same actions by an env that
    never asks the oracle give the same observations, rewards, ends and states; the offer was taken."""
    import random

    import gymnasium as gym

    live, replay = gym.make("budgetgym/FunctionCalling-v0"), gym.make("budgetgym/FunctionCalling-v0")
    base = live.unwrapped
    taken = 0
    for number, task_id in enumerate(base.tasks.ids[:40]):
        rng = random.Random(number)
        start = {"seed": number, "options": {"task_id": task_id}}
        assert live.reset(**start)[0] == replay.reset(**start)[0]
        while base.running:
            action = base.oracle_action()
            if rng.random() < 0.15:
                action = rng.choice(["not json {", json.dumps({"name": sorted(base.tools)[0], "arguments": {}})])
            offered = base._offered
            ours, theirs = live.step(action), replay.step(action)
            taken += offered is not None and base._backend is offered[1]
            assert ours[:4] == theirs[:4] and ours[4] == theirs[4], (task_id, action)
            assert base._get_state() == replay.unwrapped._get_state()
    assert taken > 0
    live.close()
    replay.close()


def test_a_kept_parse_leaves_the_state_plain_json_and_the_episode_as_the_first():
    # The second episode's texts are the first's, so its parses are the env's kept ones (read-only
    # arguments): the state holds plain dicts all the same, and the episodes agree.
    env = FunctionCallingEnv(split="test")
    task = env.tasks[0]
    played = []
    for _ in range(2):
        observation, _ = env.reset(seed=0, options={"task_id": task.id})
        seen, done = [observation], False
        texts = played[0][0] if played else []
        turn = 0
        while not done:
            text = texts[turn] if played else env.oracle_action()
            if not played:
                texts.append(text)
            observation, _, terminated, truncated, info = env.step(text)
            seen.append(observation)
            done, turn = terminated or truncated, turn + 1
            for _, arguments in env.state_view()["turn_calls"]:
                assert type(arguments) is dict  # what copy_state copies in C (a subclass costs a pickle)
        played.append((texts, seen, info["success"]))
    assert played[1] == played[0] and played[0][2]
