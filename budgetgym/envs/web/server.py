"""The shop over HTTP: ``budgetgym serve web`` serves the same shop as real HTML to browsers.

Each session is one episode of its own :class:`WebEnv` (the text env itself: the same pages, the
same parser and checks, the same turn budget and the same reward). A browser's request becomes one
``env.step`` with the matching tool call, so a purchase made in a browser scores exactly as the
same choices made in text.

Routes (``TOKEN`` is a random, unguessable session token; it is the only key to a session):

* ``GET /``: the start page, with a form to start a session (a task id, or one drawn by a seed);
* ``POST /session`` (``task_id``, ``seed``): starts a session; redirects to ``/s/TOKEN/``;
* ``GET /s/TOKEN/``: the open page of the session;
* ``POST /s/TOKEN/search`` (``query``), ``POST /s/TOKEN/click`` (``element``), ``POST /s/TOKEN/back``:
  one turn each; redirect back to the page (POST, then GET);
* ``GET /s/TOKEN/status``: the episode as JSON (task, turn, budget, progress, reward, WebShop's
  score of a purchase, success);
* ``POST /s/TOKEN/close``: ends the session.

Safety: binds 127.0.0.1 unless told otherwise; request bodies over ``max_body`` bytes are refused
(413) and request lines over ``MAX_PATH`` (414); at most ``max_sessions`` live sessions (503 beyond);
sessions idle for ``idle_seconds`` are closed (checked on every request and by a reaper thread);
sockets time out after ``SOCKET_TIMEOUT`` seconds so a stalled client cannot hold a thread. No
scripts are served, every text is escaped, and a Content-Security-Policy forbids scripts anyway.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from budgetgym.envs.web.env import WebEnv
from budgetgym.envs.web.html import render_page

DEFAULT_HOST = "127.0.0.1"
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_SECONDS = 900.0
DEFAULT_MAX_BODY = 4096
MAX_PATH = 2048
SOCKET_TIMEOUT = 30.0
_SEED_BOUND = 2**31 - 1


@dataclass
class Session:
    """One episode: its own env, a lock (one request at a time) and the time of its last use."""

    env: WebEnv
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    message: str | None = None
    terminated: bool = False
    truncated: bool = False
    reward: float = 0.0
    score: float | None = None  # WebShop's graded score of a purchase (info["score"])
    progress: float = 0.0

    def status(self) -> dict[str, Any]:
        env = self.env
        return {"task_id": env.task.id, "instruction": env.task.instruction, "turn": env.turn,
                "max_turns": env.task.max_turns, "progress": self.progress, "terminated": self.terminated,
                "truncated": self.truncated, "done": self.terminated or self.truncated, "reward": self.reward,
                "score": self.score, "success": self.terminated and self.reward == 1.0, "page": env.shop.page["kind"],
                "message": self.message}

    def step(self, call: dict[str, Any]) -> None:
        if self.terminated or self.truncated:
            self.message = "The episode is over; start a new session."
            return
        _, reward, self.terminated, self.truncated, info = self.env.step(json.dumps(call, ensure_ascii=False))
        self.reward = float(reward)
        self.score = info.get("score")
        self.progress = info["progress"]
        self.message = info["action_error"] or self.env.last_error


class SessionLimit(Exception):
    """No room for another live session."""


class SessionStore:
    """The live sessions, by token; bounded in number, closed when idle."""

    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS, idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 split: str | None = None) -> None:
        if max_sessions < 1 or idle_seconds <= 0:
            raise ValueError("max_sessions must be >= 1 and idle_seconds > 0")
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.split = split
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._template = WebEnv(split=split)  # loads the catalogue and its index once
        self.tasks = self._template.tasks

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def create(self, task_id: str | None = None, seed: int | None = None) -> str:
        """Start an episode; return its token. Raises KeyError for an unknown task, SessionLimit when full."""
        env = WebEnv(split=self.split, catalogue=self._template.catalogue)
        if seed is None:
            seed = secrets.randbelow(_SEED_BOUND)
        options = {"task_id": task_id} if task_id else None
        if task_id and task_id not in env.tasks:
            raise KeyError(f"unknown task id {task_id!r}")
        env.reset(seed=seed, options=options)
        self.expire()
        with self._lock:
            if len(self._sessions) >= self.max_sessions:
                raise SessionLimit(f"{self.max_sessions} sessions are live; close one or wait for one to expire")
            token = secrets.token_urlsafe(18)
            self._sessions[token] = Session(env)
        return token

    def get(self, token: str) -> Session | None:
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            if time.monotonic() - session.last_used > self.idle_seconds:
                del self._sessions[token]
                session.env.close()
                return None
            session.last_used = time.monotonic()
            return session

    def close(self, token: str) -> bool:
        with self._lock:
            session = self._sessions.pop(token, None)
        if session is not None:
            session.env.close()
        return session is not None

    def expire(self) -> int:
        """Close every session idle for longer than ``idle_seconds``; return how many."""
        now = time.monotonic()
        with self._lock:
            stale = [t for t, s in self._sessions.items() if now - s.last_used > self.idle_seconds]
            closed = [self._sessions.pop(t) for t in stale]
        for session in closed:
            session.env.close()
        return len(closed)


class ShopRequestHandler(BaseHTTPRequestHandler):
    server: "ShopServer"
    server_version = "budgetgym-shop"
    sys_version = ""
    timeout = SOCKET_TIMEOUT
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        if self.server.verbose:
            super().log_message(format, *args)

    # ------------------------------------------------------------------ plumbing

    def _send(self, status: int, body: str, content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: HTTPStatus, text: str) -> None:
        self._send(status, f"<!doctype html><title>{status.value}</title><p>{escape(text)}</p>",
                   headers={"Connection": "close"})
        self.close_connection = True

    def _redirect(self, location: str) -> None:
        self._send(HTTPStatus.SEE_OTHER, "", headers={"Location": location})

    def _form(self) -> dict[str, str] | None:
        """The POST body as a form; None after answering 411/413/400."""
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding"):
                self._error(HTTPStatus.LENGTH_REQUIRED, "chunked bodies are not accepted; send Content-Length")
                return None
            return {}
        if not length.isdigit():
            self._error(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            return None
        if int(length) > self.server.max_body:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"request bodies are limited to {self.server.max_body} bytes")
            return None
        raw = self.rfile.read(int(length))
        try:
            fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=16)
        except (UnicodeDecodeError, ValueError):
            self._error(HTTPStatus.BAD_REQUEST, "the body must be a UTF-8 form (application/x-www-form-urlencoded)")
            return None
        return {k: v[0] for k, v in fields.items()}

    def _route(self) -> tuple[str | None, str]:
        """(session token or None, the rest of the path)."""
        path = urlsplit(self.path).path
        if path.startswith("/s/"):
            parts = path[3:].split("/", 1)
            return parts[0], parts[1] if len(parts) > 1 else ""
        return None, path

    def _session(self, token: str) -> Session | None:
        session = self.server.store.get(token)
        if session is None:
            self._error(HTTPStatus.NOT_FOUND, "unknown or expired session; start a new one at /")
        return session

    # ------------------------------------------------------------------ methods

    def do_HEAD(self) -> None:  # noqa: N802 - the stdlib's name
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        if len(self.path) > MAX_PATH:
            return self._error(HTTPStatus.REQUEST_URI_TOO_LONG, f"paths are limited to {MAX_PATH} characters")
        token, rest = self._route()
        if token is None:
            if rest == "/":
                return self._send(HTTPStatus.OK, _start_page(self.server))
            return self._error(HTTPStatus.NOT_FOUND, "no such page")
        session = self._session(token)
        if session is None:
            return None
        with session.lock:
            if rest == "":
                status = session.status()
                html = render_page(session.env.shop.view(), f"/s/{token}/", status=status, message=session.message)
                return self._send(HTTPStatus.OK, html)
            if rest == "status":
                return self._send(HTTPStatus.OK, json.dumps(session.status()), "application/json")
        return self._error(HTTPStatus.NOT_FOUND, "no such page")

    def do_POST(self) -> None:  # noqa: N802
        if len(self.path) > MAX_PATH:
            return self._error(HTTPStatus.REQUEST_URI_TOO_LONG, f"paths are limited to {MAX_PATH} characters")
        form = self._form()
        if form is None:
            return None
        token, rest = self._route()
        if token is None:
            if rest != "/session":
                return self._error(HTTPStatus.NOT_FOUND, "no such action")
            seed_text = form.get("seed", "").strip()
            if seed_text and not (seed_text.isdigit() and len(seed_text) <= 10):
                return self._error(HTTPStatus.BAD_REQUEST, "seed must be a non-negative integer")
            try:
                new = self.server.store.create(form.get("task_id", "").strip() or None,
                                               int(seed_text) if seed_text else None)
            except KeyError as err:
                return self._error(HTTPStatus.BAD_REQUEST, str(err.args[0]))
            except SessionLimit as err:
                return self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(err))
            return self._redirect(f"/s/{new}/")
        if rest == "close":
            if not self.server.store.close(token):
                return self._error(HTTPStatus.NOT_FOUND, "unknown or expired session")
            return self._redirect("/")
        calls = {"search": ("search", "query"), "click": ("click", "element"), "back": ("back", None)}
        if rest not in calls:
            return self._error(HTTPStatus.NOT_FOUND, "no such action")
        session = self._session(token)
        if session is None:
            return None
        name, argument = calls[rest]
        arguments = {} if argument is None else {argument: form.get(argument, "")}
        with session.lock:
            session.step({"name": name, "arguments": arguments})
        return self._redirect(f"/s/{token}/")


def _start_page(server: "ShopServer") -> str:
    tasks = server.store.tasks
    examples = "".join(f"<li><code>{escape(t.id)}</code>: {escape(t.instruction)}</li>" for t in tasks[:5])
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>budgetgym shop</title></head><body>'
        "<h1>budgetgym web shop</h1>"
        f"<p>{len(tasks)} instructions. Start an episode with a task id, or leave it empty to draw one.</p>"
        '<form id="start-form" method="post" action="/session">'
        '<label>Task id <input id="task-id" name="task_id" maxlength="100"></label> '
        '<label>Seed <input id="seed" name="seed" maxlength="10"></label> '
        '<button id="start">Start</button></form>'
        f"<p>For example:</p><ul>{examples}</ul></body></html>"
    )


class ShopServer(ThreadingHTTPServer):
    """The HTTP shop. ``with ShopServer(port=0) as server: server.serve_in_background()`` in tests."""

    daemon_threads = True
    request_queue_size = 32

    def __init__(self, host: str = DEFAULT_HOST, port: int = 8000, *, max_sessions: int = DEFAULT_MAX_SESSIONS,
                 idle_seconds: float = DEFAULT_IDLE_SECONDS, max_body: int = DEFAULT_MAX_BODY,
                 split: str | None = None, verbose: bool = False) -> None:
        self.store = SessionStore(max_sessions, idle_seconds, split)
        self.max_body = max_body
        self.verbose = verbose
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        super().__init__((host, port), ShopRequestHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def _reap(self) -> None:
        interval = min(60.0, max(0.05, self.store.idle_seconds / 4))
        while not self._stop.wait(interval):
            self.store.expire()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        reaper = threading.Thread(target=self._reap, name="budgetgym-shop-reaper", daemon=True)
        reaper.start()
        self._workers.append(reaper)
        try:
            super().serve_forever(poll_interval)
        finally:
            self._stop.set()

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="budgetgym-shop", daemon=True)
        thread.start()
        self._workers.append(thread)
        return thread

    def server_close(self) -> None:
        self._stop.set()
        super().server_close()
        for token in list(self.store._sessions):
            self.store.close(token)


def serve(host: str = DEFAULT_HOST, port: int = 8000, **kwargs: Any) -> int:
    """Run the shop until interrupted (the ``budgetgym serve web`` command)."""
    with ShopServer(host, port, verbose=True, **kwargs) as server:
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(f"warning: serving on {host}, reachable beyond this machine", flush=True)
        print(f"budgetgym web shop on {server.url}/ ({len(server.store.tasks)} instructions); "
              "Ctrl-C stops it", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0
