"""The one place that renders a budgetgym env as a chat: the served-model agent, the trainer
adapters and the dataset export all use it, so a model sees the same conversation everywhere.

* :func:`system_prompt`: the family's instructions, plus (in text mode) the tools written out with
  the call forms the shared parser accepts. In native mode the tools travel as OpenAI ``tools``.
* Roles: each observation answers the assistant's previous message. After an assistant message that
  made native tool calls it is the ``tool`` message of the first call (the env answers a turn with
  one observation; the other calls get a pointer to it, since every call id needs an answer); after
  anything else, a ``user`` message.
* :func:`assistant_message`: an action as the assistant message a server returns: native
  ``tool_calls`` in the OpenAI shape where the action parses as tool calls and the mode is native,
  else plain ``content``. ``content`` is always a string, never null: some OpenAI-compatible servers
  (llama-cpp-python) refuse a replayed ``"content": null``.
* :func:`messages_from_transcript` / :func:`messages_from_env`: the whole conversation of an episode
  so far (a restored or injected prefix included) as a list of chat messages.
* :func:`action_from_message`: the reverse: a chat completion's message (a dict or the ``openai``
  SDK's object) to the action text the env takes.
* :class:`ChatView`: a wrapper that adds ``info["messages"]`` (the conversation so far) to every
  ``reset`` and ``step`` for trainers that consume chat messages.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Sequence

import gymnasium as gym

from budgetgym.core.actions import ActionError, parse_action
from budgetgym.core.env import TextEnv, text_env
from budgetgym.core.tools import Tool

TOOL_MODES = ("native", "text")

TEXT_FORMS = (
    "Act with exactly one tool call per reply, written as JSON: "
    '{"name": "<tool>", "arguments": {...}}, or the same inside <tool_call>...</tool_call>. '
    "You may think before the call; only the call is executed."
)
MORE_CALLS_NOTE = "(the output of all calls of this turn is above)"


def tool_schemas(tools: Mapping[str, Tool] | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI function schemas, from a name -> :class:`Tool` map or a list of schemas."""
    if isinstance(tools, Mapping):
        return [tool.openai_schema() for tool in tools.values()]
    return [dict(schema) for schema in tools]


def system_prompt(instructions: str, tools: Sequence[Mapping[str, Any]], *, native: bool) -> str:
    """The system message: instructions, and in text mode the tools and the call form."""
    parts = [instructions.strip()] if instructions.strip() else []
    if tools and not native:
        lines = ["Tools:"]
        for schema in tools:
            function = schema.get("function", schema)
            lines.append(f"- {function['name']}: {function.get('description', '')} "
                         f"Arguments (JSON Schema): {json.dumps(function.get('parameters', {}))}")
        parts += ["\n".join(lines), TEXT_FORMS]
    return "\n\n".join(parts)


def assistant_message(action: str, env: TextEnv, *, native: bool, turn: int) -> dict[str, Any]:
    """The assistant message that ``action`` (taken at 0-based ``turn``) is, in the OpenAI shape."""
    if native:
        try:
            parsed = parse_action(action, env.tools, bare=None, allow_message=False)
        except ActionError:
            parsed = None
        if parsed is not None and parsed.calls:
            return {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"call_{turn}_{index}", "type": "function",
                 "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments), ensure_ascii=False)}}
                for index, call in enumerate(parsed.calls)]}
    return {"role": "assistant", "content": action}


def observation_messages(observation: str, previous: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The message(s) that carry ``observation``, given the assistant message it answers (or None)."""
    calls = (previous or {}).get("tool_calls") or []
    if not calls:
        return [{"role": "user", "content": observation}]
    return [{"role": "tool", "tool_call_id": call["id"], "content": observation if index == 0 else MORE_CALLS_NOTE}
            for index, call in enumerate(calls)]


def messages_from_transcript(env: TextEnv, first_observation: str, transcript: Sequence[Sequence[str]], *,
                             native: bool, tools: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The conversation: system prompt, the first observation, then each (action, observation)."""
    schemas = tool_schemas(env.tools) if tools is None else list(tools)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(env.instructions, schemas, native=native)},
        {"role": "user", "content": first_observation},
    ]
    for turn, (action, observation) in enumerate(transcript):
        message = assistant_message(action, env, native=native, turn=turn)
        messages.append(message)
        messages += observation_messages(observation, message)
    return messages


def messages_from_env(env: gym.Env, *, native: bool) -> list[dict[str, Any]]:
    """The conversation of the env's episode so far (a restored prefix included)."""
    base = text_env(env)
    return messages_from_transcript(base, base.first_observation, base.transcript, native=native)


def messages_from_snapshot(env: gym.Env, snapshot: Mapping[str, Any], *, native: bool) -> list[dict[str, Any]]:
    """The conversation recorded in ``snapshot`` (the env must be of the snapshot's family; it is
    restored, so that the tools are those of the snapshot's state)."""
    env.reset(options={"snapshot": snapshot})
    return messages_from_env(env, native=native)


def action_from_message(message: Any) -> str:
    """A chat completion's message (dict or SDK object) as the action text the env takes: its tool
    calls as a JSON call (a list for several), else its content."""
    get = message.get if isinstance(message, Mapping) else (lambda key, default=None: getattr(message, key, default))
    calls = []
    for call in get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
        name = function.get("name") if isinstance(function, Mapping) else getattr(function, "name", None)
        raw = (function.get("arguments") if isinstance(function, Mapping) else getattr(function, "arguments", None)) or "{}"
        try:
            arguments: Any = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = raw  # the env tells the model its arguments are not JSON: the model's mistake
        calls.append({"name": name, "arguments": arguments})
    if calls:
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)
    return get("content") or ""


class ChatView(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Adds ``info["messages"]``: the episode so far as chat messages (see the module docstring).

    The messages are built incrementally (one assistant message and its answer per step), so a
    step costs what it adds, not the length of the history. ``native`` chooses OpenAI tool calls and
    ``tool`` messages (True) or text actions and tools in the system prompt (False). The list is
    the wrapper's own: copy it before changing it.
    """

    def __init__(self, env: gym.Env[str, str], native: bool = False) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, native=native)
        gym.Wrapper.__init__(self, env)
        text_env(env)
        self.native = native
        self._messages: list[dict[str, Any]] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        base = text_env(self.env)
        tools = info.get("tools")
        transcript = base.transcript
        self._messages = messages_from_transcript(base, base.first_observation if transcript else observation,
                                                  transcript, native=self.native, tools=tools)
        if transcript:
            # A restored prefix: what the agent sees now is the observation returned (wrappers may
            # have added to it: a revealed budget, an injected error's account), not the raw one.
            self._messages[-1] = {**self._messages[-1], "content": observation}
        info["messages"] = self._messages
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        base = text_env(self.env)
        turn = base.turn
        observation, reward, terminated, truncated, info = self.env.step(action)
        if "tools" in info:  # the family changed the tools: the system prompt lists the new ones
            self._messages[0] = {"role": "system",
                                 "content": system_prompt(base.instructions, info["tools"], native=self.native)}
        message = assistant_message(action if isinstance(action, str) else repr(action), base, native=self.native,
                                    turn=turn)
        self._messages.append(message)
        self._messages += observation_messages(observation, message)
        info["messages"] = self._messages
        return observation, reward, terminated, truncated, info
