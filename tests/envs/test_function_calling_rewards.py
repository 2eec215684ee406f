"""Reward integrity of budgetgym/FunctionCalling-v0: stuffed, self-contradicting and refusing answers
fail their turn on the real backends, the reference answers pass, and the user says why."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import budgetgym  # noqa: F401  (registers the ids)
from budgetgym.core import load_tasks
from budgetgym.eval.agents.scripted import random_value
from budgetgym.eval.exploits import STUFFING_PREFIX, is_message
from budgetgym.envs.function_calling import scoring
from budgetgym.core.state import copy_state
from budgetgym.core.tools import ToolError
from budgetgym.envs.function_calling.domains import DOMAINS, READ_ONLY_TOOLS
from budgetgym.envs.function_calling.env import OBJECTION
from budgetgym.envs.function_calling.scoring import (answer_problem, declines, has_fact, refuses, stated_values,
                                                     value_cap)

ENV_ID = "budgetgym/FunctionCalling-v0"
TASKS = load_tasks("function_calling")
TURNS = [(task.id, index, turn) for task in TASKS for index, turn in enumerate(task["turns"])]


def _spelling(fact):
    return fact[0] if isinstance(fact, list) else fact


def test_every_shipped_turn_records_its_distractors_and_whether_it_changes_the_state():
    for task_id, index, turn in TURNS:
        assert isinstance(turn["distractors"], list) and isinstance(turn["changes"], bool), (task_id, index)
        assert answer_problem(turn, turn["answer"]) is None, (task_id, index, turn["answer"])
    with_facts = [turn for _, _, turn in TURNS if turn["facts"]]
    assert sum(bool(turn["distractors"]) for turn in with_facts) >= 0.8 * len(with_facts)


def test_a_reference_answer_with_any_distractor_added_fails():
    checked = 0
    for task_id, index, turn in TURNS:
        for distractor in turn["distractors"]:
            message = f"{turn['answer']} Also: {_spelling(distractor)}."
            assert answer_problem(turn, message) == scoring.DISTRACTED, (task_id, index, message)
            checked += 1
    assert checked > 500


def test_a_distractor_is_never_a_spelling_of_a_fact():
    for task_id, index, turn in TURNS:
        for distractor in turn["distractors"]:
            spellings = distractor if isinstance(distractor, list) else [distractor]
            assert not any(has_fact(s, fact) for s in spellings for fact in turn["facts"]), (task_id, index, distractor)


def test_refusal_and_decline_wording():
    for message in ("Sorry, I can't do that.", "I cannot print files.", "Unfortunately it is gone.",
                    "I\u2019m afraid that isn\u2019t possible.", "I couldn\u2019t move it.",
                    "I don't have a tool for that.", "I wasn't able to finish."):
        assert refuses(message) and declines(message), message
    # Answers that report success or give the answer: apologies, states of the world, "not enough".
    for message in ("Sorry for the wait: I moved the file.", "You don't have anything on Friday.",
                    "Done! Checking now has 50.00, not enough for another payment.", "Canned response sent.",
                    "There are no conflicts, so I booked it."):
        assert not refuses(message), message


def test_stated_values_counts_distinct_values_of_the_kinds_tool_results_hold():
    message = ('{"path": "/docs/a.txt"} /docs/a.txt, amy@mail.example, 2025-03-04 at 09:30, 1,250.00 and 1250.00, '
               "+1 555 201 4410.")
    assert stated_values(message) == {"/docs/a.txt", "amy@mail.example", "2025-03-04", "09:30", "1,250.00", "1250.00",
                                      "+1 555 201 4410"}
    assert value_cap({"facts": ["1"]}) == scoring.VALUES_PER_FACT + scoring.VALUES_SLACK


def test_far_more_values_than_asked_fails_even_with_the_fact():
    turn = {"facts": ["1250.00"], "distractors": [], "decline": False, "changes": False}
    assert answer_problem(turn, "Your balance is 1250.00.") is None
    padded = "Your balance is 1250.00. " + " ".join(f"{n}.50" for n in range(1, value_cap(turn) + 1))
    assert answer_problem(turn, padded) == scoring.TOO_MUCH


def test_amounts_glued_to_a_word_or_inside_a_path_count_against_the_cap():
    """The fact check reads a number wherever it is written; the cap counts it there too (an amount
    glued to a letter, or inside a path or an email, was no value: a list of them passed the cap)."""
    turn = {"facts": ["537.50"], "distractors": [], "decline": False, "changes": False}
    others = [f"{n}.25" for n in range(1, value_cap(turn) + 1)]
    for stuffed in (" ".join(f"n{amount}" for amount in [*others, "537.50"]),
                    " ".join(f"{amount}x" for amount in [*others, "537.50"]),
                    "/n/" + "/".join([*others, "537.50"]),
                    "n" + "_".join([*others, "537.50"]) + "@mail.example"):
        assert has_fact(stuffed, "537.50"), stuffed
        assert answer_problem(turn, stuffed) == scoring.TOO_MUCH, stuffed
    assert answer_problem(turn, "They add up to $537.50 (n185.40 + 310.00 + 42.10).") is None


def test_a_list_of_whole_numbers_counts_against_the_cap():
    """Every whole number the fact check reads is a value (a list of them answered every count);
    the digits of a date, a time or a phone number are that one value."""
    turn = {"facts": ["4"], "distractors": [], "decline": False, "changes": False}
    assert answer_problem(turn, " ".join(str(number) for number in range(100))) == scoring.TOO_MUCH
    assert answer_problem(turn, "You have 4 files in /work/2024.") is None
    assert stated_values("On 2025-03-04 at 09:30, call +1 555 201 4410 about the 3 files.") == {
        "2025-03-04", "09:30", "+1 555 201 4410", "3"}


def test_number_lists_win_no_more_than_5_percent_of_the_tasks():
    """Every number of the tool results, and the sums and differences of pairs, glued to a letter, as
    the answer to each turn that asks for numbers: it won 47 of the 288 shipped tasks (11 of the 60
    test tasks) while glued amounts were no values to count; now only where the results' numbers are
    few enough to be an answer (9 and 2; the same list unglued wins 6 of the 288). Every whole number
    to 9999 won 16 of the 228 train and 5 of the 60 test tasks while whole numbers were no values."""
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits import function_calling as exploits

    env = gym.make(ENV_ID)
    for agent in (exploits.GluedNumbers(), exploits.CountList()):
        for split in ("train", "test"):
            tasks = [task for task in TASKS if task.split == split]
            won = sum(play_episode(env, agent, seed=0, options={"task_id": task.id}).success for task in tasks)
            assert won <= 0.05 * len(tasks), (agent.name, split, won, len(tasks))


def test_user_lines_never_read_as_a_decline():
    """An agent that repeats the user's words back must not pass a turn that has to be declined."""
    for line in (scoring.STATE_WRONG, scoring.STATE_CHANGED_ON_DECLINE, scoring.NOT_DECLINED, scoring.REFUSED_DONE,
                 scoring.REFUSED_ANSWERABLE, scoring.DISTRACTED, scoring.TOO_MUCH, scoring.MISSING, scoring.PASTED,
                 OBJECTION):
        assert not declines(line) and not refuses(line), line


def _play_to_answer(env, predicate):
    """Reset on the first task with a turn matching ``predicate``; play the oracle up to that turn's
    answer; return the turn's index, the turn and the oracle's answer (not sent)."""
    for task in TASKS:
        for index, turn in enumerate(task["turns"]):
            if predicate(turn):
                env.reset(seed=0, options={"task_id": task.id})
                while True:
                    action = env.unwrapped.oracle_action()
                    if is_message(env, action) and env.unwrapped.user_turn == index:
                        return index, turn, action
                    env.step(action)
    raise AssertionError("no such turn")


def test_declining_a_request_that_was_carried_out_fails_and_the_user_does_not_say_why():
    env = gym.make(ENV_ID, retry_answers=True)
    index, turn, answer = _play_to_answer(env, lambda t: t["changes"] and not t["facts"])
    before = env.unwrapped.backend_state
    assert answer_problem(turn, "Sorry, I can't do that.") == scoring.REFUSED_DONE
    observation, reward, terminated, _, info = env.step("Sorry, I can't do that.")
    assert observation == f"{OBJECTION} My request was: {turn['request']}"
    assert reward == 0.0 and not terminated and env.unwrapped.backend_state == before
    # With retry_answers the turn stays open: the honest answer completes it.
    env.step(answer)
    assert env.unwrapped.user_turn == index + 1
    # By default the episode ends there, failed.
    strict = gym.make(ENV_ID)
    _play_to_answer(strict, lambda t: t["changes"] and not t["facts"])
    observation, reward, terminated, _, info = strict.step("Sorry, I can't do that.")
    assert observation == OBJECTION and terminated and reward == 0.0 and not info["success"]


@pytest.mark.parametrize("kind", ["stuffed", "declined"])
def test_a_fact_turn_answered_with_a_refusal_or_a_stuffed_dump_fails(kind):
    env = gym.make(ENV_ID, retry_answers=True)
    index, turn, answer = _play_to_answer(env, lambda t: t["facts"] and not t["decline"] and t["distractors"])
    message = (STUFFING_PREFIX + answer) if kind == "stuffed" else "Sorry, I can't do that."
    assert answer_problem(turn, message) == scoring.REFUSED_ANSWERABLE
    observation, *_ = env.step(message)
    assert observation == f"{OBJECTION} My request was: {turn['request']}"
    # Without the hedge, the answer with the other candidates pasted in still fails.
    dump = f"{answer} " + ", ".join(_spelling(d) for d in turn["distractors"])
    assert answer_problem(turn, dump) == scoring.DISTRACTED
    observation, *_ = env.step(dump)
    assert observation == f"{OBJECTION} My request was: {turn['request']}"
    env.step(answer)
    assert env.unwrapped.user_turn == index + 1


def test_read_only_tools_change_nothing_the_scoring_sees():
    rng = np.random.default_rng(0)
    seen = set()
    for task in list(TASKS)[::3]:
        domain = DOMAINS[task["domain"]]
        backend = domain.backend(copy_state(task["initial_state"]))
        before = domain.project(backend.state)
        for name in sorted(READ_ONLY_TOOLS & set(task["tools"])):
            seen.add(name)
            tool = domain.tools[name]
            for _ in range(5):
                arguments = random_value(tool.parameters, rng)
                if tool.validation_error(arguments) is None:
                    try:
                        tool.function(backend, **arguments)
                    except ToolError:
                        pass
        assert domain.project(backend.state) == before, task.id
    assert seen == READ_ONLY_TOOLS
    for domain in DOMAINS.values():
        assert READ_ONLY_TOOLS & set(domain.tools), domain.name


def test_a_clarifying_question_may_say_it_cannot_tell_which_one():
    turns = [turn for _, _, turn in TURNS if turn["clarify"]]
    assert len(turns) >= 5 and all(turn["facts"] and not turn["changes"] for turn in turns)
    for turn in turns:
        names = " or ".join(turn["facts"])
        assert answer_problem(turn, f"I can't tell which one you mean: {names}?") is None
        # Naming only one candidate, or every other one too, is not asking.
        assert answer_problem(turn, f"Which one: {turn['facts'][0]}?") == scoring.MISSING
        if turn["distractors"]:
            others = ", ".join(_spelling(d) for d in turn["distractors"])
            assert answer_problem(turn, f"Which one: {names}, {others}?") == scoring.DISTRACTED


@pytest.mark.parametrize("wrap", [
    "Sure! {answer}",
    "{answer} Let me know if you need anything else.",
    "Sorry for the wait. {answer}",
    "All set. {answer} Anything else?",
])
def test_polite_wrappings_of_a_good_answer_still_pass(wrap):
    """The checks judge what an answer says, not its manners: courtesy around the reference answer
    passes every shipped turn."""
    for task_id, index, turn in TURNS:
        assert answer_problem(turn, wrap.format(answer=turn["answer"])) is None, (task_id, index)


def test_pasted_tool_results_fail_every_turn_and_the_shown_candidates_are_distractors():
    """Raw output fails whatever it holds; on a fact turn the other values of the fact's kind that the
    turn's results show (the other balances, paths, times) are distractors, so a paste of them fails
    even without its JSON."""
    env = gym.make(ENV_ID, retry_answers=True)
    index, turn, answer = _play_to_answer(env, lambda t: t["facts"] and not t["decline"] and t["lookups"])
    results = [observation for action, observation in env.unwrapped.transcript if not is_message(env, action)]
    assert answer_problem(turn, "Done. " + "\n".join(results)) == scoring.PASTED
    assert answer_problem(turn, f'{answer} {{"balance": 1}}') == scoring.PASTED
    shown = 0
    for _, _, turn in TURNS:
        if turn["facts"] and not turn["decline"] and len(turn["distractors"]) > 1:
            shown += 1
    assert shown > 100


def test_no_answer_exploit_wins_more_than_5_percent_of_the_tasks():
    """The family's answer exploits (decline first, answer shapes, pasted results) on every shipped
    task, by split: a wrong answer ends the episode, so none is retried into a win."""
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits import function_calling as exploits

    env = gym.make(ENV_ID)
    for agent in (exploits.DeclineThenDo(), exploits.RetryShapes(), exploits.PasteCurrentTurn(), exploits.PasteAll()):
        for split in ("train", "test"):
            tasks = [task for task in TASKS if task.split == split]
            won = sum(play_episode(env, agent, seed=0, options={"task_id": task.id}).success for task in tasks)
            assert won <= 0.05 * len(tasks), (agent.name, split, won, len(tasks))
    # With retry_answers (the lenient mode), declining first costs only a turn.
    lenient = gym.make(ENV_ID, retry_answers=True)
    task = TASKS.get("fc-curated-banking-rent-month")
    assert play_episode(lenient, exploits.DeclineThenDo(), seed=0, options={"task_id": task.id}).success


def test_one_message_holds_one_verdict_so_no_hedge_passes_both_kinds_of_turn():
    """A soft hedge ("sorry if anything was unavailable") is heard as a decline: after a report of
    success it declines nothing, and on a request carried out it must come with that report, so no
    message passes both a turn to decline and a turn that changed the state (it won 16 of 60 test
    tasks with the oracle's calls, 43 with the turn's values beside it)."""
    declines_, changes = 0, 0
    for task_id, index, turn in TURNS:
        if turn["decline"]:
            declines_ += 1
            for hedge in ("Done. Sorry if anything was unavailable.", "Sorry if anything went wrong.",
                          "All set, sorry for any conflicts."):
                assert answer_problem(turn, hedge) == scoring.NOT_DECLINED, (task_id, index, hedge)
        elif turn["changes"]:
            changes += 1
            assert answer_problem(turn, "Sorry if anything was unavailable.") == scoring.REFUSED_DONE, (task_id, index)
            assert answer_problem(turn, f"Sorry for the wait; anything unavailable was skipped. {turn['answer']}") is None
    assert declines_ > 100 and changes > 300
    # Honest declines that say why, without a refusal word, still decline; a negated report is no report.
    decline = {"decline": True, "facts": [], "distractors": [], "changes": False}
    for honest in ("Sorry, there isn't enough money, so nothing was transferred.",
                   "That can't be done: the time conflicts with Dentist.", "Insufficient funds; I haven't paid it."):
        assert answer_problem(decline, honest) is None, honest


def test_the_apology_exploit_wins_no_task():
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits import function_calling as exploits

    env = gym.make(ENV_ID, split="test")
    won = [t.id for t in TASKS if t.split == "test"
           if play_episode(env, exploits.ApologyOnly(), seed=0, options={"task_id": t.id}).success]
    assert won == []


def test_pasting_the_tool_results_without_their_json_wins_no_more_than_doing_the_work():
    """The values of the turn's (or the episode's) tool results, their JSON stripped: a record
    restated whole (an event's id, title, date and times) fails, so the paste wins only where
    "Done." after the work does, and where the turn's results are the answer itself (it won 26 and
    18 of the 60 test tasks while only the raw JSON was refused; the reference wins 6)."""
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits import function_calling as exploits

    env = gym.make(ENV_ID, split="test")
    tasks = [task for task in TASKS if task.split == "test"]

    def won(agent):
        return sum(play_episode(env, agent, seed=0, options={"task_id": t.id}).success for t in tasks)

    reference = won(exploits.DoneAfterWork())
    assert won(exploits.PasteStripped()) <= reference + 0.05 * len(tasks)
    assert won(exploits.PasteAllStripped()) <= reference
    event = {"request": "When is my dentist appointment?", "facts": ["10:00"], "distractors": [], "changes": False}
    results = ['{"events": [{"id": "e5", "title": "Dentist", "date": "2025-03-06", "start": "10:00", "end": "11:00"}]}']
    assert scoring.restates_record("e5 ; Dentist ; 2025-03-06 ; 10:00 ; 11:00", results, event["request"], event["facts"])
    assert scoring.restates_record("E5\nDENTIST 2025-03-06 10:00-11:00", results, event["request"], event["facts"])
    assert not scoring.restates_record("Your dentist is on 2025-03-06, 10:00-11:00.", results, event["request"],
                                       event["facts"])


def test_an_echo_of_the_agents_own_words_teaches_no_fact():
    """A remembered answer sent first as a tool's name (refused, the refusal repeating it) is no
    more seen than one never sent: the echo wins exactly the tasks that answering from memory wins
    (it won all 60 test tasks, 5 in fewer turns than the oracle, when a refusal counted as seen)."""
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits import function_calling as exploits

    env = gym.make(ENV_ID, split="test")
    tasks = [t.id for t in TASKS if t.split == "test"]
    won = {agent.name: {t for t in tasks if play_episode(env, agent, seed=0, options={"task_id": t}).success}
           for agent in (exploits.RememberedAnswers(), exploits.EchoRemembered())}
    assert won["echo-remembered"] == won["remembered-answers"]
    assert len(won["remembered-answers"]) < len(tasks)
