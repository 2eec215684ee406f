"""What travels between ``budgetgym serve`` and its clients: OpenEnv's WebSocket protocol, with
budgetgym's action, observation and state in it.

OpenEnv (``openenv-core``) keeps a session per WebSocket connection at ``/ws``. Every message is one
JSON text frame ``{"type": ..., "data": ...}``:

* ``{"type": "reset", "data": {"seed": 0, "task_id": ..., "budget": 0.5, ...}}`` starts an episode
  and is answered by an observation (the keys are :data:`GYM_OPTIONS`, :data:`WRAPPER_OPTIONS`,
  ``seed`` and OpenEnv's ``episode_id``);
* ``{"type": "step", "data": {"text": "<the model's output>"}}`` is one turn, answered by an
  observation;
* ``{"type": "state"}`` is answered by ``{"type": "state", "data": {...}}``: the episode id, the
  step count, the env id, the task, the turn and the env's snapshot;
* ``{"type": "close"}`` ends the session.

An observation is ``{"type": "observation", "data": {"observation": {"text", "info", "terminated",
"truncated"}, "reward": float, "done": bool}}``; ``info`` is the env's own (budget included). A
refused message is ``{"type": "error", "data": {"message", "code"}}`` (OpenEnv's codes, and
:data:`MESSAGE_TOO_BIG` and :data:`UNAUTHORIZED` of ours) and changes nothing in the session.

Frames are JSON with every non-ASCII character escaped (``\\uXXXX``), so any Python string crosses,
lone surrogates included, and comes back equal.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Dict, Optional

from budgetgym.factory import make as _make

#: Reset keys that go to the env's ``reset(options=...)``: the episode's task or snapshot.
GYM_OPTIONS = ("task_id", "task_index", "snapshot")
#: Reset keys that choose the wrappers, applied on the server by ``budgetgym.make``: those of its
#: keyword arguments whose values are JSON (``tokenizer`` is code, so a server counts tokens its own
#: way). Read against its signature, so a build whose ``make`` lacks one (``unit``) serves the rest.
_SERVED = ("budget", "unit", "reveal", "budget_mix", "schedule", "inject_errors")
_MAKE_OPTIONS = {name: p.default for name, p in inspect.signature(_make).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY}
WRAPPER_OPTIONS = tuple(name for name in _SERVED if name in _MAKE_OPTIONS)
#: The wrapper options' values when a reset does not give them (``budgetgym.make``'s defaults).
WRAPPER_DEFAULTS = {name: _MAKE_OPTIONS[name] for name in WRAPPER_OPTIONS}

#: Error codes of ours beside OpenEnv's ``WSErrorCode`` values.
MESSAGE_TOO_BIG = "MESSAGE_TOO_BIG"
UNAUTHORIZED = "UNAUTHORIZED"
SESSION_EXPIRED = "SESSION_EXPIRED"

#: The path of the server's own description (env id, spaces, limits), a GET beside OpenEnv's routes.
INFO_PATH = "/budgetgym"


def encode(message: dict[str, Any]) -> str:
    """One frame's text: JSON with non-ASCII escaped, so lone surrogates survive the trip."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def decode(text: str) -> Any:
    """A frame's JSON (``json.loads``: it reads ``\\ud800`` escapes back to lone surrogates)."""
    return json.loads(text)


def models() -> tuple[type, type, type]:
    """OpenEnv's pydantic models of budgetgym's action, observation and state (imported on first
    use: they need ``openenv-core``, which clients do not)."""
    global _MODELS
    if _MODELS is None:
        from pydantic import Field
        from openenv.core.env_server.types import Action, Observation, State

        class TextAction(Action):
            """One turn: the model's output, as the env's ``step`` takes it."""

            text: str = Field(description="the model's output for this turn (tool calls, a command or a message)")

        class TextObservation(Observation):
            """What ``reset`` or ``step`` returned; ``done`` is ``terminated or truncated``."""

            text: str = Field(description="the observation")
            info: Dict[str, Any] = Field(default_factory=dict, description="the env's info dict (budget included)")
            terminated: bool = Field(default=False, description="the task was solved, failed or submitted")
            truncated: bool = Field(default=False, description="a turn budget ran out")

        class EpisodeState(State):
            """The session's episode: OpenEnv's episode id and step count, and budgetgym's snapshot."""

            env_id: str = Field(description="the served id")
            task_id: Optional[str] = Field(default=None, description="the episode's task")
            turn: int = Field(default=0, description="turns taken, a restored prefix included")
            snapshot: Optional[Dict[str, Any]] = Field(default=None, description="the env's snapshot "
                                                       "(restore it with a reset whose data holds it)")

        _MODELS = (TextAction, TextObservation, EpisodeState)
    return _MODELS


_MODELS: tuple[type, type, type] | None = None
