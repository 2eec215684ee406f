"""MiniWoB-v0: MiniWoB++ web tasks in a real browser, exposed as text.

Description:
    An adapter to MiniWoB++ from the installed ``miniwob`` package: its task pages run in a real,
    headless Chromium driven by ChromeDriver (Debian's ``chromium`` and ``chromium-driver``), and
    MiniWoB's own JavaScript generates each episode's instance from the episode seed and judges it.
    Thirty tasks are supported, those with a known-good oracle (``oracles.ORACLES``): one
    right choice among several (click-link, click-dialog-2, focus-text-2, email-inbox-delete, where
    a wrong click ends the episode), forms (enter-text-2, login-user-popup, multi-orderings,
    multi-layouts), pages to read and answer by typing (simple-arithmetic, simple-algebra, find-word,
    text-transform, copy-paste), and menus, tabs, sections and trees to explore (social-media,
    click-tab-2-hard, click-collapsible-2-nodelay, navigate-tree) up to thirteen clicks
    (click-checkboxes-large). Tasks that any click order solves are left out (click-test,
    click-test-2, click-test-transfer, click-dialog, focus-text: their one control, or the right
    one first in the page; click-button and unicode-test: often a single button; click-tab-2-medium:
    clicking everything in page order won 7 of 12), and an instance whose answer is the page as it
    loads ("Select nothing and click Submit") is drawn again from a seed derived from the episode's
    (``oracles.TRIVIAL_INSTANCE``): clicking everything won them.
    Tasks whose one right click a blind agent often hits are played in rounds (``oracles.ROUNDS``:
    click-link five instances in a row, click-tab three, ...): each instance is judged by
    MiniWoB's page, the next is drawn from a seed derived from the episode's, and the episode is
    done right when every instance is (a wrong one ends it); the page says which instance it shows.
    The train split holds 17; the test split 13, mostly MiniWoB's transfer and harder variants of
    tasks trained on (``assets.TEST_TASKS``).
    The task is chosen by a keyword:
    ``gym.make("budgetgym/MiniWoB-v0", task="login")`` keeps the tasks whose name contains it (an
    exact name wins); task ids are ``miniwob/<name>``. The envs of a process share one browser
    (:mod:`budgetgym.envs.miniwob.browser`: a browser start takes seconds, a tab a tenth of one),
    each env with a tab of its own, opened at its first reset: a reset is one script in that tab
    (no page load unless the task changes), a click one round trip. ``close()`` closes the env's
    tabs; the browser quits with its last tab (and waits until its processes are gone).

Action Space:
    Text (``UnicodeText``): tool calls ``click(ref)`` and ``type(ref, text)`` (focus the element,
    then type), in any form of the shared parser (``click(ref=4)``, JSON, ``<tool_call>``); one call a
    turn (``max_calls_per_turn = 1``: a second is an invalid action). A reference that is not on the page costs the turn and changes nothing.
    Text to type that is not text (NUL and the other control characters, lone surrogates, WebDriver's
    special keys in the Private Use Area) is an invalid action and never reaches the browser.

Observation Space:
    Text: the task's utterance (for a task played in rounds, a line saying which instance of how
    many), then the page's elements one a line, indented under their parent,
    as ``[ref] tag#id.class "text" value="..." (checked)``; text nodes are shown as quoted lines
    without a reference. ``info["admissible_actions"]`` lists a ``click(ref=n)`` per element.

Rewards:
    Sparse: 1.0 when MiniWoB's raw reward for the episode is 1 (the task wholly done right; for a
    task played in rounds, every instance), else 0.0. MiniWoB itself counts any positive raw reward,
    but its checkbox tasks grade the share of boxes right, so a page left as it loaded often has
    one: a box wrong is the task not done.
    The time-scaled reward MiniWoB also reports is not used. ``reward_mode="progress"``: 1.0 on success.

Termination:
    ``terminated`` when MiniWoB ends the episode (done right or wrong). ``truncated`` at the task's
    full budget (max(6, 2 x its longest oracle solution)). MiniWoB's wall-clock limit (10 s for most
    tasks) is raised to ``time_limit_s`` (default 600 s) so that turns, not a model's latency, bound
    an episode; ``time_limit_s=None`` keeps MiniWoB's own. A browser that stops answering during an
    action (its processes killed, the driver gone) ends the episode as failed, with an observation
    that says so; ``step`` does not raise, and the next reset opens a fresh tab (in a fresh browser
    when the old one no longer answers; the other envs in it end their episodes the same way).

Registered Configurations:
    ``budgetgym/MiniWoB-v0``: the thirty tasks (or those of ``task=KEYWORD``), on the train
    and test splits; 110 curated failure states (``wrong_click``: another checkbox, tab, folder or
    field than the oracle's; ``idle_click``: a click on mere text) on both, at five episode seeds
    (instances) of each task, from ``python -m budgetgym.envs.miniwob.assets``. Needs
    ``pip install 'budgetgym[web]'`` (the ``miniwob`` package) and Chromium with its driver
    (``apt-get install chromium chromium-driver``); ``MINIWOB_CHROME_BINARY`` and
    ``MINIWOB_CHROMEDRIVER`` are set to Debian's paths when unset. Without them ``gym.make`` raises
    ``MiniWoBNotInstalled`` naming what to install. Snapshots restore by replay (the browser's
    state cannot be copied): the same seed and actions give the same page. A replay runs in the
    env's spare tab, which swaps with the episode's once the restore succeeded, so a refused one
    leaves the running episode's page as it was.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from typing import Any, Sequence

from budgetgym.core import Action, BackendUnavailable, Outcome, Task, TextEnv, ToolCall, load_tasks
from budgetgym.core.extras import MissingExtra
from budgetgym.envs.miniwob import mistakes
from budgetgym.envs.miniwob.browser import BrowserDied, Tab, shared_browser
from budgetgym.envs.miniwob.oracles import ORACLES, ROUNDS, TRIVIAL_INSTANCE
from budgetgym.envs.miniwob.tools import TOOLS

_CHROME_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
_SKIPPED_TAGS = frozenset({"body"})
_REDRAWS, _REDRAW_STEP = 16, 1_000_003  # a trivial instance is drawn again from a seed derived from the episode's
_ROUND_STEP = 7_000_003  # instance k of a task played in rounds comes from the episode seed + k x this
_SEED_MODULUS = 2**31
_WHOLLY_RIGHT = 1.0 - 1e-9  # a graded raw reward of n/n, whatever the float division leaves


class MiniWoBNotInstalled(MissingExtra):
    """The miniwob package or the browser is missing (the message says which, and the command)."""


class PageError(Exception):
    """An action the page cannot take (no such element); nothing was done."""


def _browser_paths() -> tuple[str, str]:
    chrome = os.environ.get("MINIWOB_CHROME_BINARY") or next(
        (path for name in _CHROME_CANDIDATES if (path := shutil.which(name))), None)
    driver = os.environ.get("MINIWOB_CHROMEDRIVER") or shutil.which("chromedriver")
    missing = [what for what, path in (("chromium", chrome), ("chromium-driver", driver))
               if not path or not os.path.exists(path)]
    if missing:
        raise MiniWoBNotInstalled(
            "web", "budgetgym/MiniWoB-v0 (MiniWoB++ in a real browser)", missing=" and ".join(missing),
            install="apt-get install chromium chromium-driver (or point MINIWOB_CHROME_BINARY and "
                    "MINIWOB_CHROMEDRIVER at a Chrome and its ChromeDriver)")
    return chrome, driver


def _require_miniwob() -> None:
    try:
        import miniwob  # noqa: F401
    except ImportError as err:
        raise MiniWoBNotInstalled("web", "budgetgym/MiniWoB-v0", missing="the miniwob package") from err


def select_tasks(keyword: str | None) -> list[str] | None:
    """The task ids a keyword chooses: an exact MiniWoB name, else every name containing it."""
    if keyword is None:
        return None
    ids = load_tasks("miniwob").ids
    exact = [i for i in ids if i == f"miniwob/{keyword}"]
    chosen = exact or [i for i in ids if keyword in i.split("/", 1)[1]]
    if not chosen:
        names = ", ".join(i.split("/", 1)[1] for i in ids)
        raise ValueError(f"no MiniWoB task matches {keyword!r}; the supported tasks are {names}")
    return chosen


class Page:
    """One MiniWoB instance open in a tab: its last observation, and the two actions on it.

    ``instance`` and ``instances`` place it in its episode (instance 2 of 3 of a task played in rounds)."""

    def __init__(self, tab: Tab, observation: dict[str, Any], instance: int = 1, instances: int = 1) -> None:
        self.tab = tab
        self.instance, self.instances = instance, instances
        self.done = False
        self.raw_reward = 0.0
        self.reason: str | None = None
        self.fields = {str(k): str(v) for k, v in observation["fields"]}
        self._update(observation)

    def _update(self, observation: dict[str, Any]) -> None:
        if observation["done"]:
            self.done = True
            self.raw_reward = observation["raw_reward"]
            self.reason = observation["reason"]
            return
        self.utterance = observation["utterance"]
        self.elements = observation["elements"]
        self.refs = {e["ref"] for e in self.elements if e["ref"] > 0 and e["tag"] not in _SKIPPED_TAGS}

    def _act(self, action: Any, ref: int, *args: Any) -> None:
        if self.done:
            raise PageError("The episode is over.")
        if ref not in self.refs:
            raise PageError(f"There is no element [{ref}] on the page.")
        try:
            observation = action(ref, *args)
        except BrowserDied:
            self.done = True
            raise
        self._update(observation)

    @property
    def done_right(self) -> bool:
        """MiniWoB judged the instance wholly right: raw reward 1. Most tasks judge 1 or -1; the
        checkbox tasks grade the share of boxes right (positive when more than half are), and
        leaving every box as it loads often gets that share (clicking everything won 14 of 30)."""
        return self.done and self.raw_reward >= _WHOLLY_RIGHT

    def click(self, ref: int) -> None:
        self._act(self.tab.click, ref)

    def type(self, ref: int, text: str) -> None:
        self._act(self.tab.type, ref, text)

    def render(self) -> str:
        if self.done:
            verdict = "done right" if self.done_right else "not done right"
            reason = f" ({self.reason})" if self.reason else ""
            return f"Task: {self.utterance}\nThe episode is over: the task was {verdict}{reason}."
        depth: dict[int, int] = {}
        lines = [f"Task: {self.utterance}"]
        if self.instances > 1:
            earlier = "; the earlier ones were done right" if self.instance > 1 else ""
            lines.append(f"Instance {self.instance} of {self.instances} (each must be done right; a wrong one ends "
                         f"the episode){earlier}.")
        lines.append("Page elements (click(ref=n), type(ref=n, text=...)):")
        for e in self.elements:
            if e["tag"] in _SKIPPED_TAGS:
                depth[e["ref"]] = -1
                continue
            level = depth.get(e["parent"], -1) + 1
            depth[e["ref"]] = level
            indent = "  " * level
            if e["ref"] < 0:
                lines.append(f'{indent}"{e["text"]}"')
                continue
            name = e["tag"] + (f"#{e['id']}" if e["id"] else "") + "".join(f".{c}" for c in e["classes"].split())
            text = f' "{e["text"]}"' if e["text"] else ""
            if e["tag"] in ("input_checkbox", "input_radio"):
                value = " (checked)" if e["value"] == "True" else ""
            else:
                value = f' value="{e["value"]}"' if e["tag"].startswith("input") or e["value"] else ""
            lines.append(f"{indent}[{e['ref']}] {name}{text}{value}")
        return "\n".join(lines)


class MiniWoBEnv(TextEnv):
    """MiniWoB++ tasks in Chromium as text; see the module docstring."""

    family = "miniwob"
    max_calls_per_turn = 1  # sequential: each action depends on what the last one showed
    instructions = (
        "You operate a web page to do the task stated at its top. The page's elements are listed with "
        "reference numbers in square brackets; click one with click(ref=n), or type into a text field "
        "with type(ref=n, text=\"...\"). The episode ends when the page judges the task done."
    )
    exploit_upstream = "judged by MiniWoB++'s own task pages (their JavaScript scores each episode)"
    exploits = {"click-everything": "budgetgym.eval.exploits.miniwob:ClickEverything"}
    exploit_sample = 12  # each episode is a page in a real browser: a sample, not every task
    failure_kinds = mistakes.KINDS
    state_changing_kinds = ("wrong_click",)  # an idle click wastes the turn and changes nothing

    def __init__(self, task: str | None = None, split: str | None = None, task_ids: list[str] | None = None,
                 reward_mode: str = "sparse", render_mode: str | None = None,
                 time_limit_s: float | None = 600.0) -> None:
        _require_miniwob()
        self._chrome, self._driver = _browser_paths()
        os.environ.setdefault("MINIWOB_CHROME_BINARY", self._chrome)
        os.environ.setdefault("MINIWOB_CHROMEDRIVER", self._driver)
        if task is not None:
            task_ids = select_tasks(task)
        super().__init__(split=split, task_ids=task_ids, reward_mode=reward_mode, render_mode=render_mode)
        self.tools = TOOLS
        self.time_limit_s = time_limit_s
        #: The tab this env's episode runs in (None before the first reset); ``_spare`` is the one a
        #: restore rebuilds an episode in, so that a refused restore leaves this one untouched.
        self.tab: Tab | None = None
        self._spare: Tab | None = None
        self.page: Page | None = None
        self.last_error: str | None = None

    # ------------------------------------------------------------------ browser

    def _open(self, name: str) -> Tab:
        """This env's tab, showing task ``name``: a tab of the process's browser (started by the
        first env that needs it), opened at the first reset and after its browser died; another
        task's page is loaded into it."""
        tab = self.tab
        if tab is None or tab.browser.dead:
            tab = self.tab = shared_browser(self._chrome, self._driver).open_tab()
        time_limit_ms = None if self.time_limit_s is None else int(self.time_limit_s * 1000)
        tab.load(name, time_limit_ms)
        return tab

    def _drop_tab(self) -> None:
        """Close this env's tab (the next reset opens another); the browser quits with its last tab."""
        tab, self.tab, self.page = self.tab, None, None
        if tab is not None:
            tab.close()

    def _teardown(self) -> None:
        self._drop_tab()
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()

    def _sibling(self) -> "MiniWoBEnv":
        """A restore rebuilds the episode in the spare tab (opened here the first time): on success
        the two tabs swap (the old episode's tab becomes the spare), on a refusal this env keeps its
        own, untouched, and the spare stays for the next restore."""
        if self._spare is None or self._spare.browser.dead:
            try:
                self._spare = shared_browser(self._chrome, self._driver).open_tab()
            except BrowserDied:  # the sibling's reset opens one in a fresh browser
                self._spare = None
        sibling = super()._sibling()
        sibling.tab, sibling._spare, sibling.page = self._spare, self.tab, None
        return sibling

    def check_backend(self) -> None:
        """The browser starts and shows the first task's page (the tab stays for the next reset)."""
        try:
            self._open(self.tasks[0]["miniwob_task"])
        except Exception as err:  # Selenium's and the driver's errors have no common base
            self._drop_tab()
            raise BackendUnavailable(
                f"budgetgym/MiniWoB-v0: the browser did not start ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]}); check that chromium and chromium-driver are installed and "
                "match (apt-get install chromium chromium-driver)") from err

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickle, deepcopy) holds no tab: it opens its own and replays the episode."""
        state = self.__dict__.copy()
        state.update(tab=None, _spare=None, page=None)
        state["_copy_snapshot"] = self.snapshot() if self.task is not None and self.page is not None else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        snapshot = state.pop("_copy_snapshot", None)
        self.__dict__.update(state)
        if snapshot is not None:
            ready = self._ready
            self._restore({**snapshot, "state": None})
            self._ready = ready

    # ------------------------------------------------------------------ episode

    def _instance(self, name: str, seed: int, instance: int) -> Page:
        """Instance ``instance`` (1-based) of task ``name`` in this episode of seed ``seed``."""
        if instance > 1:
            seed = (seed + (instance - 1) * _ROUND_STEP) % _SEED_MODULUS
        try:
            tab = self._open(name)
            observation = tab.reset(seed)
        except BrowserDied:  # a browser that died since the last episode: a fresh tab (and browser), once
            self._drop_tab()
            tab = self._open(name)
            observation = tab.reset(seed)
        trivial = TRIVIAL_INSTANCE.get(name)
        for draw in range(1, _REDRAWS + 1):
            if trivial is None or not trivial(dict(observation["fields"])):
                break
            # the same seed always leads to the same draw, so a replay meets the same page
            observation = tab.reset((seed + draw * _REDRAW_STEP) % _SEED_MODULUS)
        return Page(tab, observation, instance, ROUNDS.get(name, 1))

    def _load_task(self, task: Task, seed: int) -> str:
        self.page = self._instance(task["miniwob_task"], seed, 1)
        self.last_error = None
        return self.page.render()

    def _execute(self, action: Action) -> Outcome:
        page = self.page
        self.last_error = None
        try:
            for call in action.calls:
                self.tools[call.name].function(page, **call.arguments)
                if page.done:
                    break
            if page.done and page.done_right and page.instance < page.instances:
                # a task played in rounds: the next instance, from a seed derived from the episode's
                self.page = self._instance(self.task["miniwob_task"], self._episode_seed, page.instance + 1)
                return Outcome(self.page.render())
        except PageError as err:
            self.last_error = str(err)
            return Outcome(f"{err}\n\n{page.render()}")
        except BrowserDied as err:
            # The page's state is gone with the browser: the episode ends, not done, and the next
            # reset opens a fresh tab (a replay could not tell the agent's action from the crash).
            self.last_error = f"the browser stopped answering ({err})"
            self._drop_tab()
            return Outcome(f"Task: {page.utterance}\nThe episode is over: the browser stopped answering, so the task "
                           "was not done. A fresh browser starts at the next reset.", failed=True)
        if page.done:
            solved = page.done_right
            return Outcome(page.render(), solved=solved, failed=not solved, progress=1.0 if solved else None)
        return Outcome(page.render())

    def admissible_actions(self) -> list[str] | None:
        if self.page is None or self.page.done:
            return []
        return [f"click(ref={ref})" for ref in sorted(self.page.refs)]

    def _oracle(self) -> Action | None:
        page = self.page
        call = ORACLES[self.task["miniwob_task"]](page.elements, page.fields)
        if call is None:
            return None
        name, arguments = call
        return Action(calls=(ToolCall(name, arguments),))

    def state_key(self) -> str:
        """The page as the agent sees it (each element's tag, text, value and classes), which
        instance of the episode it is, and whether the episode is over: what the outcome depends
        on; the actions that led there are not."""
        page = self.page
        if page is None:
            return "null"
        shown = [(e["tag"], e["id"], e["classes"], e["text"], e["value"]) for e in page.elements if e["ref"] in page.refs]
        return json.dumps({"done": page.done, "instance": page.instance, "page": shown}, ensure_ascii=False)

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        return mistakes.propose(self, kind, plan, rng)

    def _render_oracle(self, action: Action) -> str:
        call = action.calls[0]
        arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        return f"{call.name}({arguments})"
