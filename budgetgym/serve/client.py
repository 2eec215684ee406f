"""``budgetgym/Remote-v0``: a Gymnasium env whose episodes run on a ``budgetgym serve`` server.

    env = gym.make("budgetgym/Remote-v0", url="http://127.0.0.1:8000", env_id="budgetgym/FunctionCalling-v0",
                   budget=0.5, reveal="remaining")
    obs, info = env.reset(seed=0, options={"task_id": "fc-..."})
    obs, reward, terminated, truncated, info = env.step(action)

It speaks OpenEnv's WebSocket protocol (:mod:`budgetgym.serve.protocol`) and needs only the
``websockets`` package, not ``openenv-core``. The env's observations, rewards, flags and ``info``
are the served env's own, byte for byte: the wrappers run on the server, from the wrapper options
given here (sent with every reset; a reset's ``options`` may override them for one episode).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import gymnasium as gym

from budgetgym.core.extras import require
from budgetgym.core.spaces import UnicodeText
from budgetgym.serve.protocol import GYM_OPTIONS, INFO_PATH, SESSION_EXPIRED, WRAPPER_OPTIONS, decode, encode

TOKEN_VARIABLE = "BUDGETGYM_SERVE_TOKEN"
_MAX_FRAME = 256 * 2**20  # what the client accepts from its server (a large snapshot, a long observation)


class RemoteEnvError(RuntimeError):
    """The server refused a request (a bad reset, a step with no episode running). ``code`` is the
    protocol's error code; the session is unchanged and can go on."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class RemoteEnv(gym.Env[str, str]):
    """Description:
        A client of one session on a budgetgym server: each ``reset`` and ``step`` is one round trip,
        and the episode is the served env's, wrappers and all.

    Action Space:
        ``UnicodeText`` of the served env's ``max_action_length``. A non-string action is a
        ``TypeError`` here (a program's mistake: a model's output is a string, and any string,
        however malformed, goes to the env, which answers it as it would in process).

    Rewards, Termination:
        The served env's. A server that went away (killed, unreachable, the session expired)
        raises one ``ConnectionError`` that says the episode is lost; a refused request raises
        :class:`RemoteEnvError` and changes nothing.

    Registered Configurations:
        ``budgetgym/Remote-v0`` with ``url`` (``http://host:port``), ``env_id`` (checked against the
        server's; None takes whatever it serves), ``token`` (default ``$BUDGETGYM_SERVE_TOKEN``),
        wrapper options (``budget``, ``reveal``, ``budget_mix``, ``inject_errors``, as
        ``budgetgym.make`` takes them) and ``timeout`` (seconds a reply may take).

    ``snapshot()`` and ``state()`` read the session's state (OpenEnv's ``state`` message); restore a
    snapshot with ``reset(options={"snapshot": snap})``. The oracle is not served: agents under
    evaluation never see it, and a server's clients are such agents.
    """

    metadata = {"render_modes": []}

    def __init__(self, url: str, env_id: str | None = None, token: str | None = None, *, timeout: float = 600.0,
                 connect_timeout: float = 10.0, **wrapper_options: Any) -> None:
        unknown = sorted(set(wrapper_options) - set(WRAPPER_OPTIONS))
        if unknown:
            raise TypeError(f"unknown options {unknown}; the wrapper options are {', '.join(WRAPPER_OPTIONS)}")
        require("websockets.sync.client", "budgetgym/Remote-v0")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be http://host:port or https://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE) or None
        self.wrapper_options = dict(wrapper_options)
        self.timeout = timeout
        self.description = self._describe(connect_timeout)
        served = self.description["env_id"]
        if env_id is not None and env_id != served:
            raise ValueError(f"the server at {self.url} serves {served}, not {env_id}")
        self.env_id = served
        self.observation_space = UnicodeText(self.description["max_observation_length"])
        self.action_space = UnicodeText(self.description["max_action_length"])
        self._lost: str | None = None
        self._ws = self._connect(connect_timeout)

    # -- Gymnasium ----------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(GYM_OPTIONS) - set(WRAPPER_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset options {unknown}; use {', '.join(GYM_OPTIONS)} or the wrapper "
                             f"options {', '.join(WRAPPER_OPTIONS)}")
        data = {**self.wrapper_options, **options}
        if seed is not None:
            data["seed"] = seed
        result = self._request({"type": "reset", "data": data}, "observation")
        return result["observation"]["text"], result["observation"]["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"an action is a string (the model's output), got {type(action).__name__}")
        result = self._request({"type": "step", "data": {"text": action}}, "observation")
        observation = result["observation"]
        return (observation["text"], float(result["reward"]), bool(observation["terminated"]),
                bool(observation["truncated"]), observation["info"])

    def state(self) -> dict[str, Any]:
        """The session's state: ``episode_id``, ``step_count``, ``env_id``, ``task_id``, ``turn``, ``snapshot``."""
        return self._request({"type": "state"}, "state")

    def snapshot(self) -> dict[str, Any]:
        """The served env's snapshot (restore it with ``reset(options={"snapshot": snap})``)."""
        snapshot = self.state()["snapshot"]
        if snapshot is None:
            raise RuntimeError("no episode to snapshot: reset first")
        return snapshot

    def close(self) -> None:
        ws, self._ws = getattr(self, "_ws", None), None
        if ws is not None:
            try:
                ws.send(encode({"type": "close"}))
            except Exception:  # the server is gone already: nothing to close there
                pass
            ws.close()
        super().close()

    def __reduce__(self) -> Any:
        raise TypeError("a RemoteEnv holds a live session and cannot be copied; make another with the same arguments")

    # -- the wire -----------------------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _describe(self, timeout: float) -> dict[str, Any]:
        request = urllib.request.Request(self.url + INFO_PATH, headers=self._headers())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            if err.code == 401:
                raise PermissionError(f"the server at {self.url} wants a token (token=..., or ${TOKEN_VARIABLE}), "
                                      "and this one was " + ("missing" if not self.token else "refused")) from None
            raise ConnectionError(f"the server at {self.url} answered {err.code} {err.reason}: is it a budgetgym "
                                  "server?") from None
        except (OSError, ValueError) as err:
            raise ConnectionError(f"no budgetgym server at {self.url}: {err}") from None

    def _connect(self, timeout: float) -> Any:
        from websockets.sync.client import connect

        ws_url = "ws" + self.url[len("http"):] + "/ws"
        try:
            return connect(ws_url, additional_headers=self._headers(), open_timeout=timeout, max_size=_MAX_FRAME,
                           compression=None, proxy=None, legacy=True)
        except Exception as err:
            raise ConnectionError(f"could not open a session at {ws_url}: {err}") from None

    def _request(self, message: dict[str, Any], expected: str) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            raise ConnectionError(self._lost or "this env is closed")
        try:
            self._ws.send(encode(message))
            reply = decode(self._ws.recv(timeout=self.timeout))
        except (ConnectionClosed, OSError, TimeoutError) as err:
            reason = getattr(getattr(err, "rcvd", None), "reason", "") or str(err) or type(err).__name__
            self._lost = (f"the session with the budgetgym server at {self.url} ended ({reason}): the episode is "
                          "lost; make a new env to start another")
            ws, self._ws = self._ws, None
            ws.close()
            raise ConnectionError(self._lost) from None
        if reply.get("type") == "error":
            error = reply.get("data", {})
            if error.get("code") == SESSION_EXPIRED:  # said before the server closed: this is not a reply
                self._lost = f"{error.get('message')}: the episode is lost; make a new env to start another"
                ws, self._ws = self._ws, None
                ws.close()
                raise ConnectionError(self._lost)
            raise RemoteEnvError(f"the server refused the {message['type']}: {error.get('message')}",
                                 str(error.get("code")))
        if reply.get("type") != expected:
            raise RemoteEnvError(f"the server answered a {message['type']} with {reply.get('type')!r}", "PROTOCOL")
        return reply["data"]
