"""The actions a candidate-scoring policy chooses among, built from the env itself."""

from __future__ import annotations

import random
from typing import Any, Mapping

import gymnasium as gym

from budgetgym.core.env import text_env


def candidate_actions(env: gym.Env, info: Mapping[str, Any], rng: random.Random) -> list[str]:
    """The env's admissible actions where it lists them; otherwise the oracle's next action among
    the mistakes the family proposes at this point (one per failure kind), so the policy must tell
    them apart from what it sees. Sorted, so the order says nothing about which one is right."""
    admissible = info.get("admissible_actions")
    if admissible:
        return sorted(set(admissible))
    base = text_env(env)
    intended = base.structured_oracle()
    if intended is None:
        return ["I cannot do more."]
    actions = {base.render_oracle(intended)}
    for kind in base.failure_kinds:
        proposed = base.propose_mistake(kind, [intended], rng)
        if proposed is not None:
            actions.add(base.render_oracle(proposed[0]))
    return sorted(actions)
