"""The browser behind MiniWoB-v0: one headless Chromium per process, one tab per episode page.

A browser start (ChromeDriver, then Chromium) takes seconds; a tab takes a tenth of one. So the
process's MiniWoB envs share one browser (:func:`shared_browser`), each holding its own tabs
(:class:`Tab`): a tab is a page of its own (its own DOM, JavaScript and seeded ``Math.random``), so
envs in one browser are as independent as envs in separate ones. The browser quits, and its
processes are waited for, when its last tab is closed; a tab that is garbage-collected unclosed is
closed at the browser's next command (never from inside the collector, which may run in the middle
of another command), and the browser left at the process's exit quits then.

Each action is as few WebDriver round trips as MiniWoB's page allows: a reset is one script (end the
episode, seed, start the next, read the page), a click is one (click, let the page's own handlers and
zero-delay timers run, read the page), typing is three (focus, the key presses, read the page). The
page is read as MiniWoB's own Python reads it (``core.getUtterance``, ``core.getDOMInfo`` once per
observation: text nodes get new reference numbers at each reading), so the elements are MiniWoB's.

Any error from the driver, its socket or the page's script raises :class:`BrowserDied`; the browser
is then checked, and replaced at the next tab opened if it no longer answers.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
import urllib.parse
import weakref
from pathlib import Path
from typing import Any

_QUIT_WAIT_S = 5.0
_READY_POLLS, _READY_POLL_MS = 20, 50  # MiniWoB's own wait for a task that is not ready at once: up to 1 s

#: The page after an action, as MiniWoB's Python reads it: the verdict, then the utterance and the
#: DOM unless the episode is over. Run once the page's own handlers and zero-delay timers have run.
_READ = """
function budgetgymRead() {
  if (WOB_DONE_GLOBAL) {
    return {done: true, raw_reward: WOB_RAW_REWARD_GLOBAL, reason: WOB_REWARD_REASON};
  }
  return {done: false, utterance: core.getUtterance(), dom: core.getDOMInfo()};
}
"""
_RESET = _READ + """
var finish = arguments[arguments.length - 1];
core.endEpisode(0);
Math.seedrandom(arguments[0]);
core.setDataMode("train");
core.startEpisodeReal();
var polls = 0;
(function wait() {
  if (WOB_TASK_READY) { finish(budgetgymRead()); }
  else if (++polls > %d) { finish(null); }
  else { setTimeout(wait, %d); }
})();
""" % (_READY_POLLS, _READY_POLL_MS)
_CLICK = _READ + """
var finish = arguments[arguments.length - 1];
core.elementClick(arguments[0]);
setTimeout(function () { finish(budgetgymRead()); }, 0);
"""
#: The images a task's own style sheet shows (social-media's and email-inbox's icons, as CSS
#: ``content:url(...)``), loaded before the first episode: one not loaded yet has no size, and
#: MiniWoB's DOM reading leaves such an element out, so the first episode after a page load would
#: show fewer elements than the same instance later (a replay could meet another page).
_PRELOAD = """
var finish = arguments[arguments.length - 1];
var urls = [];
document.querySelectorAll("style").forEach(function (style) {
  (style.textContent.match(/url\\(([^)]+)\\)/g) || []).forEach(function (match) {
    urls.push(match.slice(4, -1).replace(/["']/g, ""));
  });
});
var left = urls.length;
if (!left) { finish(0); return; }
window.budgetgymPreloaded = urls.map(function (url) {
  var image = new Image();
  image.onload = image.onerror = function () { if (--left === 0) { finish(urls.length); } };
  image.src = url;
  return image;
});
"""
_SETTLE = _READ + """
var finish = arguments[arguments.length - 1];
setTimeout(function () { finish(budgetgymRead()); }, 0);
"""


class BrowserDied(Exception):
    """The browser stopped answering during an action (its processes died, or the driver lost them)."""


def descendants(pid: int) -> list[int]:
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


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"


class Browser:
    """One ChromeDriver and its headless Chromium; its tabs are opened with :meth:`open_tab`.

    Every command takes the browser's lock and first shows the tab it is for (one round trip when
    another tab was shown last), so envs in several threads may share it."""

    def __init__(self, chrome: str, driver: str) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        for argument in ("headless", "disable-gpu", "no-sandbox"):  # MiniWoB's own headless options
            options.add_argument(argument)
        options.binary_location = chrome
        self.driver = webdriver.Chrome(service=Service(executable_path=driver), options=options)
        self.pid = os.getpid()  # a forked child never drives (or quits) its parent's browser
        self.lock = threading.RLock()
        self.dead = False
        self._blank = self.driver.current_window_handle  # the window Chromium opens with, reused by the first tab
        self._shown = self._blank
        self._tabs: set[str] = set()
        self._orphans: list[str] = []  # handles of tabs collected unclosed: closed at the next command

    def pids(self) -> list[int]:
        """ChromeDriver's process and every process under it (Chromium's)."""
        process = getattr(getattr(self.driver, "service", None), "process", None)
        return [process.pid, *descendants(process.pid)] if process is not None else []

    def open_tab(self) -> "Tab":
        with self.lock:
            self._check_owner()
            self._close_orphans()
            try:
                if self._blank is not None:
                    handle, self._blank = self._blank, None
                else:
                    self.driver.switch_to.new_window("tab")
                    handle = self.driver.current_window_handle
                # Only one tab of a browser has the focus: a page in any other would get no focus
                # events (no jQuery UI ui-state-focus after a click), so every tab behaves as focused,
                # as the one page of a browser of its own does.
                self.driver.execute_cdp_cmd("Emulation.setFocusEmulationEnabled", {"enabled": True})
            except Exception as err:  # Selenium's, urllib3's and the socket's errors have no common base
                self._died()
                raise BrowserDied(_describe(err)) from err
            self._shown = handle
            self._tabs.add(handle)
        tab = Tab(self, handle)
        tab.finalizer = weakref.finalize(tab, self._orphans.append, handle)  # a list append: safe in the collector
        return tab

    def run(self, handle: str, command: Any, *args: Any) -> Any:
        """``command(driver, *args)`` with tab ``handle`` shown; any failure raises :class:`BrowserDied`."""
        with self.lock:
            self._check_owner()
            if handle not in self._tabs:
                raise BrowserDied("the tab is closed")
            self._close_orphans()
            try:
                if self._shown != handle:
                    self.driver.switch_to.window(handle)
                    self._shown = handle
                return command(self.driver, *args)
            except Exception as err:
                self._died()
                raise BrowserDied(_describe(err)) from err

    def close_tab(self, handle: str) -> None:
        """Close the tab; the browser quits with its last one."""
        with self.lock:
            if handle not in self._tabs or self.pid != os.getpid():
                return
            self._tabs.discard(handle)
            self._orphans[:] = [h for h in self._orphans if h != handle]  # in place: the finalizers append to it
            if not self._tabs:
                self.quit()
                return
            self._close_window(handle)

    def quit(self) -> None:
        """Quit the browser and wait until its processes are gone; any still there after
        ``_QUIT_WAIT_S`` are killed, by process id."""
        with self.lock:
            if self.pid != os.getpid():
                return
            self.dead = True
            self._tabs.clear()
            pids = self.pids()
            try:
                self.driver.quit()
            except Exception:  # the driver of a dead browser cannot quit it: its processes are killed below
                pass
            finally:
                deadline = time.monotonic() + _QUIT_WAIT_S
                while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
                    time.sleep(0.02)
                for pid in pids:
                    if alive(pid):
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass

    # ------------------------------------------------------------------ internals

    def _check_owner(self) -> None:
        if self.dead or self.pid != os.getpid():
            raise BrowserDied("the browser is gone" if self.dead else "the browser belongs to another process")

    def _close_orphans(self) -> None:
        while self._orphans:
            handle = self._orphans.pop()
            if handle in self._tabs:
                self._tabs.discard(handle)
                if not self._tabs:  # every tab collected: a fresh one is about to be opened, keep the window
                    self._blank = handle
                    continue
                self._close_window(handle)

    def _close_window(self, handle: str) -> None:
        """Close the window of a tab, then show another live one (WebDriver opens a new tab, and
        runs a script, only from a current window)."""
        try:
            self.driver.switch_to.window(handle)
            self.driver.close()
            self._shown = next(iter(self._tabs))
            self.driver.switch_to.window(self._shown)
        except Exception:
            self._shown = None
            self._died()

    def _died(self) -> None:
        """After a failed command: a browser that still answers keeps serving; one that does not is
        ended (its processes killed), and :func:`shared_browser` starts another."""
        try:
            self.driver.window_handles  # a session command: it answers with no current window too
            return
        except Exception:
            pass
        self.quit()


class Tab:
    """One page of the browser, for one env: MiniWoB's task ``name`` loaded in it, and its actions.

    Returned by :meth:`Browser.open_tab`; :meth:`close` closes it (the browser quits with its last)."""

    def __init__(self, browser: Browser, handle: str) -> None:
        self.browser = browser
        self.handle = handle
        self.task: str | None = None
        self.finalizer: Any = None  # set by open_tab: an unclosed tab is closed after it is collected
        self._extract: Any = None

    def load(self, name: str, time_limit_ms: int | None) -> None:
        """Show MiniWoB task ``name`` (loading its page unless it is already loaded)."""
        if self.task == name:
            return
        from miniwob.fields import get_field_extractor
        from miniwob.selenium_instance import DEFAULT_BASE_URL

        url = urllib.parse.urljoin(DEFAULT_BASE_URL, f"{name}.html")

        def load(driver: Any) -> None:
            driver.get(url)
            driver.execute_async_script(_PRELOAD)
            if time_limit_ms is not None:
                driver.execute_script(f"core.EPISODE_MAX_TIME = {int(time_limit_ms)};")

        self.task = None
        self.browser.run(self.handle, load)
        self._extract = get_field_extractor(name)
        self.task = name

    def reset(self, seed: int) -> dict[str, Any]:
        """End any episode, start one from ``seed``; the page as :meth:`read` gives it, with ``fields``."""
        state = self.browser.run(self.handle, lambda driver: driver.execute_async_script(_RESET, seed))
        if state is None:
            raise BrowserDied(f"the task {self.task} was not ready after {_READY_POLLS * _READY_POLL_MS} ms")
        observation = self._observation(state)
        response = state["utterance"]
        fields = list(response["fields"].items()) if isinstance(response, dict) else self._extract(observation["utterance"])
        observation["fields"] = [(str(k), str(v)) for k, v in fields]
        return observation

    def click(self, ref: int) -> dict[str, Any]:
        return self._observation(self.browser.run(self.handle, lambda driver: driver.execute_async_script(_CLICK, ref)))

    def type(self, ref: int, text: str) -> dict[str, Any]:
        """Focus element ``ref`` (MiniWoB's click), then send ``text`` as key presses, as MiniWoB's
        FOCUS_ELEMENT_AND_TYPE_TEXT does."""
        from miniwob.selenium_actions import execute_type_text

        def focus_and_type(driver: Any) -> Any:
            driver.execute_script("core.elementClick(arguments[0]);", ref)
            execute_type_text(text, driver)
            return driver.execute_async_script(_SETTLE)

        return self._observation(self.browser.run(self.handle, focus_and_type))

    def close(self) -> None:
        if self.finalizer is not None:
            self.finalizer.detach()
        self.browser.close_tab(self.handle)

    @staticmethod
    def _observation(state: dict[str, Any]) -> dict[str, Any]:
        """``done`` with ``raw_reward`` and ``reason``, or ``utterance`` and ``elements`` (MiniWoB's
        element fields, cut to its limits as its observation space cuts them)."""
        if state["done"]:
            return {"done": True, "raw_reward": float(state["raw_reward"] or 0.0), "reason": state["reason"]}
        from miniwob.constants import ATTRIBUTE_MAX_LENGTH, TEXT_MAX_LENGTH, UTTERANCE_MAX_LENGTH
        from miniwob.dom import DOMElement

        response = state["utterance"]
        utterance = response["utterance"] if isinstance(response, dict) else response
        elements = [{
            "ref": int(e.ref), "parent": int(e.parent.ref) if e.parent else 0, "tag": e.tag[:ATTRIBUTE_MAX_LENGTH],
            "text": (e.text or "")[:TEXT_MAX_LENGTH], "value": str(e.value or "")[:TEXT_MAX_LENGTH],
            "id": e.id[:ATTRIBUTE_MAX_LENGTH], "classes": e.classes[:ATTRIBUTE_MAX_LENGTH],
        } for e in DOMElement(state["dom"]).subtree_elements]
        return {"done": False, "utterance": str(utterance)[:UTTERANCE_MAX_LENGTH], "elements": elements}


_shared: Browser | None = None
_shared_lock = threading.Lock()


def shared_browser(chrome: str, driver: str) -> Browser:
    """This process's browser, started at the first call and again after it died or quit."""
    global _shared
    with _shared_lock:
        browser = _shared
        if browser is None or browser.dead or browser.pid != os.getpid():
            browser = _shared = Browser(chrome, driver)
        return browser


@atexit.register
def _quit_shared() -> None:
    browser = _shared
    if browser is not None and not browser.dead and browser.pid == os.getpid():
        browser.quit()
