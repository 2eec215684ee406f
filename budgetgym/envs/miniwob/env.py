"""MiniWoB-v0: MiniWoB++ web tasks in a real browser, exposed as text.

Description:
    An adapter to MiniWoB++ from the installed ``miniwob`` package: its task pages run in a real,
    headless Chromium driven by ChromeDriver (Debian's ``chromium`` and ``chromium-driver``), and
    MiniWoB's own JavaScript generates each episode's instance from the episode seed and judges it.
    Thirty-one tasks are supported, those with a known-good oracle (``oracles.ORACLES``): one
    right choice among several (click-link, click-dialog-2, focus-text-2, email-inbox-delete, where
    a wrong click ends the episode), forms (enter-text-2, login-user-popup, multi-orderings,
    multi-layouts), pages to read and answer by typing (simple-arithmetic, simple-algebra, find-word,
    text-transform, copy-paste), and menus, tabs, sections and trees to explore (social-media,
    click-tab-2-hard, click-collapsible-2-nodelay, navigate-tree) up to thirteen clicks
    (click-checkboxes-large). Tasks that any click order solves are left out (click-test,
    click-test-2, click-test-transfer, click-dialog, focus-text: their one control, or the right
    one first in the page; click-button and unicode-test: often a single button), and an instance
    whose answer is the page as it loads ("Select nothing and click Submit") is drawn again from a
    seed derived from the episode's (``oracles.TRIVIAL_INSTANCE``): clicking everything won them.
    The train split holds 18; the test split 13, mostly MiniWoB's transfer and harder variants of
    tasks trained on (``assets.TEST_TASKS``).
    The task is chosen by a keyword:
    ``gym.make("budgetgym/MiniWoB-v0", task="login")`` keeps the tasks whose name contains it (an
    exact name wins); task ids are ``miniwob/<name>``. One browser serves all the episodes of an
    env; it starts at the first reset, loads another task's page when the task changes, and
    ``close()`` ends it (and waits until its processes are gone).

Action Space:
    Text (``UnicodeText``): tool calls ``click(ref)`` and ``type(ref, text)`` (focus the element,
    then type), in any form of the shared parser (``click(ref=4)``, JSON, ``<tool_call>``); one call a
    turn (``max_calls_per_turn = 1``: a second is an invalid action). A reference that is not on the page costs the turn and changes nothing.
    Text to type that is not text (NUL and the other control characters, lone surrogates, WebDriver's
    special keys in the Private Use Area) is an invalid action and never reaches the browser.

Observation Space:
    Text: the task's utterance, then the page's elements one a line, indented under their parent,
    as ``[ref] tag#id.class "text" value="..." (checked)``; text nodes are shown as quoted lines
    without a reference. ``info["admissible_actions"]`` lists a ``click(ref=n)`` per element.

Rewards:
    Sparse: 1.0 when MiniWoB's raw reward for the episode is positive (the task done right), else 0.0.
    The time-scaled reward MiniWoB also reports is not used. ``reward_mode="progress"``: 1.0 on success.

Termination:
    ``terminated`` when MiniWoB ends the episode (done right or wrong). ``truncated`` at the task's
    full budget (max(6, 2 x its longest oracle solution)). MiniWoB's wall-clock limit (10 s for most
    tasks) is raised to ``time_limit_s`` (default 600 s) so that turns, not a model's latency, bound
    an episode; ``time_limit_s=None`` keeps MiniWoB's own. A browser that stops answering during an
    action (its processes killed, the driver gone) ends the episode as failed, with an observation
    that says so; ``step`` does not raise, and the next reset starts a fresh browser.

Registered Configurations:
    ``budgetgym/MiniWoB-v0``: the thirty-three tasks (or those of ``task=KEYWORD``), on the train
    and test splits; 107 curated failure states (``wrong_click``: another checkbox, tab, folder or
    field than the oracle's; ``idle_click``: a click on mere text) on both, at five episode seeds
    (instances) of each task, from ``python -m budgetgym.envs.miniwob.assets``. Needs
    ``pip install 'budgetgym[web]'`` (the ``miniwob`` package) and Chromium with its driver
    (``apt-get install chromium chromium-driver``); ``MINIWOB_CHROME_BINARY`` and
    ``MINIWOB_CHROMEDRIVER`` are set to Debian's paths when unset. Without them ``gym.make`` raises
    ``MiniWoBNotInstalled`` naming what to install. Snapshots restore by replay (the browser's
    state cannot be copied): the same seed and actions give the same page.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
import urllib.parse
from pathlib import Path
from typing import Any, Sequence

from budgetgym.core import Action, BackendUnavailable, Outcome, Task, TextEnv, ToolCall, load_tasks
from budgetgym.core.extras import MissingExtra
from budgetgym.envs.miniwob import mistakes
from budgetgym.envs.miniwob.oracles import ORACLES, TRIVIAL_INSTANCE
from budgetgym.envs.miniwob.tools import TOOLS

_CHROME_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
_SKIPPED_TAGS = frozenset({"body"})
_QUIT_WAIT_S = 5.0
_REDRAWS, _REDRAW_STEP = 16, 1_000_003  # a trivial instance is drawn again from a seed derived from the episode's


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (Linux /proc), children first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class MiniWoBNotInstalled(MissingExtra):
    """The miniwob package or the browser is missing (the message says which, and the command)."""


class BrowserDied(Exception):
    """The browser stopped answering during an action (its processes died, or the driver lost them)."""


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
    """The open MiniWoB episode: its last observation, and the two actions on it."""

    def __init__(self, browser: Any, observation: dict[str, Any]) -> None:
        self.browser = browser
        self.done = False
        self.raw_reward = 0.0
        self.reason: str | None = None
        self._update(observation)

    def _update(self, observation: dict[str, Any]) -> None:
        self.utterance = str(observation["utterance"])
        self.fields = {str(k): str(v) for k, v in observation["fields"]}
        self.elements = [{
            "ref": int(e["ref"]), "parent": int(e["parent"]), "tag": str(e["tag"]), "text": str(e["text"]),
            "value": str(e["value"]), "id": str(e["id"]), "classes": str(e["classes"]),
        } for e in observation["dom_elements"]]
        self.refs = {e["ref"] for e in self.elements if e["ref"] > 0 and e["tag"] not in _SKIPPED_TAGS}

    def _act(self, action_type: str, ref: int, **extra: Any) -> None:
        if self.done:
            raise PageError("The episode is over.")
        if ref not in self.refs:
            raise PageError(f"There is no element [{ref}] on the page.")
        action = self.browser.create_action(action_type, ref=ref, **extra)
        try:
            observation, _, terminated, _, info = self.browser.step(action)
        except Exception as err:  # Selenium's, urllib3's and the socket's errors have no common base
            self.done = True
            raise BrowserDied(f"{type(err).__name__}: {' '.join(str(err).split())[:200]}") from err
        if terminated:
            self.done = True
            self.raw_reward = float(info.get("raw_reward", 0.0))
            self.reason = info.get("reason")
        else:
            self._update(observation)

    def click(self, ref: int) -> None:
        self._act("CLICK_ELEMENT", ref)

    def type(self, ref: int, text: str) -> None:
        self._act("FOCUS_ELEMENT_AND_TYPE_TEXT", ref, text=text)

    def render(self) -> str:
        if self.done:
            verdict = "done right" if self.raw_reward > 0 else "not done right"
            reason = f" ({self.reason})" if self.reason else ""
            return f"Task: {self.utterance}\nThe episode is over: the task was {verdict}{reason}."
        depth: dict[int, int] = {}
        lines = [f"Task: {self.utterance}", "Page elements (click(ref=n), type(ref=n, text=...)):"]
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
    exploit_sample = 12  # each episode is a page load in a real browser: a sample, not every task
    failure_kinds = mistakes.KINDS
    state_changing_kinds = ("wrong_click",)  # an idle click wastes the turn and changes nothing

    def __init__(self, task: str | None = None, split: str | None = None, task_ids: list[str] | None = None,
                 reward_mode: str = "sparse", render_mode: str | None = None,
                 time_limit_s: float | None = 600.0) -> None:
        _require_miniwob()
        chrome, driver = _browser_paths()
        os.environ.setdefault("MINIWOB_CHROME_BINARY", chrome)
        os.environ.setdefault("MINIWOB_CHROMEDRIVER", driver)
        if task is not None:
            task_ids = select_tasks(task)
        super().__init__(split=split, task_ids=task_ids, reward_mode=reward_mode, render_mode=render_mode)
        self.tools = TOOLS
        self.time_limit_s = time_limit_s
        self._browser: Any = None
        self._browser_task: str | None = None
        self.page: Page | None = None
        self.last_error: str | None = None

    # ------------------------------------------------------------------ browser

    def _open(self, name: str) -> Any:
        """The browser, showing task ``name``: started at the first reset; another task's page is
        loaded into the same browser (MiniWoB's instance is pointed at it: its URL and its
        utterance parser), which takes a tenth of a second where a new browser takes seconds."""
        browser = self._browser
        if browser is not None and self._browser_task == name:
            return browser
        if browser is None or browser.instance.died:
            self._close_browser()
            from miniwob.environment import MiniWoBEnvironment

            browser = MiniWoBEnvironment(subdomain=name, action_space_config="all_supported")
            self._browser = browser
        else:
            from miniwob.fields import get_field_extractor

            instance = browser.instance
            instance.url = urllib.parse.urljoin(instance.url, f"{name}.html")
            instance.field_extractor = get_field_extractor(name)
            browser.subdomain = name
            instance.driver.get(instance.url)
        browser.instance.record_screenshots = False
        if self.time_limit_s is not None:
            milliseconds = int(self.time_limit_s * 1000)
            browser.instance.driver.execute_script(f"core.EPISODE_MAX_TIME = {milliseconds};")
        self._browser_task = name
        return browser

    def _close_browser(self) -> None:
        """Quit the browser and wait until its processes (ChromeDriver, Chromium and Chromium's own
        children) are gone; any still there after ``_QUIT_WAIT_S`` are killed, by process id."""
        browser, self._browser, self._browser_task, self.page = self._browser, None, None, None
        if browser is None:
            return
        process = getattr(getattr(getattr(browser.instance, "driver", None), "service", None), "process", None)
        pids = ([process.pid] + _descendants(process.pid)) if process is not None else []
        try:
            browser.close()
        except Exception:  # the driver of a dead browser cannot quit it: its processes are killed below
            pass
        finally:
            deadline = time.monotonic() + _QUIT_WAIT_S
            while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
                time.sleep(0.02)
            for pid in pids:
                if _alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

    def _teardown(self) -> None:
        self._close_browser()

    def check_backend(self) -> None:
        """The browser starts and shows the first task's page (the browser stays for the next reset)."""
        try:
            self._open(self.tasks[0]["miniwob_task"])
        except Exception as err:  # Selenium's and the driver's errors have no common base
            self._close_browser()
            raise BackendUnavailable(
                f"budgetgym/MiniWoB-v0: the browser did not start ({type(err).__name__}: "
                f"{' '.join(str(err).split())[:200]}); check that chromium and chromium-driver are installed and "
                "match (apt-get install chromium chromium-driver)") from err

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickle, deepcopy) holds no browser: it starts its own and replays the episode."""
        state = self.__dict__.copy()
        state.update(_browser=None, _browser_task=None, page=None)
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

    def _load_task(self, task: Task, seed: int) -> str:
        name = task["miniwob_task"]
        try:
            browser = self._open(name)
            observation, _ = browser.reset(seed=seed)
        except Exception:  # a browser that died since the last episode: a fresh one, once
            self._close_browser()
            browser = self._open(name)
            observation, _ = browser.reset(seed=seed)
        trivial = TRIVIAL_INSTANCE.get(name)
        for draw in range(1, _REDRAWS + 1):
            if trivial is None or not trivial(dict(observation["fields"])):
                break
            # the same seed always leads to the same draw, so a replay meets the same page
            observation, _ = browser.reset(seed=(seed + draw * _REDRAW_STEP) % 2**31)
        self.page = Page(browser, observation)
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
        except PageError as err:
            self.last_error = str(err)
            return Outcome(f"{err}\n\n{page.render()}")
        except BrowserDied as err:
            # The page's state is gone with the browser: the episode ends, not done, and the next
            # reset starts a fresh browser (a replay could not tell the agent's action from the crash).
            self.last_error = f"the browser stopped answering ({err})"
            self._close_browser()
            return Outcome(f"Task: {page.utterance}\nThe episode is over: the browser stopped answering, so the task "
                           "was not done. A fresh browser starts at the next reset.", failed=True)
        if page.done:
            solved = page.raw_reward > 0
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
        """The page as the agent sees it (each element's tag, text, value and classes) and whether
        the episode is over: what the outcome depends on; the actions that led there are not."""
        page = self.page
        if page is None:
            return "null"
        shown = [(e["tag"], e["id"], e["classes"], e["text"], e["value"]) for e in page.elements if e["ref"] in page.refs]
        return json.dumps({"done": page.done, "page": shown}, ensure_ascii=False)

    def propose_mistake(self, kind: str, plan: Sequence[Action], rng: random.Random) -> tuple[Action, str] | None:
        return mistakes.propose(self, kind, plan, rng)

    def _render_oracle(self, action: Action) -> str:
        call = action.calls[0]
        arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        return f"{call.name}({arguments})"
