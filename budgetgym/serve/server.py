"""``budgetgym serve ID``: one registered id over OpenEnv's WebSocket protocol (see :mod:`.protocol`).

Each WebSocket connection to ``/ws`` is a session with an env of its own (:class:`ServedEnv`, an
OpenEnv ``Environment``); an episode lives in one session, and sessions share nothing. The budget
and error-injection wrappers are applied here, from the reset's keys, by ``budgetgym.make``: a
trainer asks for ``budget_mix`` or ``inject_errors`` in its reset and gets the same episodes as in
process. A session's calls run one at a time on a thread of its own (a backend bound to the thread
that made it keeps working), so one slow env does not hold the others.

Safety (each has a test in tests/serve):

* binds 127.0.0.1 unless told otherwise, and refuses to bind another address without a token;
* a token, when set, is required on every route but ``/health``: ``Authorization: Bearer TOKEN``,
  or HTTP Basic with the token as password (what a WebSocket client sends for a URL
  ``ws://user:TOKEN@host:port``, OpenEnv's own client among them); else 401, nothing opened;
* a frame over ``max_message_bytes`` is refused with a ``MESSAGE_TOO_BIG`` error and changes
  nothing; one over twice that closes the connection (1009, the transport's limit); an HTTP body
  over the same bound is refused with 413 before it is read; only GET is served over HTTP (405);
* malformed frames (not JSON, not an object, an unknown type, fields of the wrong type) get an
  error with OpenEnv's code and change nothing; a refused reset leaves the running episode as it
  was (a new wrapper stack is swapped in only after its reset succeeded);
* at most ``max_sessions`` sessions (one more is told ``CAPACITY_REACHED`` and closed, 1013);
  a session idle ``idle_seconds`` is told ``SESSION_EXPIRED``, closed (1001) and its env closed.

Env keyword arguments (``split``, ``task_ids``, ...) are the server's to set, never a client's: a
reset cannot make the server open files or change the task set it was started with.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import ipaddress
import os
import socket
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import gymnasium as gym

import budgetgym
from budgetgym.core.env import text_env
from budgetgym.core.extras import require
from budgetgym.serve import protocol
from budgetgym.serve.protocol import (GYM_OPTIONS, INFO_PATH, MESSAGE_TOO_BIG, SESSION_EXPIRED, UNAUTHORIZED,
                                      WRAPPER_DEFAULTS, WRAPPER_OPTIONS, encode)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_SESSIONS = 64
DEFAULT_IDLE_SECONDS = 900.0
DEFAULT_MAX_MESSAGE_BYTES = 8 * 2**20  # a Coding-v0 snapshot with its workspace fits; a flood does not
_SEED_BOUND = 2**32  # what Gymnasium's seeding takes


@dataclass(frozen=True)
class ServeConfig:
    """What a server serves and its limits (see the module docstring)."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    token: str | None = None
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        gym.spec(self.env_id)  # an unknown id fails here, with Gymnasium's close matches
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if not self.idle_seconds > 0:
            raise ValueError(f"idle_seconds must be > 0, got {self.idle_seconds}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes must be >= 1024, got {self.max_message_bytes}")
        if self.token is not None and (len(self.token) < 16 or not self.token.isprintable() or " " in self.token):
            raise ValueError("a token must be at least 16 printable characters without spaces")


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < _SEED_BOUND:
        raise ValueError(f"seed must be an int in [0, 2**32) or null, got {seed!r}")
    return seed


class ServedEnv:
    """One session's env: an OpenEnv ``Environment`` over ``budgetgym.make(env_id, ...)``.

    ``reset(seed, episode_id, **keys)`` takes :data:`~budgetgym.serve.protocol.GYM_OPTIONS` (to the
    env's reset) and :data:`~budgetgym.serve.protocol.WRAPPER_OPTIONS` (to ``budgetgym.make``);
    wrapper options left out take ``make``'s defaults, so each reset says its whole budget. The
    wrapper stack is rebuilt only when they change, and swapped in only once its reset succeeded.
    Raises ``ValueError``, ``KeyError`` or ``SnapshotError`` for a refused reset, and
    ``RuntimeError`` for a step with no episode running; the session is unchanged by either.
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self._env: gym.Env[str, str] | None = None
        self._wrappers: str | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **keys: Any) -> Any:
        seed = _check_seed(seed)
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > 255):
            raise ValueError("episode_id must be a string of at most 255 characters")
        unknown = sorted(set(keys) - set(GYM_OPTIONS) - set(WRAPPER_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset keys {unknown}; the keys are seed, episode_id, "
                             f"{', '.join(GYM_OPTIONS)} and the wrappers' {', '.join(WRAPPER_OPTIONS)}")
        options = {k: keys[k] for k in GYM_OPTIONS if k in keys} or None
        wrappers = {k: keys.get(k, WRAPPER_DEFAULTS[k]) for k in WRAPPER_OPTIONS}
        wrapper_key = encode(wrappers)
        if self._env is not None and wrapper_key == self._wrappers:
            observation, info = self._env.reset(seed=seed, options=options)
        else:
            env = budgetgym.make(self.env_id, **wrappers, **self.env_kwargs)
            try:
                observation, info = env.reset(seed=seed, options=options)
            except BaseException:
                env.close()
                raise
            old, self._env, self._wrappers = self._env, env, wrapper_key
            if old is not None:
                old.close()
        self._episode_id = episode_id or uuid.uuid4().hex
        self._steps = 0
        return self._observation(observation, 0.0, False, False, info)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        if self._env is None:
            raise RuntimeError("no episode in this session: send a reset first")
        observation, reward, terminated, truncated, info = self._env.step(action.text)
        self._steps += 1
        return self._observation(observation, reward, terminated, truncated, info)

    @property
    def state(self) -> Any:
        _, _, EpisodeState = protocol.models()
        if self._env is None:
            return EpisodeState(env_id=self.env_id)
        base = text_env(self._env)
        return EpisodeState(episode_id=self._episode_id, step_count=self._steps, env_id=self.env_id,
                            task_id=base.task.id if base.task is not None else None, turn=base.turn,
                            snapshot=base.snapshot() if base.task is not None else None)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    def _observation(self, text: str, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]) -> Any:
        _, TextObservation, _ = protocol.models()
        return TextObservation(text=text, info=info, terminated=bool(terminated), truncated=bool(truncated),
                               reward=float(reward), done=bool(terminated or truncated))


def _environment_class() -> type:
    """:class:`ServedEnv` as a subclass of OpenEnv's ``Environment`` (built on first use: the
    module imports without ``openenv-core``, the client does not need it)."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        from openenv.core.env_server.interfaces import Environment
        from openenv.core.env_server.types import EnvironmentMetadata

        class OpenEnvServedEnv(ServedEnv, Environment):
            __doc__ = ServedEnv.__doc__
            SUPPORTS_CONCURRENT_SESSIONS = True

            def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None) -> None:
                Environment.__init__(self)
                ServedEnv.__init__(self, env_id, env_kwargs)

            def get_metadata(self) -> Any:
                entry = next((e for e in budgetgym.REGISTRY if e.id == self.env_id), None)
                return EnvironmentMetadata(name=self.env_id, version=budgetgym.__version__,
                                           description=entry.description if entry else self.env_id)

        _ENVIRONMENT = OpenEnvServedEnv
    return _ENVIRONMENT


_ENVIRONMENT: type | None = None


def _error(code: Any, message: str, **extra: Any) -> str:
    return encode({"type": "error", "data": {"message": message, "code": str(getattr(code, "value", code)), **extra}})


def _authorized(headers: list[tuple[bytes, bytes]], token: str) -> bool:
    """The request carries the token: ``Bearer TOKEN``, or Basic with the token as password."""
    for name, value in headers:
        if name.lower() != b"authorization":
            continue
        scheme, _, credential = value.decode("latin-1").strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() == "basic":
            try:
                credential = base64.b64decode(credential, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credential.encode("utf-8", "surrogateescape"), token.encode("utf-8"))
    return False


class App:
    """The ASGI application: ``/ws`` (sessions), ``GET /health``, ``/metadata``, ``/schema`` (OpenEnv's
    routes) and ``GET /budgetgym`` (the served id, its spaces and the server's limits)."""

    def __init__(self, config: ServeConfig) -> None:
        for module in ("openenv.core.env_server", "fastapi", "uvicorn"):
            require(module, "budgetgym serve")
        self.config = config
        self.sessions: dict[str, ServedEnv] = {}
        self._lock = threading.Lock()
        try:  # a bad env argument fails at start, not in every session
            probe = gym.make(config.env_id, **config.env_kwargs)
        except TypeError as err:
            raise ValueError(f"{config.env_id} does not take the arguments {config.env_kwargs}: {err}") from None
        try:
            base = text_env(probe)
            self.description = {
                "env_id": config.env_id, "version": budgetgym.__version__, "protocol": "openenv-websocket",
                "max_action_length": base.max_action_length, "max_observation_length": base.max_observation_length,
                "reset_keys": ["seed", "episode_id", *GYM_OPTIONS, *WRAPPER_OPTIONS],
                "max_sessions": config.max_sessions, "idle_seconds": config.idle_seconds,
                "max_message_bytes": config.max_message_bytes,
            }
        finally:
            probe.close()
        self._http = self._http_app()

    # -- HTTP ---------------------------------------------------------------------------------------------------------
    def _http_app(self) -> Any:
        from fastapi import FastAPI
        from openenv.core.env_server.types import HealthResponse, SchemaResponse, State

        TextAction, TextObservation, EpisodeState = protocol.models()
        app = FastAPI(title=f"budgetgym {self.config.env_id}", docs_url=None, redoc_url=None, openapi_url=None)
        metadata = _environment_class()(self.config.env_id).get_metadata()

        @app.get("/health")
        def health() -> Any:
            return HealthResponse()

        @app.get("/metadata")
        def get_metadata() -> Any:
            return metadata

        @app.get("/schema")
        def schema() -> Any:
            return SchemaResponse(action=TextAction.model_json_schema(), observation=TextObservation.model_json_schema(),
                                  state={**State.model_json_schema(), **EpisodeState.model_json_schema()})

        @app.get(INFO_PATH)
        def info() -> Any:
            return {**self.description, "active_sessions": len(self.sessions)}

        return app

    async def _refuse_http(self, send: Callable, status: int, message: str, headers: list | None = None) -> None:
        body = encode({"detail": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                *(headers or [])]})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        kind = scope["type"]
        if kind == "websocket":
            await self._websocket(scope, receive, send)
            return
        if kind != "http":
            return  # lifespan: nothing to start or stop
        if self.config.token and scope["path"] != "/health" and not _authorized(scope["headers"], self.config.token):
            await self._refuse_http(send, 401, "a token is required: Authorization: Bearer TOKEN",
                                    [(b"www-authenticate", b'Bearer realm="budgetgym"')])
            return
        length = next((v for k, v in scope["headers"] if k.lower() == b"content-length"), None)
        if length is not None and (not length.isdigit() or int(length) > self.config.max_message_bytes):
            await self._refuse_http(send, 413, f"request bodies are at most {self.config.max_message_bytes} bytes")
            return
        if scope["method"] not in ("GET", "HEAD") or any(k.lower() == b"transfer-encoding" for k, _ in scope["headers"]):
            await self._refuse_http(send, 405, "only GET is served over HTTP; sessions are WebSockets at /ws",
                                    [(b"allow", b"GET")])
            return
        await self._http(scope, receive, send)

    # -- sessions -----------------------------------------------------------------------------------------------------
    async def _websocket(self, scope: dict, receive: Callable, send: Callable) -> None:
        from openenv.core.env_server.types import WSErrorCode

        connect = await receive()
        if connect["type"] != "websocket.connect":
            return
        if scope["path"] != "/ws":
            await send({"type": "websocket.close", "code": 1008, "reason": "sessions are at /ws"})
            return
        if self.config.token and not _authorized(scope["headers"], self.config.token):
            body = encode({"detail": "a token is required: Authorization: Bearer TOKEN", "code": UNAUTHORIZED}).encode()
            await send({"type": "websocket.http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", b'Bearer realm="budgetgym"')]})
            await send({"type": "websocket.http.response.body", "body": body})
            return
        await send({"type": "websocket.accept"})
        with self._lock:
            full = len(self.sessions) >= self.config.max_sessions
            session_id = uuid.uuid4().hex
            if not full:
                self.sessions[session_id] = env = _environment_class()(self.config.env_id, self.config.env_kwargs)
        if full:
            await send({"type": "websocket.send", "text": _error(
                WSErrorCode.CAPACITY_REACHED, f"the server holds at most {self.config.max_sessions} sessions; "
                "try again later", active_sessions=len(self.sessions), max_sessions=self.config.max_sessions)})
            await send({"type": "websocket.close", "code": 1013, "reason": "at capacity"})
            return
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="budgetgym-session")
        loop = asyncio.get_running_loop()
        try:
            await self._session(env, executor, loop, receive, send)
        finally:
            with self._lock:
                self.sessions.pop(session_id, None)
            await loop.run_in_executor(executor, env.close)  # on the thread that made the env
            executor.shutdown(wait=False)

    async def _session(self, env: Any, executor: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop,
                       receive: Callable, send: Callable) -> None:
        from openenv.core.env_server.types import WSErrorCode
        from pydantic import ValidationError

        TextAction, _, _ = protocol.models()
        limit = self.config.max_message_bytes
        while True:
            try:
                message = await asyncio.wait_for(receive(), self.config.idle_seconds)
            except asyncio.TimeoutError:
                idle = f"the session was idle for {self.config.idle_seconds:g} s"
                await send({"type": "websocket.send", "text": _error(SESSION_EXPIRED, f"{idle} and is closed")})
                await send({"type": "websocket.close", "code": 1001, "reason": idle})
                return
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                reply = _error(WSErrorCode.INVALID_JSON, "frames are JSON text, not binary")
            elif len(text) > limit // 4 and len(text.encode("utf-8", "surrogatepass")) > limit:
                reply = _error(MESSAGE_TOO_BIG, f"a message is at most {limit} bytes; this one was refused, "
                               "nothing changed")
            else:
                reply = await self._answer(text, env, executor, loop, TextAction, WSErrorCode, ValidationError)
                if reply is None:
                    await send({"type": "websocket.close", "code": 1000})
                    return
            try:
                await send({"type": "websocket.send", "text": reply})
            except OSError:  # the client left while its request ran: the session ends here
                return

    async def _answer(self, text: str, env: Any, executor: ThreadPoolExecutor, loop: asyncio.AbstractEventLoop,
                      TextAction: type, WSErrorCode: Any, ValidationError: type) -> str | None:
        """The reply to one frame (None: the client closed the session)."""
        try:
            message = protocol.decode(text)
        except ValueError as err:
            return _error(WSErrorCode.INVALID_JSON, f"not JSON: {err}")
        if not isinstance(message, dict):
            return _error(WSErrorCode.VALIDATION_ERROR, "a message is a JSON object with a type")
        kind = message.get("type")
        extra = sorted(set(message) - {"type", "data"})
        data = message.get("data", {})
        if kind not in ("reset", "step", "state", "close"):
            return _error(WSErrorCode.UNKNOWN_TYPE, f"unknown message type {kind!r}: reset, step, state or close")
        if extra or not isinstance(data, dict) or (kind in ("state", "close") and "data" in message) \
                or (kind == "step" and "data" not in message):
            return _error(WSErrorCode.VALIDATION_ERROR, f"a {kind} message is "
                          + ('{"type": "' + kind + '"}' if kind in ("state", "close") else
                             '{"type": "' + kind + '", "data": {...}}'))
        try:
            if kind == "close":
                return None
            if kind == "reset":
                observation = await loop.run_in_executor(executor, lambda: env.reset(**data))
            elif kind == "step":
                try:
                    action = TextAction.model_validate(data)
                except ValidationError as err:
                    return _error(WSErrorCode.VALIDATION_ERROR, 'a step is {"type": "step", "data": {"text": "..."}}: '
                                  + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors()))
                observation = await loop.run_in_executor(executor, env.step, action)
            else:
                state = await loop.run_in_executor(executor, lambda: env.state)
                return encode({"type": "state", "data": state.model_dump()})
        except Exception as err:  # a refused reset or step: the session is as it was
            return _error(WSErrorCode.EXECUTION_ERROR, f"{type(err).__name__}: {err.args[0] if err.args else err}")
        try:
            return encode({"type": "observation", "data": {
                "observation": {"text": observation.text, "info": observation.info,
                                "terminated": observation.terminated, "truncated": observation.truncated},
                "reward": observation.reward, "done": observation.done}})
        except (TypeError, ValueError) as err:  # an env that broke the contract's JSON info: said, not a crash
            return _error(WSErrorCode.EXECUTION_ERROR, f"the env's {kind} returned what JSON cannot carry ({err}); "
                          "its info must be JSON-serialisable")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Server:
    """A server bound to ``host:port`` (``port=0``: a free one, then read ``url``): ``serve_forever()``
    until Ctrl-C or SIGTERM, or ``serve_in_background()`` and ``close()`` (tests, benchmarks)."""

    def __init__(self, config: ServeConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
        import uvicorn

        if not is_loopback(host) and not config.token:
            raise ValueError(f"serving on {host} (beyond this machine) needs a token: --token-file or "
                             "BUDGETGYM_SERVE_TOKEN")
        self.app = App(config)
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self._sock.listen(2048)  # connections wait in the backlog until the server takes them
        self.url = f"http://{host if ':' not in host else f'[{host}]'}:{self._sock.getsockname()[1]}"
        self._uvicorn = uvicorn.Server(uvicorn.Config(
            self.app, ws="websockets-sansio", ws_max_size=2 * config.max_message_bytes,
            ws_per_message_deflate=False, lifespan="off", log_level="warning", access_log=False,
            timeout_keep_alive=5, limit_concurrency=config.max_sessions + 32))  # room for refusals and checks
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve until Ctrl-C or SIGTERM (uvicorn's handlers: open sessions are closed, their envs too)."""
        try:
            self._uvicorn.run(sockets=[self._sock])
        finally:
            self._sock.close()

    def serve_in_background(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.serve_forever, name="budgetgym-serve", daemon=True)
        self._thread.start()
        return self._thread

    def close(self) -> None:
        self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._sock.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(config: ServeConfig, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          ready: Callable[[str], None] | None = None) -> int:
    """Serve until interrupted. ``ready(url)`` is called once the socket listens."""
    server = Server(config, host, port)
    if ready is not None:
        ready(server.url)
    server.serve_forever()
    return 0


def read_token(token_file: str | None) -> str | None:
    """The bearer token: the file's first line, else ``$BUDGETGYM_SERVE_TOKEN``, else None."""
    from budgetgym.serve.client import TOKEN_VARIABLE

    if token_file is not None:
        with open(token_file, encoding="utf-8") as handle:
            return handle.readline().strip() or None
    return os.environ.get(TOKEN_VARIABLE) or None


def serve_command(env_id: str, args: Any, env_kwargs: Mapping[str, Any] | None = None) -> int:
    """``budgetgym serve ID``: serve until Ctrl-C, the URL printed once the socket listens; every
    session's env is made with ``env_kwargs`` (``--env-arg``) and ``--split``."""
    env_kwargs = {**(env_kwargs or {}), **({"split": args.split} if args.split else {})}
    config = ServeConfig(env_id, env_kwargs=env_kwargs,
                         token=read_token(args.token_file), max_sessions=args.max_sessions,
                         idle_seconds=args.idle_seconds, max_message_bytes=args.max_message_bytes)

    def ready(url: str) -> None:
        where = "this machine only" if is_loopback(args.host) else "reachable beyond this machine"
        print(f"budgetgym serve: {env_id} on {url} (OpenEnv sessions at {url.replace('http', 'ws', 1)}/ws; {where}; "
              f"{'token required' if config.token else 'no token'}); Ctrl-C stops it", flush=True)

    return serve(config, args.host, args.port, ready=ready)
