"""``OpenAIChatAgent``: any model behind an OpenAI-compatible chat-completions endpoint (vLLM,
SGLang, llama.cpp, a hosted API), through the ``openai`` SDK.

The system prompt is the env family's instructions plus, where the server does not take native
tools, the tools written out with the accepted call forms. The episode is the message list: each
observation a user (or tool) message, each action an assistant message. With ``tool_mode="auto"``
the agent sends native tools and falls back to text actions for good if the server refuses them,
or if an episode with native tools ends without a single tool call in the replies (a server that
accepts ``tools`` and drops them, as llama-cpp-python's default chat format does: the model never
sees them). It warns when it falls back; ``tool_mode="text"`` skips the guesswork.

Every request is one that every OpenAI-compatible server accepts: an assistant message that made
tool calls is replayed with ``"content": ""``, never ``null`` (llama-cpp-python answers ``null``
with a 500 validation error). Transient failures (timeout, 429, 5xx, a malformed reply) are retried
with exponential backoff, ``max_retries`` times (a stalled server costs a turn about a minute under
the defaults); ``stream=True`` reads the reply as it comes. A wrong URL, key or model, a refused
connection and a request the server rejects as invalid (a validation error, whatever the status
code) fail at once with one line that says which. Each ``act`` leaves ``last_turn``: the mode
(native or text), the latency, and the prompt and completion tokens where the server reports them.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import warnings
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import gymnasium as gym

from budgetgym import chat
from budgetgym.core.extras import require
from budgetgym.eval.agents.base import AgentError

TOOL_MODES = ("auto", *chat.TOOL_MODES)
#: Seconds a request waits for the server's next bytes, and retries after a failed one: a stalled
#: server costs a turn about a minute (3 x 20 s and the backoff), then one clear error.
DEFAULT_TIMEOUT = 20.0
DEFAULT_MAX_RETRIES = 2


class OpenAIChatAgent:
    """A chat model as an agent.

    Args:
        model: the model name the server knows.
        base_url: the server's OpenAI-compatible root, usually ending in ``/v1`` (default:
            ``$OPENAI_BASE_URL``, else the SDK's default).
        api_key: default ``$OPENAI_API_KEY``, else ``"EMPTY"`` (local servers ignore it).
        temperature: sampling temperature; pass@k with k > 1 wants it above 0.
        max_tokens: the cap on each reply, or None for the server's default.
        tool_mode: ``"native"`` (tools in the request), ``"text"`` (tools in the prompt, actions
            as text), or ``"auto"`` (native, falling back to text if the server refuses tools).
        max_retries: retries of a transient failure (a 5xx or 429, a lost connection, a request
            past ``timeout``) before giving up; ``backoff`` is the first wait in seconds, doubled at
            each retry.
        timeout: seconds a request may wait for the server's next bytes. With the defaults a stalled
            server costs a turn about a minute (three tries of 20 s), then an AgentError says so.
        stream: ask for the reply as server-sent events and assemble it: ``timeout`` then bounds
            the wait between chunks, not the whole reply, so a long answer from a slow model is not
            cut off while a stalled server still is.
        send_seed: send the episode seed with each request, so servers that honour it reproduce
            a sweep.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        tool_mode: str = "auto",
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 1.0,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = False,
        send_seed: bool = True,
    ) -> None:
        if tool_mode not in TOOL_MODES:
            raise ValueError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
        if max_retries < 0 or not backoff >= 0:
            raise ValueError("max_retries and backoff must be >= 0")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a finite number of seconds above 0, got {timeout!r}")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.tool_mode = tool_mode
        self.max_retries = max_retries
        self.backoff = backoff
        self.timeout = timeout
        self.stream = stream
        self.send_seed = send_seed
        self.name = f"openai:{model}"
        # None until a server has answered a request with tools; False once it refused them.
        self._native_ok: bool | None = None if tool_mode == "auto" else tool_mode == "native"
        self.fallback_reason: str | None = None
        self.last_turn: dict[str, Any] = {}
        self._episode_native_turns = 0
        self._episode_tool_calls = 0
        self._client: Any = None
        self._messages: list[dict[str, Any]] = []
        self._tools: list[dict[str, Any]] = []
        self._instructions = ""
        self._pending_calls: list[str] = []
        self._seed = 0
        self._restored: tuple[str, str] | None = None

    # The SDK client holds sockets and locks: build it lazily, and leave it out of pickles, so the
    # agent travels to process and Ray workers.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    reads_budget = True  # a model sees whatever budget the observation text reveals

    @property
    def config(self) -> dict[str, Any]:
        """Everything that changes what the model is asked (the API key and URL secrets left out)."""
        return {"name": "openai", "model": self.model, "base_url": public_url(self.base_url),
                "temperature": self.temperature, "max_tokens": self.max_tokens, "tool_mode": self.tool_mode,
                "send_seed": self.send_seed}

    @property
    def client(self) -> Any:
        if self._client is None:
            openai = require("openai", "the OpenAI-compatible chat agent")
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                         timeout=self.timeout, max_retries=0)  # retries are ours
        return self._client

    @property
    def native(self) -> bool:
        return bool(self._tools) and self._native_ok is not False

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        self._end_episode()
        base = chat.text_env(env)
        self._tools = info.get("tools") or chat.tool_schemas(base.tools)
        self._instructions = base.instructions
        self._seed = int(seed)
        self._pending_calls = []
        self._messages = [{"role": "system", "content": self._system_prompt()}]
        if base.turn > 0:
            # A restored state (an injected failure, a probe's matched state): the model sees the
            # prefix as its own earlier turns (as text: the agent's mode may differ from the one
            # the prefix was played in), and ``act`` adds the current observation.
            transcript = base.transcript
            prefix = chat.messages_from_transcript(base, base.first_observation, transcript, native=False,
                                                   tools=self._tools)
            self._messages += prefix[1:-1]
            # ErrorInjection shows the whole prefix in its first observation; the messages above
            # already hold it, so the first ``act`` sends only the last turn's (and any budget text).
            from budgetgym.wrappers.error_injection import render_prefix

            self._restored = (render_prefix(base), transcript[-1][1]) if transcript else None
        else:
            self._restored = None

    def act(self, observation: str, info: dict[str, Any]) -> str:
        restored = self._restored
        if restored is not None:
            self._restored = None
            prefix, last = restored
            if observation.startswith(prefix):
                observation = last + observation[len(prefix):]
        tools = info.get("tools")
        if tools is not None and tools != self._tools:
            # The env changed the tools mid-episode (e.g. a function that was missing appears):
            # native requests carry the new list, and text mode rewrites the prompt's tool list.
            self._tools = tools
            self._messages[0] = {"role": "system", "content": self._system_prompt()}
        if self._pending_calls:
            # Every native call needs its tool message; the env answers a turn with one observation.
            for index, call_id in enumerate(self._pending_calls):
                content = observation if index == 0 else chat.MORE_CALLS_NOTE
                self._messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            self._pending_calls = []
        else:
            self._messages.append({"role": "user", "content": observation})
        native = self.native
        started = time.perf_counter()
        message, usage, tries = self._complete()
        tool_calls = getattr(message, "tool_calls", None) or []
        native = native and self.native  # False if this very request fell back to text
        self.last_turn = {"mode": "native" if native else "text", "latency_s": round(time.perf_counter() - started, 3),
                          "prompt_tokens": getattr(usage, "prompt_tokens", None),
                          "completion_tokens": getattr(usage, "completion_tokens", None),
                          "tool_calls": len(tool_calls), "tries": tries}
        if native:
            self._episode_native_turns += 1
            self._episode_tool_calls += len(tool_calls)
        if tool_calls:
            return self._take_tool_calls(message, tool_calls)
        content = getattr(message, "content", None) or ""
        self._messages.append({"role": "assistant", "content": content})
        return content

    def prepare(self) -> None:
        """Before a sweep (in the parent, so every worker gets the answer): in ``auto`` mode, ask
        the server once to call a tool. A reply with a tool call settles on native tools; a reply
        without one means the tools never reached the model (a server that drops them) or a model
        that does not make native calls: either way text actions are what works, so the agent
        switches to them and warns. Also fails at once, before any episode, on a wrong URL, key or
        model."""
        if self.tool_mode != "auto" or self._native_ok is not None:
            return
        saved = (self._messages, self._tools, self._instructions, self.temperature, self.max_tokens)
        self._tools = [_PING_TOOL]
        self._instructions = ""
        self._messages = [{"role": "user", "content": "Call the tool named ping now, with no arguments."}]
        self.temperature, self.max_tokens = 0.0, 64
        try:
            message, _, _ = self._complete()
        finally:
            self._messages, self._tools, self._instructions, self.temperature, self.max_tokens = saved
        if self._native_ok is False:
            return  # the server refused tools outright (HTTP 400): already switched to text
        if getattr(message, "tool_calls", None):
            self._native_ok = True
            return
        self._text_from_now_on("answered a request to call one without a tool call: it may drop tools "
                               "(llama-cpp-python's default chat format does), or the model makes no native calls")

    def _end_episode(self) -> None:
        """At each reset: in auto mode, an episode that sent native tools on every turn and got no
        tool call back means the server drops the tools; switch to text mode for good and warn."""
        if self.tool_mode == "auto" and self._native_ok is not False and self._episode_native_turns \
                and not self._episode_tool_calls:
            self._text_from_now_on(f"made no tool call in any reply of a whole episode ({self._episode_native_turns} "
                                   "turns): the server may drop tools (llama-cpp-python's default chat format does)")
        self._episode_native_turns = self._episode_tool_calls = 0

    def _text_from_now_on(self, why: str) -> None:
        """Switch to text actions for good, and say why (a warning, and ``fallback_reason``)."""
        self._native_ok = False
        self.fallback_reason = (f"{self._where()} took native tools but {why}; switched to text mode "
                                "(--tool-mode text starts there, --tool-mode native insists on native calls)")
        warnings.warn(self.fallback_reason, RuntimeWarning, stacklevel=4)

    # ------------------------------------------------------------------ internals

    def _system_prompt(self) -> str:
        return chat.system_prompt(self._instructions, self._tools, native=self.native)

    def _take_tool_calls(self, message: Any, tool_calls: list[Any]) -> str:
        calls, wire = [], []
        for index, call in enumerate(tool_calls):
            function = getattr(call, "function", None)
            name = getattr(function, "name", None)
            if not isinstance(name, str):
                raise AgentError(f"malformed reply from {self._where()}: a tool call without a function name")
            raw = getattr(function, "arguments", None) or "{}"
            call_id = getattr(call, "id", None) or f"call_{index}"
            try:
                arguments: Any = json.loads(raw)
            except (json.JSONDecodeError, TypeError):
                arguments = raw  # the env reports invalid JSON to the model: that is the model's mistake
            calls.append({"name": name, "arguments": arguments})
            wire.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}})
        # "content": "" rather than null: llama-cpp-python rejects null with a 500 validation error.
        self._messages.append({"role": "assistant", "content": getattr(message, "content", None) or "",
                               "tool_calls": wire})
        self._pending_calls = [w["id"] for w in wire]
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)

    def _where(self) -> str:
        return self.base_url or "the default OpenAI endpoint"

    def _request(self) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": [_sendable(m) for m in self._messages],
                                   "temperature": self.temperature}
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if self.send_seed:
            request["seed"] = self._seed
        if self.native:
            request["tools"] = self._tools
        if self.stream:
            request["stream"] = True
        return request

    def _complete(self) -> tuple[Any, Any, int]:
        """``choices[0].message`` of a completion of the conversation, its ``usage``, and the
        number of requests it took, retrying transient failures."""
        openai = require("openai", "the OpenAI-compatible chat agent")
        import httpx  # the SDK's transport, installed with it

        failures = 0
        while True:
            try:
                response = self.client.chat.completions.create(**self._request())
                if self.stream:
                    response = _assembled(response)
                message = _first_message(response)
                problem: Any = None if message is not None else \
                    f"malformed reply: no choices[0].message in {str(response)[:200]!r}"
            except openai.APIStatusError as err:
                problem = self._status_problem(openai, err)
                if problem is None:  # the server refused native tools: ask again in text mode
                    continue
            except openai.APIConnectionError as err:
                if _refused(err):
                    raise AgentError(f"cannot connect to {self._where()}: the connection was refused (nothing "
                                     "listens there); start the server, or point --base-url at it "
                                     "(an OpenAI-compatible root such as http://127.0.0.1:8000/v1)") from err
                problem = err
            except (openai.APIResponseValidationError, json.JSONDecodeError) as err:
                problem = f"malformed reply: {type(err).__name__}: {err}"  # a body that is not a chat completion
            except httpx.TransportError as err:  # a stream cut or stalled between chunks (the SDK passes it on)
                problem = err
            if problem is None:
                if self._tools and self._native_ok is None:
                    self._native_ok = True
                return message, getattr(response, "usage", None), failures + 1
            failures += 1
            if failures > self.max_retries:
                cause = problem if isinstance(problem, Exception) else None
                raise AgentError(self._gave_up(problem, failures)) from cause
            time.sleep(self.backoff * 2 ** (failures - 1))

    def _status_problem(self, openai: Any, err: Any) -> Any:
        """What an HTTP error status means: raise AgentError when it is permanent, return the
        transient problem to retry, or None after switching to text mode (tools refused)."""
        status = err.status_code
        if _is_validation_error(err):
            # The server says the request itself is invalid: sending it again cannot help.
            raise AgentError(f"{self._where()} rejected the request as invalid (HTTP {status}): "
                             f"{_server_says(err)}") from err
        if isinstance(err, openai.AuthenticationError):
            raise AgentError(f"{self._where()} refused the API key (HTTP {status}): "
                             "check --api-key or $OPENAI_API_KEY") from err
        if isinstance(err, openai.PermissionDeniedError):
            raise AgentError(f"{self._where()} denied access to model {self.model!r} (HTTP 403): "
                             f"{_server_says(err)}") from err
        if isinstance(err, openai.NotFoundError):
            raise AgentError(f"{self._where()} answered 404 for model {self.model!r}: the model name is wrong, "
                             "or the base URL is (an OpenAI-compatible root usually ends with /v1)") from err
        if isinstance(err, openai.BadRequestError):
            if self.native and self.tool_mode == "auto" and "tool" in str(err.message).lower():
                # The server does not take native tools (e.g. vLLM without a tool parser): from
                # now on the tools go into the prompt and actions come back as text.
                self._native_ok = False
                self.fallback_reason = f"{self._where()} refused native tools (HTTP 400): {_server_says(err)}"
                self._messages[0] = {"role": "system", "content": self._system_prompt()}
                return None
            raise AgentError(f"{self._where()} rejected the request (HTTP 400): {_server_says(err)}") from err
        if status == 429 or status >= 500:
            return err
        raise AgentError(f"{self._where()} answered HTTP {status}: {_server_says(err)}") from err

    def _gave_up(self, problem: Any, tries: int) -> str:
        openai = require("openai", "the OpenAI-compatible chat agent")
        import httpx

        if isinstance(problem, (openai.APITimeoutError, httpx.TimeoutException)):
            return (f"{self._where()} did not answer within {self.timeout:g} s, {tries} tries in a row: the server "
                    "is stalled or the model too slow; raise --timeout (with --stream it bounds the wait between "
                    "chunks, not the whole reply)")
        if isinstance(problem, (openai.APIConnectionError, httpx.TransportError)):
            return (f"cannot reach {self._where()} after {tries} tries ({problem}): is the server running, "
                    "and is the base URL right?")
        if isinstance(problem, str):
            return f"{problem} (from {self._where()}, {tries} tries)"
        return f"{self._where()} kept failing after {tries} tries: {problem}"


_PING_TOOL = {"type": "function", "function": {"name": "ping", "description": "Answer that you are here.",
                                               "parameters": {"type": "object", "properties": {}}}}


def public_url(url: str | None) -> str | None:
    """``url`` without what may be secret: user and password, query and fragment."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _sendable(message: dict[str, Any]) -> dict[str, Any]:
    """The message with lone surrogates (a server's ``\\ud800`` escape decodes to one) replaced by
    U+FFFD in its text: JSON bodies are UTF-8, which cannot carry them. The record keeps the original."""
    content = message.get("content")
    if isinstance(content, str) and _LONE_SURROGATE.search(content):
        return {**message, "content": _LONE_SURROGATE.sub("\ufffd", content)}
    return message


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())[:300]


def _server_says(err: Any) -> str:
    """The server's own error message, on one line (the SDK's adds an "Error code" prefix)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    message = body.get("message") if isinstance(body, dict) else None
    return _one_line(message if isinstance(message, str) else getattr(err, "message", err))


def _is_validation_error(err: Any) -> bool:
    """Whether an HTTP error says the request is invalid (FastAPI's 422, or a pydantic validation
    error reported as a 500, as llama-cpp-python's server does)."""
    if getattr(err, "status_code", None) == 422:
        return True
    text = f"{getattr(err, 'message', '')} {getattr(err, 'body', '')}".lower()
    return "validation error" in text or "field required" in text


def _refused(err: BaseException) -> bool:
    """Whether a connection error is a refused connection (nothing listens at the URL)."""
    seen: BaseException | None = err
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower() \
                or "errno 111" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _assembled(stream: Any) -> Any:
    """A streamed reply (chat.completion.chunk events) as the shape of a whole one: ``choices[0].message``
    with the content and the tool calls put together from their deltas (by their ``index``), and the
    usage where the server sent it."""
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage = None
    role = None
    for chunk in stream:
        usage = getattr(chunk, "usage", None) or usage
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if getattr(choice, "index", 0) != 0 or delta is None:
                continue
            role = getattr(delta, "role", None) or role
            if isinstance(getattr(delta, "content", None), str):
                content.append(delta.content)
            for part in getattr(delta, "tool_calls", None) or []:
                call = calls.setdefault(getattr(part, "index", None) or 0, {"id": "", "name": "", "arguments": ""})
                call["id"] = getattr(part, "id", None) or call["id"]
                function = getattr(part, "function", None)
                call["name"] += getattr(function, "name", None) or ""
                call["arguments"] += getattr(function, "arguments", None) or ""
    if role is None and not content and not calls:
        return SimpleNamespace(choices=[], usage=usage)
    tool_calls = [SimpleNamespace(id=call["id"] or None, type="function",
                                  function=SimpleNamespace(name=call["name"] or None, arguments=call["arguments"]))
                  for _, call in sorted(calls.items())]
    message = SimpleNamespace(role=role or "assistant", content="".join(content) if content else None,
                              tool_calls=tool_calls or None)
    return SimpleNamespace(choices=[SimpleNamespace(index=0, message=message)], usage=usage)


def _first_message(response: Any) -> Any:
    """``response.choices[0].message``, or None when the reply does not have that shape."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return None
    message = getattr(choices[0], "message", None)
    if message is None or not (getattr(message, "content", None) is not None or getattr(message, "tool_calls", None)):
        return None
    return message
