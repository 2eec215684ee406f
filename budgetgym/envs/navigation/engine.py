"""One TextWorld game running in Jericho's Z-machine, with TextWorld's state tracking beside it.

This is TextWorld's own ``TWInform7`` stack (``textworld.start`` on a ``.z8`` file with its ``.json``)
held as one object whose whole state can be saved and restored:

* the Z-machine (``jericho.FrotzEnv``): the game itself, its text, and its score, which the game
  prints between ``<score>`` tags after ``tw-extra-infos score`` as TextWorld's ``Inform7Data`` asks;
* TextWorld's ``GameProgression``: the logical facts of the world (whence the admissible commands),
  and per quest the dependency trees from which TextWorld derives the winning policy from the current
  state. It is updated from the Inform 7 action events the game prints after ``tw-trace-actions``,
  exactly as TextWorld's ``StateTracking`` does.

``get_state()`` gives both as plain JSON: the Z-machine's dynamic memory and stack (XOR'd with the
initial ones, zlib-compressed, base64) and the progression written out object by object (the facts
sorted, and each event's policy and tree, with shared tree elements kept shared), so ``set_state``
rebuilds exactly what TextWorld would hold after replaying the history. The valid actions are not
stored: they follow from the facts, and the engine keeps them in a canonical order, so the state is
canonical: a restore, a replay and the state a snapshot holds are the same JSON however the state
was reached. ``tests/envs/test_navigation.py`` checks that against a full replay (every shipped
failure state among them) and the play against ``textworld.start`` itself.

A command is first sent to the game; when TextWorld detects no action in what the game did (an
unknown verb, an object not there, ``look``), the Z-machine is put back as it was, so text that does
nothing changes nothing (not even the game's move counter) and the two halves never drift apart.
"""

from __future__ import annotations

import base64
import re
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ENGINE_SEED = 1234
"""The Z-machine's random seed (TextWorld's games draw no random numbers; fixed for reproducibility)."""
MAX_COMMAND_BYTES = 198
"""Jericho's input buffer: longer commands would be cut, so they are refused instead."""
STATE_FORMAT = 2
"""2: the valid actions are derived from the facts, not stored (1 stored them in TextWorld's order)."""
MAX_KNOWN_STATES = 20_000
"""World states whose valid actions are kept per game in a process (then it starts over)."""

_TAG = re.compile(r"<(score|moves)>\n(.*?)</\1>", re.DOTALL)
_PROMPT = re.compile(r"\n>[^\n]*$")  # the prompt line, with the status bar Jericho appends to it
_BANNER_END = "\n\n"


class EngineError(RuntimeError):
    """The game engine failed (crashed, or answered with something TextWorld cannot read)."""


@dataclass(frozen=True)
class StepResult:
    text: str          # the game's answer, cleaned
    score: int
    won: bool
    lost: bool
    acted: bool        # TextWorld detected an action (the world changed)


def new_machine(story_path: str) -> Any:
    """A Jericho Z-machine with ``story_path`` loaded. Jericho warns that TextWorld's games are "not
    fully supported": it has no hand-made bindings for them, which TextWorld does not use either."""
    import jericho

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jericho.UnsupportedGameWarning)
        return jericho.FrotzEnv(story_path, seed=ENGINE_SEED)


def clean_text(raw: str) -> str:
    """The game's text without Jericho's status bar, the prompt, and blank padding."""
    text = _PROMPT.sub("", raw.rstrip())
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n")


def strip_banner(intro: str) -> str:
    """The opening text without TextWorld's ASCII-art title: the objective and the first room."""
    lines = intro.split("\n")
    start = 0
    for number, line in enumerate(lines):
        if line.strip() and not re.fullmatch(r"[\s$|\\/_<>]+", line):
            start = number
            break
    return "\n".join(lines[start:])


class GameEngine:
    """One loaded game. ``reset``, ``step``, ``admissible_commands``, ``policy_commands``, ``get_state``
    / ``set_state``. The first engine of a game in a process plays TextWorld's set-up commands and
    builds the initial progression (tens of ms); later ones (another env's, a copy's) load the story
    and restore that start (a few ms). A new episode of a loaded game is a restore of the state it
    started from (well under a millisecond)."""

    def __init__(self, story_path: str, game: Any, frotz: Any = None) -> None:
        from textworld.generator.inform7 import Inform7Game

        self.game = game
        self._inform7 = Inform7Game(game)
        self._story_path = story_path
        # A Z-machine may be shared by the engines of several games (one at a time plays on it):
        # each Jericho machine loads its own copy of the interpreter library.
        self._frotz = frotz if frotz is not None else new_machine(story_path)
        self._activate(fresh=True)
        start = self._start = _start_of(story_path, game, self._frotz)
        self.intro, self._initial_score, self._initial_frotz = start.intro, start.score, start.frotz
        self._ram0, self._stack0 = start.ram0, start.stack0
        self._codec = _ProgressionCodec(game)
        self._transitions = start.transitions
        self._initial_progression = start.progression
        if self._initial_progression is None:
            from textworld.generator.game import GameProgression

            progression = GameProgression(game, track_quests=True)
            progression._valid_actions = self._valid_actions(progression.state)
            start.progression = self._initial_progression = progression
        self.max_score = int(game.max_score)
        self.reset()

    def _activate(self, fresh: bool = False) -> None:
        """Put this game's story on the (possibly shared) Z-machine, if another one is on it."""
        frotz = self._frotz
        if frotz.story_file.decode() != self._story_path:
            frotz.close()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # Jericho's "not fully supported": no bindings needed
                frotz.load(self._story_path, seed=ENGINE_SEED)
            if not fresh:
                frotz.set_state(self._initial_frotz)

    # ------------------------------------------------------------------ play

    def reset(self) -> str:
        self._activate()
        self._frotz.set_state(self._initial_frotz)
        self.progression = _copy_progression(self._initial_progression)
        self.score = self._initial_score
        self.won = self.lost = False
        self._admissible: list[str] | None = None
        self._policy: list[str] | None = None
        return self.intro

    def step(self, command: str) -> StepResult:
        from textworld.envs.wrappers.tw_inform7 import _detect_i7_events_debug_tags

        before = self._frotz.get_state()
        try:
            raw = self._frotz.step(command)[0]
        except Exception as err:  # the C engine failed: report it, the caller restarts the engine
            raise EngineError(f"the game engine failed on {command!r}: {err}") from err
        tags = dict(_TAG.findall(raw))
        raw = _TAG.sub("", raw)
        events, raw = _detect_i7_events_debug_tags(raw)
        if len(events) > 1:
            # One game action a command: the words that make Inform run several are refused before
            # they get here (``tools.command``); whatever else does (an implicit "first taking") is undone.
            self._frotz.set_state(before)
            done = ", ".join(events)
            return StepResult(f"That command made the game do {len(events)} actions ({done}); one game action a "
                              f"command: nothing happened.", self.score, False, False, False)
        acted = False
        for event in events:
            action = self._inform7.detect_action(event, self.progression.valid_actions)
            if action is not None:
                self._update(action)
                acted = True
        text = clean_text(raw)
        if not acted:
            self._frotz.set_state(before)  # nothing happened in the world: nothing changes
            return StepResult(text, self.score, False, False, False)
        if "score" in tags:
            self.score = int(tags["score"].strip().split("\n")[0])
        self.won = "*** The End ***" in raw
        self.lost = "*** You lost! ***" in raw
        self._admissible = self._policy = None
        return StepResult(text, self.score, self.won, self.lost, True)

    def _update(self, action: Any) -> None:
        """``GameProgression.update``, with the valid actions of each world state computed once."""
        progression = self.progression
        progression.state.apply(action)
        progression._valid_actions = self._valid_actions(progression.state)
        for quest in progression.quest_progressions:
            quest.update(action, progression.state)

    def _valid_actions(self, state: Any) -> list:
        """The actions TextWorld's logic allows in ``state``, in a canonical order, computed once per
        set of facts.

        TextWorld recomputes them from the facts after every action (most of a step's time); they
        depend on the facts alone, so they are kept per set of facts. TextWorld lists them in the
        order its sets of facts iterate, which depends on the history that built the state (a
        replay and a restore differ): they are sorted, so that the engine's state, and the event
        matching that reads them in order, are the same however the state was reached."""
        key = frozenset(state.facts)
        known = self._transitions.get(key)
        if known is None:
            valid = sorted(state.all_applicable_actions(self.game.kb.rules.values(),
                                                        self.game.kb.types.constants_mapping), key=_action_key)
            if len(self._transitions) >= MAX_KNOWN_STATES:
                self._transitions.clear()
            known = self._transitions[key] = (valid, None)
        return known[0]

    def admissible_commands(self) -> list[str]:
        """The commands TextWorld's logic accepts now, sorted (as ``admissible_commands`` in TextWorld)."""
        if self._admissible is None:
            valid = self.progression.valid_actions
            key = frozenset(self.progression.state.facts)
            known = self._transitions.get(key)
            if known is not None and known[0] is valid and known[1] is not None:
                self._admissible = known[1]
            else:
                self._admissible = sorted(set(self._inform7.gen_commands_from_actions(valid)))
                if known is None or known[0] is valid:
                    self._transitions[key] = (valid, self._admissible)
        return list(self._admissible)

    def policy_commands(self) -> list[str]:
        """The oracle's plan from the current state ([] once won, or when TextWorld has none): the
        rest of the game's walkthrough when the state is one the walkthrough passes through and the
        walkthrough is the shorter solution (:meth:`_route`), else :meth:`quest_policy_commands`.

        The walkthrough, because TextWorld's per-quest policies solve one quest after another and
        miss the steps that quests can share (nav-hard-006: 10 commands, the walkthrough 6); the
        policy, because it plans from any state (a detour, a failure state)."""
        if self._policy is None:
            step = self._route().get(frozenset(self.progression.state.facts)) if not self.won else None
            if step is not None:
                self._policy = list(self.game.metadata["walkthrough"][step:])
            else:
                self.quest_policy_commands()
        return list(self._policy)

    def _route(self) -> dict[frozenset, int]:
        """The walkthrough's states (sets of facts) to the index of the command it plays next (the
        last such index where a state recurs), worked out once per game in a process by playing it
        from the start; empty when the walkthrough is not a win of legal single commands (the
        command tool's rules) or is no shorter than the quest policies played from the start."""
        start = self._start
        if start.route is None:
            from budgetgym.envs.navigation.tools.command import command_error

            walkthrough = list(self.game.metadata.get("walkthrough") or [])
            saved = self.get_state()
            try:
                self.reset()
                policy_turns = 0
                while not self.won and not self.lost and policy_turns <= 2 * len(walkthrough):
                    plan = self.quest_policy_commands()
                    if not plan or not self.step(plan[0]).acted:
                        break
                    policy_turns += 1
                policy_won = self.won
                self.reset()
                route: dict[frozenset, int] = {}
                for index, command in enumerate(walkthrough):
                    route[frozenset(self.progression.state.facts)] = index
                    if command_error(command) is not None or not self.step(command).acted or self.lost:
                        break
                start.route = route if self.won and (not policy_won or len(walkthrough) < policy_turns) else {}
            finally:
                self.set_state(saved)
        return start.route

    def quest_policy_commands(self) -> list[str]:
        """TextWorld's winning policy from the current state, one quest at a time ([] once won, or
        when TextWorld has none): the policy of the first unfinished quest, trimmed to its shortest
        suffix that is applicable now and completes the quest.

        One quest at a time because TextWorld's merge of several quests' trees into one policy is
        greedy and can alternate between quests from one step to the next (go west, go east, ...).
        The trim because a quest's tree does not learn of actions that another quest's policy played
        (quests that share a prefix: its policy would open a box that is already open)."""
        if self._policy is None:
            policy: tuple = ()
            for quest in self.progression.quest_progressions:
                if quest.done or not quest.completable or quest.quest.optional:
                    continue
                policy = self._trimmed(quest)
                if policy:
                    break
            self._policy = self._inform7.gen_commands_from_actions(policy) if policy else []
        return list(self._policy)

    def _trimmed(self, quest: Any) -> tuple:
        """The quest's policy without the actions that no longer apply: the shorter of (a) its
        shortest suffix that applies and completes the quest, and (b) the policy played in order,
        skipping each action that does not apply, when that completes the quest; else the policy."""
        policy = tuple(a for a in (quest.winning_policy or ()) if a.name != "trigger")
        now = frozenset(self.progression.state.facts)
        goals = [frozenset(event.event.condition.preconditions) for event in quest.win_events]

        def play(actions: tuple, skip: bool) -> tuple | None:
            facts, kept = set(now), []
            for action in actions:
                if not facts.issuperset(action.preconditions):
                    if skip:
                        continue
                    return None
                facts.difference_update(action.preconditions)
                facts.update(action.postconditions)
                kept.append(action)
            return tuple(kept) if any(goal <= facts for goal in goals) else None

        candidates = [play(policy, skip=True)]
        for start in range(len(policy) - 1, -1, -1):  # the shortest suffix first
            suffix = play(policy[start:], skip=False)
            if suffix is not None:
                candidates.append(suffix)
                break
        found = [c for c in candidates if c]
        return min(found, key=len) if found else policy

    def facts(self) -> list[str]:
        """The world's facts as sorted strings (the state that decides the game)."""
        return sorted(str(fact) for fact in self.progression.state.facts)

    # ------------------------------------------------------------------ state

    def get_state(self) -> dict[str, Any]:
        ram, stack, pc, sp, fp, frame_count, opcode, rng, narrative = self._frotz.get_state()
        # The stack grows down from its end: the words below the stack pointer are dead, and hold
        # whatever earlier play left there (of this episode, another one, or another game on the
        # shared Z-machine, in the initial stack too). Left out (zero), so that the state is the same
        # however it was reached; a restore leaves them as they are, and the game never reads them.
        stack = np.bitwise_xor(stack, self._stack0)
        stack[: 2 * int(sp)] = 0
        return {
            "format": STATE_FORMAT,
            "ram": _pack(np.bitwise_xor(ram, self._ram0)),
            "stack": _pack(stack),
            "registers": [int(pc), int(sp), int(fp), int(frame_count), int(opcode), [int(x) for x in rng]],
            "narrative": base64.b64encode(bytes(narrative)).decode("ascii"),
            "score": self.score,
            "won": self.won,
            "lost": self.lost,
            "progression": self._codec.dump(self.progression),
        }

    def set_state(self, state: Any) -> None:
        """Restore ``get_state()``'s output; on any problem raise ``ValueError`` and change nothing."""
        try:
            if state.get("format") not in (1, STATE_FORMAT):  # 1's stored valid actions are ignored
                raise ValueError(f"state format {state.get('format')!r}, expected {STATE_FORMAT}")
            ram = np.bitwise_xor(_unpack(state["ram"], self._ram0.size), self._ram0)
            stack = np.bitwise_xor(_unpack(state["stack"], self._stack0.size), self._stack0)
            pc, sp, fp, frame_count, opcode, rng = state["registers"]
            frotz = (ram, stack, int(pc), int(sp), int(fp), int(frame_count), int(opcode),
                     tuple(int(x) for x in rng), base64.b64decode(state["narrative"], validate=True))
            progression = self._codec.load(state["progression"])
            progression._valid_actions = self._valid_actions(progression.state)
            score, won, lost = int(state["score"]), bool(state["won"]), bool(state["lost"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, zlib.error) as err:
            raise ValueError(f"corrupt navigation state: {err}") from None
        self._activate()
        self._frotz.set_state(frotz)
        self.progression = progression
        self.score, self.won, self.lost = score, won, lost
        self._admissible = self._policy = None

    def close(self) -> None:
        """Stop the Z-machine (when it is shared, its owner closes it instead)."""
        frotz, self._frotz = self._frotz, None
        if frotz is not None:
            frotz.close()


@dataclass
class _Start:
    """What every engine of one game starts from, worked out once per process (a new engine, a
    copied env's or a process-reward shadow's, then costs a story load): the opening text, the
    score and the Z-machine's state after TextWorld's set-up commands, the initial progression
    (copied at each reset, never changed), and the valid actions and admissible commands per set of
    facts (a function of the facts and the game alone). One initial Z-machine state for all the
    engines of a game also makes their states XOR against the same initial memory and stack, so
    the same game state gives the same ``get_state()`` in every env of the process."""

    game: Any
    intro: str
    score: int
    frotz: Any
    ram0: np.ndarray
    stack0: np.ndarray
    progression: Any = None
    transitions: dict = field(default_factory=dict)
    route: dict | None = None  # the walkthrough's states, once worked out (``GameEngine._route``)


_STARTS: dict[str, _Start] = {}
"""The start of each game played in this process, by story path (the story's content hash is in
the path); engines are built under ``games.TEXTWORLD_LOCK``, one at a time."""


def _start_of(story_path: str, game: Any, frotz: Any) -> _Start:
    """The game's start (see :class:`_Start`), with ``frotz`` (the game's story loaded) put at it."""
    start = _STARTS.get(story_path)
    if start is not None and start.game is game:
        frotz.set_state(start.frotz)
        return start
    intro, _ = frotz.reset()
    # TextWorld's Inform7Data: moves and score printed every turn; StateTracking: action events.
    frotz.step("tw-extra-infos moves")
    score_text = frotz.step("tw-extra-infos score")[0]
    frotz.step("tw-trace-actions")
    tags = dict(_TAG.findall(score_text))
    state = frotz.get_state()
    start = _STARTS[story_path] = _Start(game, clean_text(strip_banner(intro)),
                                         int(tags.get("score", "0").strip().split("\n")[0]), state,
                                         np.asarray(state[0], dtype=np.uint8), np.asarray(state[1], dtype=np.uint8))
    return start


def _copy_progression(progression: Any) -> Any:
    """``GameProgression.copy()`` without running constructors: TextWorld's copies of a progression,
    of a quest's and of an event's progression each first build a fresh one (recomputing the valid
    actions and re-pushing every quest tree, most of a reset's time) only to overwrite it."""
    from textworld.generator.game import EventProgression, GameProgression, QuestProgression

    def event(source: Any) -> Any:
        copy = EventProgression.__new__(EventProgression)
        copy._kb, copy.event = source._kb, source.event
        copy._triggered, copy._untriggerable, copy._policy = source._triggered, source._untriggerable, source._policy
        copy._tree = source._tree.copy()
        return copy

    def quest(source: Any) -> Any:
        copy = QuestProgression.__new__(QuestProgression)
        copy.quest, copy.kb, copy.nb_completions = source.quest, source.kb, source.nb_completions
        copy.win_events = [event(e) for e in source.win_events]
        copy.fail_events = [event(e) for e in source.fail_events]
        return copy

    copy = GameProgression.__new__(GameProgression)
    copy.game = progression.game
    copy.state = progression.state.copy()
    copy._valid_actions = progression._valid_actions
    copy.quest_progressions = [quest(q) for q in progression.quest_progressions]
    return copy


def _action_key(action: Any) -> tuple:
    """A sort key of TextWorld actions that depends on what they are, not on how they were built."""
    return (action.name, sorted(map(str, action.preconditions)), sorted(map(str, action.postconditions)))


def _pack(array: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(array.tobytes(), 6)).decode("ascii")


def _unpack(text: str, size: int) -> np.ndarray:
    data = zlib.decompress(base64.b64decode(text, validate=True))
    if len(data) != size:
        raise ValueError(f"a memory block of {len(data)} bytes where the game has {size}")
    return np.frombuffer(data, dtype=np.uint8)


class _ProgressionCodec:
    """TextWorld's ``GameProgression`` to plain JSON and back, for one game.

    Propositions and actions are interned in tables (an action's propositions as indices), in the
    order they are met (the facts sorted first), and each event
    progression keeps its flags, its policy and its dependency tree: nodes refer to elements by index,
    so an element shared between nodes stays shared, and each element keeps its parent element, which
    TextWorld's ordering of the tree's leaves reads."""

    def __init__(self, game: Any) -> None:
        self.game = game

    # -- writing

    def dump(self, progression: Any) -> dict[str, Any]:
        props: dict[Any, int] = {}
        actions: dict[Any, int] = {}
        prop_rows: list[list[Any]] = []
        action_rows: list[list[Any]] = []

        def prop(p: Any) -> int:
            index = props.get(p)
            if index is None:
                index = props[p] = len(prop_rows)
                prop_rows.append([p.name, [[v.name, v.type] for v in p.arguments]])
            return index

        def action(a: Any) -> int:
            index = actions.get(a)
            if index is None:
                index = actions[a] = len(action_rows)
                action_rows.append([a.name, [prop(p) for p in a.preconditions], [prop(p) for p in a.postconditions],
                                    a.command_template, a.reverse_name, a.reverse_command_template])
            return index

        def event(ep: Any) -> dict[str, Any]:
            elements: dict[int, int] = {}
            element_rows: list[list[int]] = []

            def element(e: Any) -> int:
                index = elements.get(id(e))
                if index is None:
                    index = elements[id(e)] = len(element_rows)
                    element_rows.append([action(e.value), -1])
                    if e.parent is not None:
                        element_rows[index][1] = element(e.parent)
                return index

            def node(n: Any) -> list[Any]:
                return [element(n.element), [node(child) for child in n.children]]

            roots = [node(root) for root in ep._tree.roots]
            return {"triggered": ep._triggered, "untriggerable": ep._untriggerable,
                    "policy": [action(a) for a in ep._policy], "elements": element_rows, "roots": roots}

        facts = [prop(p) for p in sorted(progression.state.facts, key=str)]  # canonical: copies dump alike
        quests = [{"completions": qp.nb_completions, "win": [event(e) for e in qp.win_events],
                   "fail": [event(e) for e in qp.fail_events]} for qp in progression.quest_progressions]
        return {"props": prop_rows, "actions": action_rows, "facts": facts, "quests": quests}

    # -- reading

    def load(self, data: dict[str, Any]) -> Any:
        from textworld.generator.game import GameProgression, QuestProgression
        from textworld.logic import Action, Proposition, State, Variable

        variables: dict[tuple[str, str], Any] = {}

        def variable(name: str, type_: str) -> Any:
            key = (str(name), str(type_))
            if key not in variables:
                variables[key] = Variable(*key)
            return variables[key]

        props = [Proposition(str(name), [variable(*arg) for arg in args]) for name, args in data["props"]]
        actions = []
        for name, pre, post, template, reverse_name, reverse_template in data["actions"]:
            a = Action(str(name), [props[i] for i in pre], [props[i] for i in post])
            a.command_template, a.reverse_name, a.reverse_command_template = template, reverse_name, reverse_template
            actions.append(a)
        game = self.game
        quests = data["quests"]
        if len(quests) != len(game.quests):
            raise ValueError(f"{len(quests)} quests in the state, the game has {len(game.quests)}")
        # Built attribute by attribute: the constructors would recompute what the state already holds.
        progression = GameProgression.__new__(GameProgression)
        progression.game = game
        progression.state = State(game.kb.logic, [props[i] for i in data["facts"]])
        progression._valid_actions = []  # the engine derives them from the facts
        progression.quest_progressions = []
        for quest, saved in zip(game.quests, quests):
            qp = QuestProgression.__new__(QuestProgression)
            qp.quest, qp.kb, qp.nb_completions = quest, game.kb, int(saved["completions"])
            qp.win_events = [self._event(e, s, actions) for e, s in _pairs(quest.win_events, saved["win"])]
            qp.fail_events = [self._event(e, s, actions) for e, s in _pairs(quest.fail_events, saved["fail"])]
            progression.quest_progressions.append(qp)
        return progression

    def _event(self, event: Any, saved: dict[str, Any], actions: list[Any]) -> Any:
        from textworld.generator.dependency_tree import DependencyTree
        from textworld.generator.game import ActionDependencyTree, ActionDependencyTreeElement, EventProgression

        ep = EventProgression.__new__(EventProgression)
        ep._kb, ep.event = self.game.kb, event
        ep._triggered, ep._untriggerable = bool(saved["triggered"]), bool(saved["untriggerable"])
        ep._policy = tuple(actions[i] for i in saved["policy"])
        elements = [ActionDependencyTreeElement(actions[a]) for a, _ in saved["elements"]]
        for element, (_, parent) in zip(elements, saved["elements"]):
            element.parent = elements[parent] if parent >= 0 else None

        def build(row: list[Any], parent: Any) -> Any:
            node = DependencyTree._Node(elements[row[0]])
            node.parent = parent
            node.children = [build(child, node) for child in row[1]]
            return node

        tree = ActionDependencyTree(kb=self.game.kb, element_type=ActionDependencyTreeElement)
        tree.roots = [build(root, None) for root in saved["roots"]]
        tree._update()
        ep._tree = tree
        return ep


def _pairs(live: Any, stored: Any) -> Any:
    if not isinstance(stored, list) or len(stored) != len(live):
        raise ValueError("the state's events do not match the game's quests")
    return zip(live, stored)
