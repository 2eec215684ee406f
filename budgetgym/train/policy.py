"""``LinearSoftmaxPolicy``: a softmax over candidate actions with learned linear weights.

It is an evaluation agent like any other (``name``, ``reset``, ``act``), so sweeps and probes run it
as they run an LLM; and it exposes what the trainer needs (the features and probabilities of each
choice). With all weights zero it picks uniformly among the candidates: the untrained base.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from budgetgym.train.candidates import candidate_actions
from budgetgym.train.features import DIMENSION, EpisodeView, content_words, feature_index, featurize, read_budget

BASE_PRIOR = {
    # The untrained base: what a pretrained model brings to a text game before any RL. It reads the
    # task (prefers commands that name what the objective names and that it has not done yet),
    # does not undo what it just did, and rarely spends turns on look-around commands or on
    # dropping, eating or putting away things the task does not name. Both training regimes start
    # here; everything the trained policies do differently comes from training.
    "fresh_goal": 3.0, "repeat": -1.5, "undo": -1.0,
    "verb=look": -3.0, "verb=inventory": -3.0, "verb=examine": -3.0,
    "verb=drop": -3.0, "verb=eat": -2.0, "in_goal|verb=eat": 6.0, "verb=put": -1.0, "verb=insert": -1.0,
    "verb=open": 1.0, "verb=take": 0.5,
}


class LinearSoftmaxPolicy:
    """A softmax policy over candidate actions.

    Args:
        weights: the learned weights (default: zeros, the uniform base policy).
        temperature: the softmax temperature; sampling is seeded by the episode seed.
        name: the agent name in sweeps and reports.
    """

    def __init__(self, weights: np.ndarray | None = None, *, temperature: float = 1.0, name: str = "linear-softmax"):
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.weights = np.zeros(DIMENSION) if weights is None else np.asarray(weights, dtype=np.float64).copy()
        if self.weights.shape != (DIMENSION,):
            raise ValueError(f"weights must have shape ({DIMENSION},), got {self.weights.shape}")
        self.temperature = temperature
        self.name = name
        self._env: gym.Env | None = None
        self._view = EpisodeView()
        self._rng = np.random.default_rng(0)
        self._proposal_rng = random.Random(0)
        self._turns = 0
        self.trace: list[tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, int]] = []

    @classmethod
    def base(cls, *, name: str = "base", temperature: float = 1.0) -> "LinearSoftmaxPolicy":
        """The untrained base policy (``BASE_PRIOR``)."""
        weights = np.zeros(DIMENSION)
        for key, value in BASE_PRIOR.items():
            weights[feature_index(key)] += value
        return cls(weights, temperature=temperature, name=name)

    # ------------------------------------------------------------------ the Agent protocol

    def reset(self, env: gym.Env, observation: str, info: dict[str, Any], seed: int) -> None:
        self._env = env
        self._view = EpisodeView(goal=content_words(observation), first_observation=observation)
        self._rng = np.random.default_rng(seed)
        self._proposal_rng = random.Random(seed)
        self._turns = 0
        self.trace = []

    def act(self, observation: str, info: dict[str, Any]) -> str:
        candidates = candidate_actions(self._env, info, self._proposal_rng)
        budget = read_budget(observation, self._view.first_observation, self._turns)
        seen = content_words(observation)
        features = [featurize(c, seen, self._view, budget) for c in candidates]
        probabilities = self.probabilities(features)
        choice = min(int(np.searchsorted(np.cumsum(probabilities), self._rng.random(), side="right")),
                     len(candidates) - 1)
        self.trace.append((features, probabilities, choice))
        action = candidates[choice]
        self._view.taken[action] = self._view.taken.get(action, 0) + 1
        self._view.last_action = action
        self._turns += 1
        return action

    # ------------------------------------------------------------------ learning

    def probabilities(self, features: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        logits = np.array([float(self.weights[i] @ v) for i, v in features]) / self.temperature
        logits -= logits.max()
        exp = np.exp(logits)
        return exp / exp.sum()

    def log_prob_gradient(self, trace: list[tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, int]]) -> np.ndarray:
        """Sum over an episode's steps of d log pi(a_t) / d w: phi(a_t) - E_pi[phi], over temperature."""
        gradient = np.zeros(DIMENSION)
        for features, probabilities, choice in trace:
            indices, values = features[choice]
            np.add.at(gradient, indices, values)
            for (indices, values), p in zip(features, probabilities):
                np.add.at(gradient, indices, -p * values)
        return gradient / self.temperature

    # ------------------------------------------------------------------ files

    def save(self, path: str | Path) -> None:
        path = Path(path)
        temporary = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(temporary, weights=self.weights, meta=json.dumps({"temperature": self.temperature,
                                                                                "name": self.name}))
        temporary.replace(path)

    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None) -> "LinearSoftmaxPolicy":
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            return cls(data["weights"], temperature=meta["temperature"], name=name or meta["name"])
