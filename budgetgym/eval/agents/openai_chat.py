"""``OpenAIChatAgent``: any model behind an OpenAI-compatible chat-completions endpoint (vLLM,
SGLang, llama.cpp, a hosted API), through the ``openai`` SDK.

The system prompt is the env family's instructions plus, where the server does not take native
tools, the tools written out with the accepted call forms. The episode is the message list: each
observation a user (or tool) message, each action an assistant message. With ``tool_mode="auto"``
the agent sends native tools and falls back to text actions for good if the server refuses them.
Transient failures (connection, timeout, 429, 5xx, a malformed reply) are retried with exponential
backoff; a wrong URL, key or model fails at once with a message that says which.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import gymnasium as gym

from budgetgym import chat
from budgetgym.eval._extras import require
from budgetgym.eval.agents.base import AgentError

TOOL_MODES = ("auto", *chat.TOOL_MODES)


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
        max_retries: retries of a transient failure before giving up; ``backoff`` is the first
            wait in seconds, doubled at each retry.
        timeout: seconds per request.
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
        max_retries: int = 4,
        backoff: float = 1.0,
        timeout: float = 120.0,
        send_seed: bool = True,
    ) -> None:
        if tool_mode not in TOOL_MODES:
            raise ValueError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
        if max_retries < 0 or backoff < 0:
            raise ValueError("max_retries and backoff must be >= 0")
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.tool_mode = tool_mode
        self.max_retries = max_retries
        self.backoff = backoff
        self.timeout = timeout
        self.send_seed = send_seed
        self.name = f"openai:{model}"
        # None until a server has answered a request with tools; False once it refused them.
        self._native_ok: bool | None = None if tool_mode == "auto" else tool_mode == "native"
        self._client: Any = None
        self._messages: list[dict[str, Any]] = []
        self._tools: list[dict[str, Any]] = []
        self._instructions = ""
        self._pending_calls: list[str] = []
        self._seed = 0

    # The SDK client holds sockets and locks: build it lazily, and leave it out of pickles, so the
    # agent travels to process and Ray workers.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

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
            prefix = chat.messages_from_transcript(base, base.first_observation, base.transcript, native=False,
                                                   tools=self._tools)
            self._messages += prefix[1:-1]

    def act(self, observation: str, info: dict[str, Any]) -> str:
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
        message = self._complete()
        tool_calls = getattr(message, "tool_calls", None) or []
        if tool_calls:
            return self._take_tool_calls(message, tool_calls)
        content = getattr(message, "content", None) or ""
        self._messages.append({"role": "assistant", "content": content})
        return content

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
        # Content is a string, never null: llama-cpp-python's server refuses a replayed null content.
        self._messages.append({"role": "assistant", "content": getattr(message, "content", None) or "", "tool_calls": wire})
        self._pending_calls = [w["id"] for w in wire]
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)

    def _where(self) -> str:
        return self.base_url or "the default OpenAI endpoint"

    def _request(self) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": self._messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if self.send_seed:
            request["seed"] = self._seed
        if self.native:
            request["tools"] = self._tools
        return request

    def _complete(self) -> Any:
        """``choices[0].message`` of a completion of the conversation, retrying transient failures."""
        openai = require("openai", "the OpenAI-compatible chat agent")
        failures = 0
        while True:
            try:
                response = self.client.chat.completions.create(**self._request())
                message = _first_message(response)
                problem: Any = None if message is not None else \
                    f"malformed reply: no choices[0].message in {str(response)[:200]!r}"
            except openai.AuthenticationError as err:
                raise AgentError(f"{self._where()} refused the API key (HTTP {err.status_code}): "
                                 "check --api-key or $OPENAI_API_KEY") from err
            except openai.PermissionDeniedError as err:
                raise AgentError(f"{self._where()} denied access to model {self.model!r} (HTTP 403): "
                                 f"{err.message}") from err
            except openai.NotFoundError as err:
                raise AgentError(f"{self._where()} answered 404 for model {self.model!r}: the model name is wrong, "
                                 "or the base URL is (an OpenAI-compatible root usually ends with /v1)") from err
            except openai.BadRequestError as err:
                if self.native and self.tool_mode == "auto" and "tool" in str(err.message).lower():
                    # The server does not take native tools (e.g. vLLM without a tool parser): from
                    # now on the tools go into the prompt and actions come back as text.
                    self._native_ok = False
                    self._messages[0] = {"role": "system", "content": self._system_prompt()}
                    continue
                raise AgentError(f"{self._where()} rejected the request (HTTP 400): {err.message}") from err
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as err:
                problem = err
            except openai.APIStatusError as err:
                if err.status_code < 500:
                    raise AgentError(f"{self._where()} answered HTTP {err.status_code}: {err.message}") from err
                problem = err
            except (openai.APIResponseValidationError, json.JSONDecodeError) as err:
                problem = f"malformed reply: {type(err).__name__}: {err}"  # a body that is not a chat completion
            if problem is None:
                if self._tools and self._native_ok is None:
                    self._native_ok = True
                return message
            failures += 1
            if failures > self.max_retries:
                cause = problem if isinstance(problem, Exception) else None
                raise AgentError(self._gave_up(problem, failures)) from cause
            time.sleep(self.backoff * 2 ** (failures - 1))

    def _gave_up(self, problem: Any, tries: int) -> str:
        openai = require("openai", "the OpenAI-compatible chat agent")
        if isinstance(problem, openai.APIConnectionError):
            return (f"cannot reach {self._where()} after {tries} tries ({problem}): is the server running, "
                    "and is the base URL right?")
        if isinstance(problem, str):
            return f"{problem} (from {self._where()}, {tries} tries)"
        return f"{self._where()} kept failing after {tries} tries: {problem}"


def _first_message(response: Any) -> Any:
    """``response.choices[0].message``, or None when the reply does not have that shape."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        return None
    message = getattr(choices[0], "message", None)
    if message is None or not (getattr(message, "content", None) is not None or getattr(message, "tool_calls", None)):
        return None
    return message
