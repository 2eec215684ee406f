"""``budgetgym/BFCL-v0``: the Berkeley Function Calling Leaderboard's multi-turn categories.

## Description

An adapter to the multi-turn part of BFCL (v4), run from the installed ``bfcl-eval`` package: its
data, its backend classes, its executor and its checkers; nothing of BFCL's is copied into budgetgym.
Each task is one BFCL entry: a user with a sequence of requests to a set of stateful services (a
file system, messaging, posting, tickets, trading, travel booking, vehicle control, maths), each
request to be fulfilled with the services' functions. Four categories, one split each:

* ``base``: every request can be fulfilled with the functions given;
* ``miss_func``: at one request a needed function is missing; the next user turn announces it
  (BFCL's "I have updated some more functions you can choose from. What about now?") and it joins
  the tools;
* ``miss_param``: one request lacks a needed parameter; the next user turn supplies it;
* ``long_context``: the base requests with services that return long, distracting outputs.

Task ids are BFCL's (``multi_turn_base_0``, ``multi_turn_miss_param_17``, ...); a category is a split.
``BFCLEnv(categories=("base",))`` loads some categories only (default: all four, 800 tasks).

## Action Space

One step is one model output (``budgetgym.core.actions``): one or more tool calls, as JSON objects,
``<tool_call>`` blocks or call syntax (BFCL's own ``[cd(folder='a'), ls()]`` form included), run in
order (parallel calls, as BFCL's format has them: ``max_calls_per_turn = MAX_CALLS_PER_STEP``); or plain text, which answers the user and ends the current user turn. The tools are BFCL's
function docs for the task's classes, their Gorilla types converted to JSON Schema, minus any function
``miss_func`` holds back until its turn. Every call is validated before anything runs; a malformed
output changes nothing and says what was wrong.

## Observation Space

Text. At reset: the first user request. After tool calls: one line per call, ``name -> result``, the
result worded as BFCL's executor words it (mostly JSON; errors as ``Error during execution: ...``).
After plain text: the next user request, or the verdict when the conversation is over. When a user
turn brings new tools (``miss_func``), the observation lists them and ``info["tools"]`` holds the
updated tool list on that step.

## Rewards

Sparse by default: 1.0 on the final step when every user turn passed, else 0.0. With
``reward_mode="progress"`` each step's reward is the change in ``info["progress"]``, the share of user
turns passed so far.

How BFCL's checks map onto steps: a user turn is checked when the agent ends it with plain text, as
BFCL's ``multi_turn_checker`` checks each turn of a finished conversation. The reference services
replay the turn's ground-truth calls with BFCL's executor (the reference after a user turn is the
same in every episode of a task: the first two episodes in the process replay it, the second keeps
it, pickled, for the later ones of every env, so a one-pass evaluation keeps nothing; ``backend.py``); then

* a turn whose ground truth is empty (the missing function or parameter) passes: BFCL's metric does
  not check such a turn by itself, and calls made in it show in the next turns' state check;
* otherwise the turn fails if the agent made no call in it; else BFCL's ``state_checker`` compares the
  public attributes of the agent's and the reference's instances, and BFCL's ``response_checker``
  requires every ground-truth result of the turn among the results of all the agent's calls so far.

A task is solved when every user turn passes, which is BFCL's verdict for the entry.

Neither checker reads the agent's messages, so after the right calls any answer passes: answer
stuffing and "Sorry, I can't do that." each solve every entry the oracle solves. ``budgetgym probe
exploits`` reports these figures as BFCL's own (``exploit_upstream``); budgetgym keeps BFCL's verdicts
as they are rather than change the benchmark.

## Termination

``terminated`` when the last user turn passes (success), or when a user turn fails its check: BFCL
fails the whole entry then, so the episode cannot succeed any more and ends with the check's message.
``truncated`` when the task's full budget runs out: twice the oracle's steps (per user turn one step
with all the turn's ground-truth calls, if it has any, and one answer), at least 6. The parser takes
at most 32 calls in one output, so the two turns with 34 ground-truth calls take two call steps.

## Registered Configurations

* ``budgetgym/BFCL-v0``: all four categories. Needs ``pip install --no-deps bfcl-eval mpmath``;
  without it ``gym.make`` raises ``BFCLNotInstalled`` (Gymnasium's ``DependencyNotInstalled`` and
  an ``ImportError``) with that command.

## Notes

* BFCL's data and docs disagree in two places. TicketAPI documents ticket ids as integers while
  entry 173 of each category holds the ticket "ticket_001": ``ticket_id`` admits integers and strings
  (``schemas._PARAMETER_OVERRIDES``). The ground truth of ``multi_turn_miss_func_49`` calls ``tail`` two user
  turns before the entry makes ``tail`` available: no agent can solve that entry here, the oracle
  included (BFCL's executor would run an undocumented method; this env runs documented tools only).
* Arguments that would keep BFCL's MathAPI computing for minutes (``logarithm`` or ``square_root``
  at a million digits of precision, ``power`` or ``round_number`` with a million-digit result) are
  refused by the schema: ``precision`` is bounded to 1..1000, ``exponent`` and ``decimal_places`` to
  -1000..1000 (``schemas._PARAMETER_OVERRIDES``), and the shared parser refuses integers of more
  than 64 digits. Within those bounds every call returns in well under a second.
* Every agent call, and BFCL's checkers, run under ``budgetgym.core.limits`` (``limits``: one second,
  256 KiB): BFCL's ``cp`` shares a folder's entries, so copying a folder into itself made a cycle and
  alternating copies doubled the paths (one ``du()`` took 55 s). A call past a limit is undone (the
  instances are rebuilt and the earlier calls replayed) and the observation says so; the episode goes on.

Episodes are isolated: every reset builds fresh instances, and BFCL's executor keeps none of them
between calls (``backend.py`` says how). Snapshots restore by replay; the same task and actions give
the same observations, byte for byte. ``oracle_action()`` plays BFCL's ground truth: the current user
turn's calls in one step (in BFCL's list form), then a plain-text answer; where the state has left
the ground truth's path it plans from the state first (``repairs.py``): a file system in another
folder is brought back with ``cd`` calls, a file or folder moved, copied, removed, made or written
wrongly is removed, made or rewritten, a stock watched or a user followed wrongly (or removed) is
added or removed, a door's lock is set back. What the services' functions cannot undo (a message
sent, an order placed) stays, and the oracle does not recover from it. ``failure_states.jsonl`` holds
361 curated failure states of four kinds (``mistakes.py``), in every category: ``wrong_directory``
(61: a ``cd`` of the agent's own), ``wasted_call`` (100: a read that does not serve the request),
``wrong_argument`` (100: a call that changed a service with a wrong argument) and ``destructive_call``
(100: an unrequested removal, or the car's doors unlocked); replaying the ground truth recovers from
none of the last two, the oracle from all. ``python -m budgetgym.envs.bfcl.assets`` rebuilds them with the core's
failure-state builder, for ``ErrorInjection``.
"""

from __future__ import annotations

import json
import random
from typing import Any, Iterable, Mapping, Sequence

from budgetgym.core.actions import Action, ActionError, ToolCall, parse_action
from budgetgym.core.env import BackendUnavailable, Outcome, TextEnv
from budgetgym.core.tasks import Task, TaskSet
from budgetgym.core.tools import Tool
from budgetgym.core.limits import Limits
from budgetgym.envs.bfcl import mistakes, repairs
from budgetgym.envs.bfcl.backend import BFCL_LIMITS, Backend
from budgetgym.envs.bfcl.schemas import class_tools
from budgetgym.envs.bfcl.tasks import CATEGORIES, MAX_CALLS_PER_STEP, load_category
from budgetgym.envs.bfcl.upstream import load_upstream

DONE_ANSWER = "Done."
CANNOT_ANSWER = "I cannot do that: a function or a detail it needs is missing."


class BFCLEnv(TextEnv):
    """BFCL's multi-turn entries under the TextEnv contract (see the module docstring).

    Args:
        categories: the BFCL multi-turn categories to load, of ``base``, ``miss_func``,
            ``miss_param``, ``long_context`` (default: all four).
        split, task_ids, reward_mode, render_mode: as for :class:`~budgetgym.core.TextEnv`
            (a split is a category).
        limits: the bounds of each of the agent's calls into BFCL's code (see ``backend``): one
            second and 256 KiB by default.
    """

    family = "bfcl"
    max_calls_per_turn = MAX_CALLS_PER_STEP  # parallel: independent calls may share a turn
    accepts_messages = True
    instructions = (
        "You serve a user through function calls on stateful services. At each user turn, try your best "
        "to complete the request within that turn: call functions, read their results, and continue until "
        "the request is fulfilled. Then answer the user in plain text, with no function call: that ends the "
        "turn and brings the next request. If no function can do what is asked, or the request lacks a "
        "parameter a function needs, do not guess: say so in plain text."
    )
    #: The exploit probe reports this family's figures as they are: the verdicts are BFCL's own
    #: checkers', which never read the agent's messages (see ``budgetgym.eval.exploits``).
    failure_kinds = mistakes.KINDS
    state_changing_kinds = mistakes.STATE_CHANGING  # a folder of the agent's own and a wasted read move nothing BFCL compares
    exploit_upstream = ("scored by BFCL's own state and response checkers, which do not read the agent's messages; "
                        "the figures are upstream's, reported as they are")

    def __init__(
        self,
        categories: str | Iterable[str] = CATEGORIES,
        split: str | None = None,
        task_ids: list[str] | None = None,
        reward_mode: str = "sparse",
        render_mode: str | None = None,
        limits: Limits = BFCL_LIMITS,
    ) -> None:
        self._upstream = load_upstream()  # raises BFCLNotInstalled, with the install command
        chosen = (categories,) if isinstance(categories, str) else tuple(categories)
        if not chosen or any(c not in CATEGORIES for c in chosen):
            raise ValueError(f"categories must be some of {', '.join(CATEGORIES)}; got {chosen!r}")
        tasks = TaskSet(task for category in dict.fromkeys(chosen) for task in load_category(category))
        super().__init__(split=split, task_ids=task_ids, tasks=tasks, reward_mode=reward_mode, render_mode=render_mode)
        self._backend: Backend | None = None
        self._user_turn = 0
        self._turn_called = False  # whether the agent ran a call in the current user turn
        self._ground_truth_actions: list[str] = []  # the current turn's ground truth, as the oracle's steps
        # The same, parsed: only when the oracle is asked (parsing is most of a step's cost, and an
        # agent under evaluation never needs it). Per (task, user turn), kept across resets.
        self._ground_truth_parsed: dict[tuple[str, int], list[tuple[ToolCall, ...] | None]] = {}
        self._tool_cache: dict[tuple[str, frozenset[str]], Mapping[str, Tool]] = {}
        self._messages: dict[tuple[str, int], str] = {}  # each user turn's text, by task and turn
        self._turn_steps: list[tuple[ToolCall, ...]] = []  # the calls of each call step of this user turn
        self._ground_truth_done = 0  # how many ground-truth steps the first _steps_matched steps ran, in order
        self._steps_matched = 0
        self._passed = 0
        self.limits = limits
        self._configs: dict[str, dict[str, bytes]] = {}  # each task's pickled configs, for the backend's copies

    # ------------------------------------------------------------------ TextEnv's part

    def check_backend(self) -> None:
        """bfcl-eval's data is where the package says: its multi-turn files and function docs."""
        upstream = self._upstream
        missing = [name for name in upstream.func_doc_files.values()
                   if not (upstream.data_dir / "multi_turn_func_doc" / name).is_file()]
        if not upstream.data_dir.is_dir() or missing:
            raise BackendUnavailable(
                f"budgetgym/BFCL-v0: bfcl-eval's data is incomplete under {upstream.data_dir} "
                f"({len(missing)} function docs missing); reinstall it: pip install --force-reinstall --no-deps "
                "bfcl-eval mpmath")

    def _load_task(self, task: Task, seed: int) -> str:
        # BFCL's services are deterministic (their own RNGs are seeded by the scenario): no use for seed.
        self._backend = Backend(self._upstream, task, self.limits, self._configs)
        self._passed = 0
        self._start_user_turn(0)
        return self._user_message(0)

    def _execute(self, action: Action) -> Outcome:
        if action.is_message:
            return self._end_user_turn()
        backend = self._backend
        lines = [f"{call.name} -> {backend.call(call.name, call.arguments)}" for call in action.calls]
        self._turn_called = True
        self._turn_steps.append(action.calls)
        return Outcome("\n".join(lines))

    def _oracle(self) -> Action | None:
        """The current user turn's next ground-truth step (:meth:`ground_truth_step`), planned from
        the current state where the state has left the ground truth's path: services that differ
        from where the ground truth has them (a file moved, removed or written wrongly, a folder of
        the agent's own, a stock or a followed user added or removed, a door's lock) are first
        brought back (:func:`repairs.plan`), in one step of at most ``MAX_CALLS_PER_STEP`` calls."""
        if self._ground_truth_actions:
            ground_truth = self._ground_truth_calls()
            done = self._ground_truth_done
            if done < len(ground_truth):
                repair = self._repair(ground_truth[:done])
                if repair:
                    return Action(tuple(repair[:MAX_CALLS_PER_STEP]))
        return self.ground_truth_step()

    def ground_truth_step(self) -> Action:
        """The current user turn's next step of BFCL's ground truth as it is (the calls not made yet,
        in order), then the answer: what the oracle plays on the ground truth's own path."""
        if not self._ground_truth_actions:
            return Action((), CANNOT_ANSWER)
        ground_truth = self._ground_truth_calls()
        done = self._ground_truth_done
        if done < len(self._ground_truth_actions):
            calls = ground_truth[done]
            # A ground-truth step the core's parser refuses is sent as BFCL wrote it (and refused).
            return Action(calls) if calls is not None else Action((), self._ground_truth_actions[done])
        return Action((), DONE_ANSWER)

    def _render_oracle(self, action: Action) -> str:
        # BFCL's own list form, as its ground truth is written (``[cd(folder='a'), ls()]``).
        ground_truth = self._ground_truth_calls()
        done = self._ground_truth_done
        if not action.is_message and done < len(ground_truth) and action.calls == ground_truth[done]:
            return self._ground_truth_actions[done]
        return super()._render_oracle(action)

    def _repair(self, done: list[tuple[ToolCall, ...] | None]) -> list[ToolCall]:
        """The calls that take the agent's services where the ground truth, having made the ``done``
        steps of this turn, has them; none where they are there already."""
        backend = self._backend
        if not any(name in repairs.REPAIRS for name in backend.instances):
            return []
        calls = [(call.name, call.arguments) for step in done if step for call in step]
        return repairs.plan(backend.instances, backend.expected_instances(calls), self.tools)

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        """A mistake of ``kind`` (``mistakes.py`` says each) instead of the oracle's ``plan[0]``.
        ``wrong_directory`` and ``wasted_call`` change nothing BFCL's state check compares (the
        oracle brings the folder back, and extra results do not hurt BFCL's response check);
        ``wrong_argument`` and ``destructive_call`` do, and the oracle undoes them where the
        services' functions can (``repairs.py``)."""
        if kind not in self.failure_kinds:
            return None
        return mistakes.propose(kind, self._backend.instances, self.tools, plan[0], self._user_turn, rng)

    def state_key(self) -> str:
        """The public attributes of the agent's instances, what BFCL's state check compares, as text."""
        backend = self._backend
        if backend is None:
            return "null"
        return json.dumps(_plain_state(backend.instances, set()), sort_keys=True, default=str)

    # ------------------------------------------------------------------ user turns

    @property
    def user_turn(self) -> int:
        """The index of the user request being served (the number passed so far)."""
        return self._user_turn

    def _start_user_turn(self, index: int) -> None:
        self._user_turn = index
        self._turn_called = False
        self.tools = self._tools_at(index)
        calls = self.task["ground_truth"][index]
        # BFCL's own list form, at most as many calls a step as the parser takes.
        self._ground_truth_actions = ["[" + ", ".join(calls[i:i + MAX_CALLS_PER_STEP]) + "]"
                                      for i in range(0, len(calls), MAX_CALLS_PER_STEP)]
        self._turn_steps = []
        self._ground_truth_done = self._steps_matched = 0

    def _end_user_turn(self) -> Outcome:
        task, index = self.task, self._user_turn
        total = len(task["question"])
        verdict = self._backend.check_turn(index, task["ground_truth"][index], self._turn_called)
        if not verdict["valid"]:
            return Outcome(f"User turn {index + 1} of {total} failed BFCL's check ({verdict.get('error_type')}): "
                           f"{verdict.get('error_message')} The conversation is over.", failed=True)
        self._passed += 1
        progress = self._passed / total
        if index + 1 == total:
            return Outcome(f"All {total} user turns passed BFCL's checks. The conversation is over.",
                           solved=True, progress=progress)
        self._start_user_turn(index + 1)
        return Outcome(self._user_message(index + 1), progress=progress)

    def _user_message(self, index: int) -> str:
        key = (self.task.id, index)  # type: ignore[union-attr]
        message = self._messages.get(key)
        if message is None:
            message = self._messages[key] = self._build_user_message(index)
        return message

    def _build_user_message(self, index: int) -> str:
        task = self.task
        text = "\n\n".join(m["content"] for m in task["question"][index] if m["role"] == "user")
        added = self._missed_tools(task, index)
        if not added:
            return text
        # BFCL's miss_func turn carries no user text: it says new functions are there, as BFCL does.
        listing = "\n".join(f"- {tool.signature()}: {tool.description}" for tool in added)
        return f"{self._upstream.new_functions_prompt}\nNew functions:\n{listing}" + (f"\n\n{text}" if text else "")

    # ------------------------------------------------------------------ tools and ground truth

    def _tools_at(self, index: int) -> Mapping[str, Tool]:
        """The tools of user turn ``index``: the classes' docs, less functions held back until later.
        One mapping per task and set of functions held back, kept across resets: the turns of a task
        that hold back the same functions share it, so the step that starts such a turn compares the
        tools by identity alone (they are equal, and no new list is sent)."""
        task = self.task
        held_back = frozenset(name for turn, names in task["missed_function"].items()  # type: ignore[index]
                              if int(turn) > index for name in names)
        key = (task.id, held_back)  # type: ignore[union-attr]
        tools = self._tool_cache.get(key)
        if tools is None:
            tools = self._tool_cache[key] = {tool.name: tool for cls in task["involved_classes"]  # type: ignore[index]
                                             for tool in class_tools(cls) if tool.name not in held_back}
        return tools

    @staticmethod
    def _missed_tools(task: Task, index: int) -> list[Tool]:
        names = task["missed_function"].get(str(index), [])
        return [tool for cls in task["involved_classes"] for tool in class_tools(cls) if tool.name in names]

    def _ground_truth_calls(self) -> list[tuple[ToolCall, ...] | None]:
        """The current user turn's ground-truth steps, parsed (once per task and turn), with
        ``_ground_truth_done`` brought up to date: a ground-truth step counts as run when a call
        step of this turn made exactly its calls, in order."""
        key = (self.task.id, self._user_turn)  # type: ignore[union-attr]
        parsed = self._ground_truth_parsed.get(key)
        if parsed is None:
            parsed = self._ground_truth_parsed[key] = [self._parsed(action) for action in self._ground_truth_actions]
        for calls in self._turn_steps[self._steps_matched:]:
            if self._ground_truth_done < len(parsed) and calls == parsed[self._ground_truth_done]:
                self._ground_truth_done += 1
        self._steps_matched = len(self._turn_steps)
        return parsed

    def _parsed(self, action: str) -> tuple[ToolCall, ...] | None:
        """An oracle action as parsed calls, or None where the core's parser refuses it."""
        try:
            return parse_action(action, self.tools).calls
        except ActionError:
            return None


def _plain_state(value: Any, seen: set[int]) -> Any:
    """``value`` as plain JSON values: an object by its class and public attributes, an object met
    again on the way (a folder's parent) by its class name only."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if id(value) in seen:
        return f"<{type(value).__name__}>"
    seen.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {str(k): _plain_state(v, seen) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            items = [_plain_state(v, seen) for v in value]
            return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
        if hasattr(value, "__dict__"):
            return {"class": type(value).__name__,
                    **{k: _plain_state(v, seen) for k, v in vars(value).items() if not k.startswith("_")}}
        return str(value)
    finally:
        seen.discard(id(value))
