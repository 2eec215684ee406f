"""Scripted baselines, so sweeps and probes run with no model at all.

* ``OracleAgent`` follows the env's known-good solution (``oracle_action``);
* ``RandomAgent`` picks uniformly among the admissible actions, or builds a random tool call from
  the tools' JSON Schemas where the env does not list its actions;
* ``NoisyOracleAgent`` is the oracle with a stated share ``p`` of turns replaced by a random action,
  a cheap stand-in for an agent that makes mistakes and must recover from them;
* ``BudgetAwareAgent`` is the noisy oracle that reads the budget ``TurnBudget`` reveals in the
  observation text and stops taking random actions once few turns remain (at most half of the
  revealed total): under an announced cap it should do at least as well as under an unannounced
  one, which is what the reveal comparison measures.

Only ``BudgetAwareAgent`` can see a budget: the others act the same under every reveal mode, so
their reveal comparison is zero by construction (the report says so).

Every random choice comes from a generator seeded at ``reset``: an episode is a function of its seed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

import gymnasium as gym
import numpy as np

from budgetgym.core.env import text_env
from budgetgym.core.budgets import read_reveal

# Strings a random tool call may use where a schema gives no enum: short, varied, mostly wrong.
_RANDOM_STRINGS = ("", "a", "test", "1", "none", "/", "file.txt", "yes")


class OracleAgent:
    """The env's own known-good next action at every turn."""

    name = "oracle"
    config = {"name": "oracle"}

    def __init__(self) -> None:
        self._env: Any = None
        self._fallback = RandomAgent()

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        self._env = text_env(env)
        self._fallback.reset(env, observation, info, seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        action = self._env.oracle_action()
        # The oracle has no answer from some states (e.g. after a mistake it cannot undo): the turn
        # must still be spent on something, and a random action is the honest filler.
        return action if action is not None else self._fallback.act(observation, info)


class RandomAgent:
    """A uniformly random admissible action, or a random schema-valid tool call."""

    name = "random"
    config = {"name": "random"}

    def __init__(self) -> None:
        self._env: Any = None
        self._rng = np.random.default_rng(0)

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        self._env = text_env(env)
        self._rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        admissible = info.get("admissible_actions")
        if admissible:
            return admissible[int(self._rng.integers(len(admissible)))]
        tools = list(self._env.tools.values())
        if not tools:
            raise RuntimeError(f"{type(self._env).__name__} lists neither admissible actions nor tools")
        tool = tools[int(self._rng.integers(len(tools)))]
        arguments = random_value(tool.parameters, self._rng)
        return json.dumps({"name": tool.name, "arguments": arguments}, ensure_ascii=False)


class NoisyOracleAgent:
    """The oracle, except that each turn is a random action with probability ``p``."""

    def __init__(self, p: float = 0.25) -> None:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"the mistake share p must be in [0, 1], got {p!r}")
        self.p = float(p)
        self.name = f"noisy-oracle(p={self.p:g})"
        self.config = {"name": "noisy-oracle", "p": self.p}
        self._oracle = OracleAgent()
        self._random = RandomAgent()
        self._rng = np.random.default_rng(0)

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        # Separate streams for "is this turn a mistake" and "which mistake", so p does not change
        # which random action a mistake picks.
        coin_seed, random_seed = np.random.SeedSequence(seed).generate_state(2)
        self._rng = np.random.default_rng(coin_seed)
        self._oracle.reset(env, observation, info, int(random_seed))
        self._random.reset(env, observation, info, int(random_seed))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self._rng.random() < self.p:
            return self._random.act(observation, info)
        return self._oracle.act(observation, info)


def read_revealed_budget(observation: str) -> dict[str, int]:
    """What a budget revealed in ``observation`` says, in any unit: ``{"cap", "remaining"}`` from the
    ``"remaining"`` text, ``{"cap"}`` from the ``"total"`` one, ``{}`` when none is shown (read by
    ``budgetgym.core.budgets.read_reveal``, the one reader of the reveal texts). Only the observation
    text is read: the cap in ``info["budget"]`` is the runner's, not the agent's."""
    seen = read_reveal(observation)
    if seen is None:
        return {}
    return {"cap": seen.cap} if seen.remaining is None else {"cap": seen.cap, "remaining": seen.remaining}


class BudgetAwareAgent(NoisyOracleAgent):
    """The noisy oracle that heeds a revealed budget: while it sees no budget, or more than half
    of the revealed total remains, each turn is a random action with probability ``p``; once at
    most half remains (``ceil(total / 2)`` turns or fewer), it only takes the oracle's action.

    It reads the budget from the observation text ``TurnBudget`` adds (``reveal="remaining"``
    every turn; ``reveal="total"`` once, after which it counts its own turns), never from
    ``info["budget"]``. Under ``reveal="none"`` it is exactly ``NoisyOracleAgent(p)`` with the
    same seeds, so the reveal comparison isolates what seeing the budget changes.
    """

    reads_budget = True

    def __init__(self, p: float = 0.25) -> None:
        super().__init__(p)
        self.name = f"budget-aware(p={self.p:g})"
        self.config = {"name": "budget-aware", "p": self.p}
        self._total: int | None = None
        self._turns = 0

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        super().reset(env, observation, info, seed)
        self._total = None
        self._turns = 0

    def remaining(self, observation: str) -> tuple[int, int] | None:
        """(turns remaining, revealed total) as the observations told it, or None."""
        seen = read_revealed_budget(observation)
        if "cap" in seen:
            self._total = seen["cap"]
        if self._total is None:
            return None
        remaining = seen.get("remaining", self._total - self._turns)
        return remaining, self._total

    def act(self, observation: str, info: dict[str, Any]) -> str:
        budget = self.remaining(observation)
        self._turns += 1
        coin = self._rng.random()  # drawn every turn, so the coins line up across reveal modes
        if budget is not None and budget[0] <= math.ceil(budget[1] / 2):
            return self._oracle.act(observation, info)
        if coin < self.p:
            return self._random.act(observation, info)
        return self._oracle.act(observation, info)


def random_value(schema: Mapping[str, Any], rng: np.random.Generator, depth: int = 0) -> Any:
    """A random JSON value that mostly satisfies a (simple) JSON Schema: enums, numbers within their
    bounds, short strings, small arrays, objects with their required properties."""
    if "enum" in schema:
        options = list(schema["enum"])
        return options[int(rng.integers(len(options)))]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = kind[int(rng.integers(len(kind)))]
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        high = int(schema.get("maximum", low + 10))
        return int(rng.integers(low, high + 1))
    if kind == "number":
        low = float(schema.get("minimum", 0.0))
        high = float(schema.get("maximum", low + 10.0))
        return round(float(rng.uniform(low, high)), 2)
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "null":
        return None
    if kind == "array":
        if depth > 3:
            return []
        items = schema.get("items", {"type": "string"})
        size = int(rng.integers(int(schema.get("minItems", 0)), max(int(schema.get("minItems", 0)), 2) + 1))
        return [random_value(items, rng, depth + 1) for _ in range(size)]
    if kind == "object":
        if depth > 3:
            return {}
        properties = schema.get("properties", {})
        return {name: random_value(properties.get(name, {}), rng, depth + 1) for name in schema.get("required", ())}
    return _RANDOM_STRINGS[int(rng.integers(len(_RANDOM_STRINGS)))]
