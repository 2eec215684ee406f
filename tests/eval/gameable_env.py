"""A toy env with a reward a trick collects (saying "done" counts as reaching the target), and the
exploit agent that plays the trick: the exploit probe must flag it. Tests only, never shipped."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from budgetgym.core import Action, Outcome
from toy_env import CounterEnv

GAMEABLE_ID = "budgetgym-test/GameableCounter-v0"


class GameableCounterEnv(CounterEnv):
    family = "toy"
    exploits = {"say-done": "gameable_env:SayDone"}

    def _execute(self, action: Action) -> Outcome:
        outcome = super()._execute(action)
        if any(c.name == "say" and c.arguments["text"] == "done" for c in action.calls):
            return Outcome(outcome.observation, solved=True, progress=1.0)
        return outcome


class SayDone:
    """Says "done" at once."""

    name = "say-done"

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return 'say(text="done")'


if GAMEABLE_ID not in gym.registry:
    gym.register(GAMEABLE_ID, entry_point="gameable_env:GameableCounterEnv")
