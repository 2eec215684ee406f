"""FunctionCalling-v0: serve a user's requests through the tools of a stateful service.

Description:
    The agent is the assistant of a user who makes a sequence of requests (a multi-turn
    conversation: two to five user turns, eight to twelve in the long ones) about one of four small,
    deterministic, in-memory services: a file system, a messaging app (contacts, inbox, sent,
    trash), a calendar (events, attendees, conflicts) and a bank with a brokerage account (balances,
    transfers, payees, bill payments, stock orders). Each service has real behaviour and real error
    messages; tool results are JSON text. Some requests need several calls, some need a fact from an
    earlier result (find a file, then move it), some are ambiguous (ask which one) and some cannot
    be done with the tools at hand (say so).

Action Space:
    Text (``UnicodeText``). One turn is either tool calls, in any form of the shared parser (a JSON
    object ``{"name": ..., "arguments": {...}}`` or a list of them, ``<tool_call>`` blocks, or call
    syntax ``move(source="/a", destination="/b")``, several calls run in order, up to
    ``max_calls_per_turn = MAX_CALLS_PER_STEP``: independent calls may share a turn), or plain text: a
    message to the user, which answers the current request. Every call is checked against its
    tool's JSON Schema before any runs; a malformed turn (unknown tool, missing or mistyped
    arguments, bad JSON) changes nothing and costs the turn. A tool error (file not found,
    insufficient funds) is a valid action whose result is ``{"error": ...}``. A turn is written
    before any of its results is seen, so in a turn of several calls no call may use a value the
    agent has not seen that the service holds and the turn's own results show (a path that a
    ``find_files`` of the same turn returns): such a turn is invalid (``batching.py``), and the
    oracle's turns (``oracle_turns``) are the dependency depth of its solution under that rule.

Observation Space:
    Text. At reset: the service's introduction and the user's first request (``User: ...``). After
    tool calls: one JSON result per call, one a line (each ends at a newline character). After a
    message: the user's next request, or, when the answer is not accepted, the user's objection
    with the request restated (only with ``retry_answers=True``; by default the episode ends there).

Rewards:
    ``reward_mode="sparse"``: 1.0 on the step that completes the last user turn, else 0.0.
    ``reward_mode="progress"``: the change in ``info["progress"]``, the share of user turns completed.
    A user turn is completed by a message sent when (1) the service state equals the task's expected
    state for that turn on the fields that matter (folders, and files by their non-blank lines;
    contacts, inbox, sent and trash; events; balances, holdings, payees and pending payments; never
    ids, the current directory, read flags or the transaction log), (2) the message carries every
    fact the request asked for (numbers by value), (3) for a request that cannot be done, the
    message says so ("I can't", "not enough", "conflicts", "unavailable"; an apology alone is no
    decline) and does not report success ("Done."), and (4) the message does not contradict itself or bury the answer: it states no
    fact that the service holds and the agent never saw (an answer from memory, not from the tools;
    whole numbers, which a count makes, aside), it states none of the turn's distractors (what a
    wrong or lazy answer would state instead: the other account's balance, the other file's path,
    the other event's time, recorded per user turn by the generators), it states at most 3 distinct
    values (paths, emails, dates, times, phone numbers, decimal amounts) per fact asked for, plus 5,
    and where the request changed the state or asks for facts (a clarifying question aside) it does
    not refuse or report failure ("I can't", "unfortunately", "I'm afraid"; an apology alone is
    fine), and where the request changed the state a message that says something could not be done
    ("sorry if anything was unavailable") also says what was done ("Done.", "Moved ..."): one message
    holds one verdict, so no hedge passes both a request to decline and one carried out. So pasting every tool result, or answering "Sorry, I can't do that." after doing the
    work, does not complete a turn, nor does a paste of the raw tool output (a JSON object), nor
    one with its JSON stripped: an answer that restates every field of one record of the episode's
    tool results (a JSON object with 3 or more fields, strings and numbers with a fraction; whole
    numbers are no fields), one of them neither named in the request nor holding a fact asked for
    (an event's id beside its time), fails;
    ``budgetgym probe exploits`` measures such tricks (``scoring.py`` holds the rule).

    An answer counts: a message that fails the check fails its user turn, and with it the episode
    (``terminated``, no success), so a wrong answer cannot be retried into a win. The user says only
    that the answer is not what was asked for (``OBJECTION``), never why: no objection tells the
    agent what the check wanted (a decline, a fact, fewer values). ``retry_answers=True`` (off by
    default; for curricula) keeps the turn open instead: the user objects the same way, restates the
    request, and the agent may repair the state and answer again, so mistakes cost only turns.

Termination:
    ``terminated`` when the last user turn is completed (success) or an answer fails its turn
    (failure; see Rewards for ``retry_answers``). ``truncated`` when the task's
    full budget (``max_turns`` = max(6, 2 x the oracle's turns)) or a ``TurnBudget`` cap runs out.
    Every change can be undone with the tools (a trash, pending payments that can be cancelled,
    stock bought back at the same price), so mistakes cost turns, not the episode; the exception is
    a task that withholds a tool (``delete``, ``send_message`` or ``pay_bill``: one of its requests
    needs it and must be declined), where a stray change that only that tool could undo stays.

Registered Configurations:
    ``budgetgym/FunctionCalling-v0``: every shipped task of both splits (``split="train"`` or
    ``"test"`` to choose one). The shipped tasks are a hand-written curated set plus seeded generated
    ones and long generated conversations (``source`` ``"generated-long"``: 8-12 user turns, full
    budgets 32-52), and ``failure_states.jsonl`` holds curated failure states (five kinds of mistake, in
    ``mistakes.py``) for ``ErrorInjection``; ``python -m budgetgym.envs.function_calling.assets``
    rebuilds both. For more tasks, ``python -m budgetgym.envs.function_calling.assets --generate
    --seed 0 --n 5000 --out tasks.jsonl`` and ``gym.make(..., tasks=TaskSet(read_jsonl(path)))``.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import random
import re
from typing import Any, Iterator, Mapping, Sequence

from budgetgym.core import MAX_CALLS_PER_STEP, Action, ActionError, Outcome, SnapshotError, Task, TextEnv, Tool, ToolCall
from budgetgym.core.state import copy_state
from budgetgym.core.tools import ToolError
from budgetgym.envs.function_calling import mistakes
from budgetgym.envs.function_calling.batching import layers, leaves, shown, unseen_value
from budgetgym.envs.function_calling.domain import Domain
from budgetgym.envs.function_calling.domains import DOMAINS, READ_ONLY_TOOLS
from budgetgym.envs.function_calling.scoring import TurnCheck, has_fact, numbers_in, restates_record
from budgetgym.envs.function_calling.state_schema import backend_problem, state_schema, task_problem

#: At most this many repairs are planned ahead for one user turn (the planner's longest is far shorter).
_MAX_REPAIRS = 256
FINAL_REPLY = "User: Thanks, that's everything I needed."
#: The user's word on an answer that fails its turn: the same for every cause, so that it tells the
#: agent nothing about what the check wanted.
OBJECTION = "User: That isn't what I asked for."
# One encoder for every tool result: the C encoder itself, built once (``json.dumps`` with an option,
# and ``JSONEncoder.encode`` too, build one per call), the arguments ``JSONEncoder.iterencode`` gives
# it, but no check for circular containers: a tool result is a tree of JSON values read from the
# state (a cycle would raise out of step with the check or without it: ValueError or RecursionError).
_RESULT_ENCODER = json.JSONEncoder(ensure_ascii=False)
if getattr(json.encoder, "c_make_encoder", None) is not None:
    _C_ENCODER = json.encoder.c_make_encoder(
        None, _RESULT_ENCODER.default, json.encoder.encode_basestring, None,
        _RESULT_ENCODER.key_separator, _RESULT_ENCODER.item_separator, False, False, True)

    def encode_result(result: Any) -> str:
        """A tool result (a tree of JSON values) as the JSON text the agent reads."""
        return "".join(_C_ENCODER(result, 0))
else:  # pragma: no cover - CPython has the C encoder
    encode_result = _RESULT_ENCODER.encode


def _hashable(value: Any) -> Any:
    """A hashable twin of a JSON value, equal exactly when the values are (dicts whatever their key
    order, 2 and 2.0 alike, as ``==`` on the values says)."""
    if isinstance(value, Mapping):
        return frozenset((key, _hashable(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return (type(value) is list, tuple(_hashable(item) for item in value))  # [1] != (1,), as in ==
    return value


def _seen_fact(fact: str | list[str], parts: list[str], numbers: set[float]) -> bool:
    """``has_fact`` on what the agent has seen (its numbers read once per observation; newest
    observations first, where a fact was most likely read)."""
    for alternative in fact if isinstance(fact, list) else [fact]:
        if _NUMERIC.fullmatch(alternative):
            if float(alternative) in numbers:
                return True
        elif any(has_fact(part, alternative) for part in reversed(parts)):
            return True
    return False


def _scalars(value: Any) -> Iterator[Any]:
    """The strings and numbers inside a call's arguments."""
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _scalars(item)
    elif value is not None and not isinstance(value, bool):
        yield value


_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?")
#: How the core words a refused action's observation (``TextEnv.step``).
_REFUSED = "Invalid action: "
#: How the core ends an observation it cut to the observation space (``TextEnv._fit``).
_TRUNCATED = "\n[truncated]"


class FunctionCallingEnv(TextEnv):
    """Multi-turn function calling over stateful services; see the module docstring."""

    family = "function_calling"
    oracle_plans_from_any_state = True  # reward_mode='oracle_distance' (budgetgym.core.process_reward)
    episode_seed_matters = False  # the task's record is the whole game: _load_task ignores the seed
    max_calls_per_turn = MAX_CALLS_PER_STEP  # parallel: independent calls may share a turn
    accepts_messages = True
    failure_kinds = mistakes.KINDS
    state_changing_kinds = mistakes.STATE_CHANGING
    instructions = (
        "You are an assistant serving a user through tools that act on a service (files, messages, "
        "a calendar or a bank). Call tools to do what the user asks; tool results come back as "
        "JSON, and a result with an \"error\" key means the call failed and changed nothing. When a "
        "request is done, or when you need to ask or answer something, write a plain-text message "
        "to the user (no tool call): that ends your part of the turn and brings the user's next "
        "request. Include in your message any fact the user asked for (numbers as digits), and only what "
        "was asked: do not paste tool results or list other candidates. When a request is done, say so "
        "plainly, without apologising or hedging as if it failed. If a "
        "request cannot be done with the tools you have, do nothing and tell the user that you "
        "cannot do it. If a request is ambiguous, ask which one is meant. Change nothing the user "
        "did not ask for."
    )
    #: Exploit agents of this family, for the exploit probe (see ``budgetgym.eval.exploits``).
    exploits = {
        "hedged-answer": "budgetgym.eval.exploits.function_calling:HedgedAnswer",
        "apology-only": "budgetgym.eval.exploits.function_calling:ApologyOnly",
        "claim-done": "budgetgym.eval.exploits.function_calling:ClaimDone",
        "decline-then-do": "budgetgym.eval.exploits.function_calling:DeclineThenDo",
        "retry-shapes": "budgetgym.eval.exploits.function_calling:RetryShapes",
        "paste-current-turn": "budgetgym.eval.exploits.function_calling:PasteCurrentTurn",
        "paste-all": "budgetgym.eval.exploits.function_calling:PasteAll",
        "glued-numbers": "budgetgym.eval.exploits.function_calling:GluedNumbers",
        "count-list": "budgetgym.eval.exploits.function_calling:CountList",
        # The reference beside them (the work done, every answer "Done."): reported, never flagged.
        "done-after-work": "budgetgym.eval.exploits.function_calling:DoneAfterWork",
    }
    #: The tools that change nothing the scoring looks at (the exploit probe's read-only sweep).
    read_only_tools = READ_ONLY_TOOLS

    def __init__(self, retry_answers: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(retry_answers, bool):
            raise TypeError(f"retry_answers must be True or False, got {retry_answers!r}")
        #: The lenient mode (see Rewards): a failed answer leaves its user turn open.
        self.retry_answers = retry_answers
        self._answer_failed = False  # an answer failed its turn (the episode's end, unless retry_answers)
        self._tried: tuple[Action, Any, list[tuple[str, bool]]] | None = None  # the turn _parse tried on a copy
        # The oracle's last batch run on a copy of the service (the rule kept), the copy and the
        # outcomes: a step that sends those calls before the state changes takes them (see _parse).
        self._offered: tuple[tuple[ToolCall, ...], Any, list[tuple[str, bool]]] | None = None
        self._seen: tuple[int, list[str], list[Any], bytes] = (-1, [], [0, set()], b"")  # see _seen_record
        self._plan: _Plan | None = None  # the rest of the oracle's last plan (see _remaining_solution)
        self._domain: Domain | None = None
        self._backend: Any = None
        self._user_turn = 0
        # The calls made in the current user turn, as [name, arguments] (the oracle skips lookups made),
        # and the first _keyed of them as a set of hashable keys: filled only when the oracle asks,
        # so that its lookup test is O(1) and agents that never ask pay nothing.
        self._turn_calls: list[list[Any]] = []
        self._turn_call_keys: set[Any] = set()
        self._keyed = 0
        self._lookup_keys: dict[tuple[str, int], list[tuple[Any, Mapping[str, Any]]]] = {}  # per task and turn
        self._tool_sets: dict[str, dict[str, Tool]] = {}
        self._turn_checks: dict[tuple[str, int], TurnCheck] = {}  # each user turn's answer check, read once
        self._initial_states: dict[str, bytes] = {}
        self._replies: dict[str, list[str]] = {}  # per task: the user's reply after each accepted answer

    # ------------------------------------------------------------------ TextEnv hooks

    def _load_task(self, task: Task, seed: int) -> str:
        # Tasks are fully specified by their record; the seed changes nothing in this family.
        self._use_task(task)
        initial = self._initial_states.get(task.id)
        if initial is None:  # the task's state pickled once: each reset only loads a copy
            initial = self._initial_states[task.id] = pickle.dumps(task["initial_state"], pickle.HIGHEST_PROTOCOL)
        self._backend = self._domain.backend(pickle.loads(initial))  # type: ignore[union-attr]
        self._user_turn = 0
        self._answer_failed = False
        self._tried, self._offered, self._seen, self._plan = None, None, (-1, [], [0, set()], b""), None
        self._clear_turn_calls()
        return self._opening(task)

    def initial_observation(self, task: Task, seed: int = 0) -> tuple[str, list[dict[str, Any]]]:
        # From the record alone: no backend is built and this env's state is left as it is. The schemas
        # are the read-only ones a reset gives in info["tools"].
        domain = self._domain_for(task)
        return self._opening(task), [domain.tools[name].shared_schema for name in task["tools"]]

    @staticmethod
    def _opening(task: Task) -> str:
        return f"{task.instruction}\n\nUser: {task['turns'][0]['request']}"

    @staticmethod
    def _reply_after(task: Task, completed: int) -> str:
        """The user's reply to an accepted answer when ``completed`` user turns were done before it."""
        turns = task["turns"]
        return FINAL_REPLY if completed + 1 == len(turns) else f"User: {turns[completed + 1]['request']}"

    def _parse(self, text: str, tools: Mapping[str, Tool]) -> Action:
        """The shared parser, then the rule of a turn of several calls (``batching``): no call may use
        a value that only an earlier call of the same turn returns. The turn is tried on a copy of
        the service to learn its results; a turn that breaks the rule is an invalid action, and one
        that keeps it runs as tried (``_execute`` takes the copy). The oracle's batch, sent as the
        oracle offered it (``_oracle``), was run on a copy already: its copy is taken so."""
        action = super()._parse(text, tools)
        offered, self._offered = self._offered, None  # one parse takes it (a refusal changes no service)
        if offered is not None and _same_calls(action.calls, offered[0]):
            self._tried = (action, offered[1], offered[2])
        elif len(action.calls) > 1 and not self._all_seen(action.calls):
            copy, outcomes, broken = self._try_turn(action.calls)
            if broken is not None:
                index, value = broken
                # The value itself is not named: the refusal would show it.
                argument = next(name for name, item in action.calls[index].arguments.items()
                                if value in leaves(item))
                raise ActionError(
                    f"call {index + 1} ({action.calls[index].name}) uses a value you have not seen (its "
                    f"{argument!r} argument): only this turn's own results show it. A turn is written before "
                    "any of its results is seen: find the value first, then use it in a later turn.")
            self._tried = (action, copy, outcomes)
        return action

    def _all_seen(self, calls: Sequence[ToolCall]) -> bool:
        """Whether every string the calls use is in what the agent has seen (then the rule holds
        without trying the turn: the common case). Newest observations first: most values are in
        the last few results."""
        parts = self._seen_record()
        return all(any(shown(value, part) for part in reversed(parts))
                   for call in calls for value in leaves(call.arguments))

    def _try_turn(self, calls: Sequence[ToolCall]) -> tuple[Any, list[tuple[str, bool]], tuple[int, str] | None]:
        """``calls`` run on a copy of the service: the copy, each call's (result, failed), and the
        rule's verdict."""
        before = self._backend.state
        copy = self._domain.backend(copy_state(before))  # type: ignore[union-attr]
        outcomes = [self._run(copy, call) for call in calls]
        texts = [text for text, _ in outcomes]
        return copy, outcomes, unseen_value(calls, texts, self.seen_text(), encode_result(before))

    def seen_text(self) -> str:
        """Everything the agent has seen in this episode: the opening and every observation since."""
        return "\n".join(self._seen_record())

    def _seen_record(self) -> list[str]:
        """What the agent has seen: the opening and each observation since (in order), brought up to
        date with the turns since the last call (each observation is read once); the record keeps
        the chained digest of them (``history_key``) and, read when first asked, the numbers they
        hold (``_seen_numbers``)."""
        turns, parts, numbers, digest = self._seen
        # Counted by the transcript, not by ``turn``: the oracle-distance reward's shadow sets its
        # turn back to 0 after a restore (the whole budget ahead) while its transcript keeps the
        # restored turns, which ``turn`` would have read again (a digest no agent's state has).
        transcript = self.transcript
        count = len(transcript)
        if turns != count:
            if turns < 0 or turns > count:  # a new episode (or a restore): from the start
                turns, parts, numbers, digest = 0, [], [0, set()], b""
                new = [self.first_observation]
            else:
                new = []
            new += [observation for _, observation in transcript[turns:]]
            for part in new:
                parts.append(part)
                # A chain of digests (bytes, so the env still copies and pickles), each part's length
                # before it: the parts' bounds count.
                encoded = part.encode("utf-8", "surrogatepass")
                digest = hashlib.blake2b(digest + len(encoded).to_bytes(8, "little") + encoded, digest_size=16).digest()
            self._seen = (count, parts, numbers, digest)
        return parts

    def _seen_numbers(self) -> set[float]:
        """The numbers in what the agent has seen (``_seen_record``), each observation read once, when
        first asked: by the answer check of a turn that asks for facts (a digest, the batching rule
        and the oracle read the text alone)."""
        parts = self._seen_record()
        numbers = self._seen[2]
        for part in parts[numbers[0]:]:
            numbers[1] |= numbers_in(part)
        numbers[0] = len(parts)
        return numbers[1]

    def history_key(self) -> str:
        """What the agent has seen (the opening and each observation since, as ``seen_text``), as a
        digest: the batching rule, the answer checks and the oracle read it, and the fast-restore
        state does not hold it."""
        self._seen_record()
        return self._seen[3].hex()

    def _execute(self, action: Action) -> Outcome:
        plan, self._plan = self._plan, None  # the state changes: the plan holds only if this is its batch
        self._offered = None  # a copy of the state before this step (or this step's backend now)
        if action.is_message:
            return self._answer(action.message)
        tried, self._tried = self._tried, None
        if tried is not None and tried[0] is action:  # the turn as _parse tried it on a copy
            self._backend, outcomes = tried[1], tried[2]
        else:
            backend = self._backend
            outcomes = [self._run(backend, call) for call in action.calls]
        if plan is not None and plan.ran_as(action.calls, outcomes):
            self._plan = plan
        # The calls that ran: a lookup that failed (a file not there yet) has shown nothing. Their
        # arguments as plain dicts: the state is exact JSON shapes (copy_state's fast path), and a
        # kept parse's arguments are read-only FrozenDicts (TextEnv._parse).
        self._turn_calls.extend([call.name, dict(call.arguments)] for call, (_, failed) in zip(action.calls, outcomes)
                                if not failed)
        return Outcome("\n".join(text for text, _ in outcomes))

    def _oracle(self) -> Action | None:
        """The calls of the reference solution the agent can make now, together, then the answer.

        The remaining solution of the user turn is the reference's lookups not made yet, then the
        repairs toward the turn's expected state, played out on a copy of the service; of those, the
        oracle sends every call whose arguments need no result it has not seen
        (:mod:`~budgetgym.envs.function_calling.batching`) as one turn, and plans again from what
        they did. The repair planner works from the difference between the current state and the
        expected one, so the oracle recovers from any mistake the tools can undo, not only from
        states on the reference path; its turn count is the solution's dependency depth."""
        plan = self._remaining_solution()
        calls, results = plan.calls, plan.results
        if not calls:
            return Action((), self.task["turns"][self._user_turn]["answer"])  # type: ignore[index]
        depth = layers(calls, results, self.seen_text())
        batch = tuple(call for call, layer in zip(calls, depth) if layer == 1)[:MAX_CALLS_PER_STEP]
        # A step that sends the batch next takes a copy that ran it (the env is a deterministic
        # function of its state): the rule's trial of a turn of several calls, else the plan's
        # copy when the batch is the whole plan (a copy that ran exactly these calls from here).
        self._offered = None
        if len(batch) > 1:
            copy, outcomes, broken = self._try_turn(batch)
            if broken is None:
                self._offered = (batch, copy, outcomes)
            else:
                batch = batch[:1]  # values no result has shown yet (a state the agent left unread): one at a time
        if self._offered is None and len(batch) == len(calls) and plan.backend is not None:
            self._offered = (batch, plan.backend, plan.outcomes)
        self._plan = plan.after(batch)
        return Action(batch)

    def _remaining_solution(self) -> "_Plan":
        """The calls that finish the current user turn from here, and the result each gives (played
        on a copy of the service): the lookups not made yet, then the planner's repairs.

        The remaining solution is a function of the service's state, the calls made this user turn
        and the turn: when the last action run was the oracle's batch and that batch was the plan's
        first calls (none failing, the planner not cut off), the service is where the plan's copy
        was after them, so the rest of the plan is the remaining solution (``_Plan.after``): kept
        from the oracle's last call, it spares a rollout's next state the copy and the planning
        (a rollout's oracle calls about 35% cheaper in all)."""
        turn = self.task["turns"][self._user_turn]  # type: ignore[index]
        pending = self._pending_lookups(turn)
        plan, self._plan = self._plan, None
        if plan is not None and plan.ran and plan.user_turn == self._user_turn and plan.pending == pending:
            return plan
        calls = [ToolCall(lookup["name"], lookup["arguments"]) for lookup in pending]
        copy = self._domain.backend(copy_state(self._backend.state))  # type: ignore[union-attr]
        outcomes = [self._run(copy, call) for call in calls]
        # A repair that fails (a tool error, a tool the task withholds) would be planned again
        # forever: stop there.
        finished = False
        for _ in range(_MAX_REPAIRS):
            repair = self._domain.plan(copy.state, turn["expected"], self.tools)  # type: ignore[union-attr]
            if repair is None:
                finished = True
                break
            outcome = self._run(copy, repair)
            calls.append(repair)
            outcomes.append(outcome)
            if outcome[1]:
                break
        return _Plan(self._user_turn, pending, calls, outcomes, finished, copy)

    def _pending_lookups(self, turn: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The current user turn's reference lookups (records) not made yet, in order."""
        if not turn["lookups"]:
            return []
        made = self._turn_call_keys
        for name, arguments in self._turn_calls[self._keyed:]:
            made.add((name, _hashable(arguments)))
        self._keyed = len(self._turn_calls)
        key = (self.task.id, self._user_turn)  # type: ignore[union-attr]
        lookups = self._lookup_keys.get(key)
        if lookups is None:
            lookups = self._lookup_keys[key] = [((lookup["name"], _hashable(lookup["arguments"])), lookup)
                                                for lookup in turn["lookups"]]
        return [lookup for made_key, lookup in lookups if lookup["name"] in self.tools and made_key not in made]

    def _run(self, backend: Any, call: ToolCall) -> tuple[str, bool]:
        """One call on ``backend``: its result as the agent sees it, and whether it was a tool error
        (a tool the task does not offer, which only the planner can propose, is one)."""
        if call.name not in self.tools:
            return "", True
        try:
            return encode_result(self.tools[call.name].function(backend, **call.arguments)), False
        except ToolError as err:
            return encode_result({"error": str(err)}), True

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        return mistakes.propose(self, self._domain, kind, plan, rng)  # type: ignore[arg-type]

    def state_key(self) -> str:
        """The scored projection of the service's state (ids, cwd, read flags and logs left out)."""
        return json.dumps(self._domain.project(self._backend.state), sort_keys=True)  # type: ignore[union-attr]

    def _get_state(self) -> Any:
        return copy_state(self.state_view())  # one copy of every part

    def state_view(self) -> Any:
        # _get_state's value without its copy (each state of a rollout is digested).
        return {"backend": self._backend.state, "user_turn": self._user_turn, "turn_calls": self._turn_calls}

    def _state_schema(self, task: Task) -> Mapping[str, Any]:
        return state_schema(task["domain"])

    def _count_calls(self, transcript: Sequence[Sequence[str]]) -> int:
        # Read from the observations, not by parsing every action again (a third of a restore): a
        # turn of calls is answered with one JSON result a line (the encoder escapes every newline
        # inside one), a message with the user's words ("User: ..."). Only an observation cut to
        # the space's limit loses lines: its action is parsed as the core does.
        count = 0
        for action, observation in transcript:
            if observation.startswith(("Invalid action: ", "User:")):
                continue
            if observation.endswith(_TRUNCATED):
                count += super()._count_calls([(action, observation)])
            else:
                count += observation.count("\n") + 1
        return count

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        # The core checked the state against _state_schema; here, what a schema cannot say.
        problem = task_problem(task, state, MAX_CALLS_PER_STEP) or backend_problem(task["domain"], state["backend"])
        if problem is not None:
            raise SnapshotError(f"corrupt function-calling state: {problem}")
        turns = task["turns"]
        if self.first_observation != self._opening(task):
            raise SnapshotError("corrupt snapshot: its first observation is not this task's opening")
        # The user turns the transcript completed: each accepted answer is followed by the next request.
        # Without retry_answers, an objection ends the episode: it can only be the last observation.
        completed = 0
        transcript = self.transcript
        replies = self._replies.get(task.id)
        if replies is None:
            replies = self._replies[task.id] = [self._reply_after(task, done) for done in range(len(turns))]
        for number, (_, observation) in enumerate(transcript, 1):
            if not observation.startswith("User:"):
                continue  # a tool result or a refused action: neither a reply nor an objection
            if completed < len(turns) and observation == replies[completed]:
                completed += 1
            elif observation.startswith(OBJECTION) and observation != self._objection(turns[min(completed, len(turns) - 1)]):
                raise SnapshotError(f"corrupt function-calling state: turn {number} holds an objection that this "
                                    f"env does not give ({'retry_answers' if self.retry_answers else 'strict answers'})")
            elif observation == OBJECTION and number != len(transcript):
                raise SnapshotError(f"corrupt function-calling state: the episode ended at turn {number}, "
                                    f"but the transcript goes on")
        if completed != state["user_turn"]:
            raise SnapshotError(f"corrupt function-calling state: user_turn is {state['user_turn']}, but the "
                                f"transcript completes {completed} user turns")
        self._use_task(task)
        backend, turn_calls = copy_state((state["backend"], state["turn_calls"]))  # one copy of both
        self._backend = self._domain.backend(backend)  # type: ignore[union-attr]
        self._user_turn = state["user_turn"]
        self._answer_failed = bool(transcript) and transcript[-1][1] == OBJECTION
        self._tried, self._offered, self._seen, self._plan = None, None, (-1, [], [0, set()], b""), None
        self._clear_turn_calls()
        self._turn_calls = turn_calls

    def _state_status(self) -> tuple[bool, bool, float]:
        total = len(self.task["turns"])  # type: ignore[index]
        return self._user_turn == total, self._answer_failed, self._user_turn / total

    # ------------------------------------------------------------------ helpers

    @property
    def domain(self) -> Domain | None:
        """The current task's domain (its backend class, checks and planner); None before a reset."""
        return self._domain

    @property
    def backend_state(self) -> Mapping[str, Any]:
        """The service's current state (read it, do not change it)."""
        return self._backend.state

    @property
    def calls_this_turn(self) -> list[ToolCall]:
        """The calls that ran since the current user turn began (a tool error aside), in order (a copy)."""
        return [ToolCall(name, copy_state(arguments)) for name, arguments in self._turn_calls]

    @property
    def user_turn(self) -> int:
        """The index of the user request being served (the number completed so far)."""
        return self._user_turn

    @staticmethod
    def _domain_for(task: Task) -> Domain:
        domain = DOMAINS.get(task["domain"])
        if domain is None:
            raise ValueError(f"task {task.id!r}: unknown domain {task['domain']!r}; known: {', '.join(DOMAINS)}")
        return domain

    def _use_task(self, task: Task) -> None:
        domain = self._domain = self._domain_for(task)
        tools = self._tool_sets.get(task.id)
        if tools is None:
            tools = self._tool_sets[task.id] = {name: domain.tools[name] for name in task["tools"]}
        self.tools = tools

    def _clear_turn_calls(self) -> None:
        self._turn_calls = []
        self._turn_call_keys = set()
        self._keyed = 0

    def _tells_unseen_fact(self, turn: Mapping[str, Any]) -> bool:
        """Whether the answer would state a fact the agent never saw: one the service holds but no
        observation showed (an answer from a memory of the task, not from the tools). A fact the
        service does not hold as such (a sum, a count) is the agent's own work and is not asked."""
        # Whole numbers are left out: a count is the agent's own work, and a small number is held
        # somewhere in any state (an id, a date), so its presence there says nothing.
        facts = [fact for fact in turn["facts"]
                 if not (isinstance(fact, str) and fact.lstrip("-").isdigit())]
        if not facts:
            return False
        parts, numbers = self._seen_record(), self._seen_numbers()
        unseen = [fact for fact in facts if not _seen_fact(fact, parts, numbers)]
        unseen += self._unlearned([fact for fact in facts if fact not in unseen])
        if not unseen:
            return False
        held = encode_result(self._backend.state)
        return any(has_fact(held, fact) for fact in unseen)

    def _unlearned(self, facts: list[str | list[str]]) -> list[str | list[str]]:
        """The ``facts`` no observation showed other than as the agent's own words sent back: a fact
        is learned from the opening, or from the result of a turn whose calls did not carry it
        themselves. A refusal shows the agent's input and the rules, never the service's data: a
        fact the agent put in a call the env refused ("unknown tool '<fact>'"), or in an argument a
        tool's error repeats, was not learned there, or an answer remembered from an earlier
        episode would pass after one such turn, and a fact that a chain of lookups finds would cost
        one turn. Each turn the agent wrote is read once, where it shows one of the facts."""
        left = [fact for fact in facts if not has_fact(self.first_observation, fact)]
        for sent, observation in self.transcript:
            if not left:
                break
            if observation.startswith(_REFUSED):
                continue
            shown = [fact for fact in left if has_fact(observation, fact)]
            if shown:
                written = self._written(sent)
                left = [fact for fact in left if fact not in shown or has_fact(written, fact)]
        return left

    def _written(self, sent: str) -> str:
        """What the agent wrote in a turn, decoded: its calls' names and argument values (a value
        spelled with JSON escapes is the value it reads as), or its message; the text as sent where
        it does not parse."""
        try:
            action = TextEnv._parse(self, sent, self.tools)
        except ActionError:
            return sent
        if action.is_message:
            return action.message
        return "\n".join(str(value) for call in action.calls for value in (call.name, *_scalars(call.arguments)))

    def _restates_record(self, turn: Mapping[str, Any], message: str) -> bool:
        """Whether the answer restates a whole record of the episode's tool results (``scoring.restates_record``)."""
        if not message.strip():
            return False
        results = [observation for _, observation in self.transcript
                   if not observation.startswith(("User:", _REFUSED))]
        return restates_record(message, results, turn["request"], turn["facts"])

    def _objection(self, turn: Mapping[str, Any]) -> str:
        """The user's word on a failed answer to ``turn``: the request restated where it stays open."""
        return f"{OBJECTION} My request was: {turn['request']}" if self.retry_answers else OBJECTION

    def _answer(self, message: str) -> Outcome:
        turns = self.task["turns"]  # type: ignore[index]
        turn = turns[self._user_turn]
        key = (self.task.id, self._user_turn)  # type: ignore[union-attr]
        check = self._turn_checks.get(key)
        if check is None:
            check = self._turn_checks[key] = TurnCheck(turn)
        if (check.problem(self._domain, self._backend.state, message) is not None  # type: ignore[arg-type]
                or self._tells_unseen_fact(turn) or self._restates_record(turn, message)):
            # The cause stays with the check: an objection that named it would tell the agent the answer.
            if self.retry_answers:
                return Outcome(self._objection(turn))
            self._answer_failed = True
            return Outcome(OBJECTION, failed=True)
        self._user_turn += 1
        self._clear_turn_calls()
        progress = self._user_turn / len(turns)
        if self._user_turn == len(turns):
            return Outcome(FINAL_REPLY, solved=True, progress=progress)
        return Outcome(f"User: {turns[self._user_turn]['request']}", progress=progress)


class _Plan:
    """The oracle's remaining solution of a user turn from one state (``_remaining_solution``): the
    user turn, the lookups pending there (records), the calls and their (result, failed) outcomes
    on the copy, whether the planner finished (not cut off at ``_MAX_REPAIRS``) and the copy (the
    service after the calls; None once a step took it, see ``_oracle``). After the
    oracle chose its batch, :meth:`after` keeps the rest for the state the batch leads to; ``ran``
    says the batch has run there, as planned."""

    __slots__ = ("user_turn", "pending", "calls", "outcomes", "results", "finished", "backend", "batch",
                 "batch_outcomes", "ran")

    def __init__(self, user_turn: int, pending: list[Mapping[str, Any]], calls: list[ToolCall],
                 outcomes: list[tuple[str, bool]], finished: bool, backend: Any) -> None:
        self.user_turn, self.pending, self.calls, self.outcomes = user_turn, pending, calls, outcomes
        self.results = [text for text, _ in outcomes]
        self.finished, self.backend = finished, backend
        self.batch: tuple[ToolCall, ...] = ()
        self.batch_outcomes: list[tuple[str, bool]] = []
        self.ran = False

    def after(self, batch: tuple[ToolCall, ...]) -> "_Plan | None":
        """The plan from the state that ``batch`` leads to, when the batch is the plan's first calls
        and none of them fails (a failed call is no lookup made, and a failed repair is planned
        again), and the planner finished; else None."""
        count = len(batch)
        if not self.finished or any(a is not b for a, b in zip(batch, self.calls)) or any(
                failed for _, failed in self.outcomes[:count]):
            return None
        # The copy went with the whole plan as a batch (it may be the service now), else it stays.
        rest = _Plan(self.user_turn, self.pending[count:], self.calls[count:], self.outcomes[count:], True,
                     self.backend if count < len(self.calls) else None)
        rest.batch, rest.batch_outcomes = batch, self.outcomes[:count]
        return rest

    def ran_as(self, calls: Sequence[ToolCall], outcomes: list[tuple[str, bool]]) -> bool:
        """Whether ``calls`` (run with ``outcomes``) were this plan's batch, argument for argument
        (by their JSON: 1 and 1.0 differ), with the outcomes the plan's copy gave; then ``ran``."""
        batch = self.batch
        self.ran = not self.ran and _same_calls(calls, batch) and outcomes == self.batch_outcomes
        return self.ran


def _same_calls(calls: Sequence[ToolCall], others: Sequence[ToolCall]) -> bool:
    """Whether two turns' calls are the same, argument for argument (by their JSON: 1 and 1.0 differ)."""
    return len(calls) == len(others) and all(
        a.name == b.name and encode_result(a.arguments) == encode_result(b.arguments) for a, b in zip(calls, others))
