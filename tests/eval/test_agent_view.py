"""What a policy sees of ``info``: every runner hands agents ``agent_view(info)``, never the grader's
fields (``progress``, ``success``, ``injected_error``, the budget a ``reveal="none"`` cap hides)."""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import pytest

from budgetgym.core import AGENT_INFO_KEYS, agent_view, text_env
from budgetgym.eval.episodes import play_episode
from budgetgym.eval.exploits.web import ClimbProgress
from budgetgym.eval.probes.recovery import run_recovery_probe
from budgetgym.testing import run_attempts
from budgetgym.wrappers import ErrorInjection, TurnBudget

WEB = "budgetgym/Web-v0"
GRADER_FIELDS = {"progress", "success", "injected_error", "budget", "full_budget", "oracle_turns"}


class Recorder:
    """Plays the oracle and records every ``info`` field it was handed (class-wide: a runner may copy it)."""

    name = "recorder"
    seen: ClassVar[set[str]] = set()
    first: ClassVar[list[tuple[int, str]]] = []  # (turns already played, the first observation) per episode

    def reset(self, env: gym.Env[str, str], observation: str, info: dict[str, Any], seed: int) -> None:
        self._env = text_env(env)
        Recorder.seen |= set(info)
        Recorder.first.append((self._env.turn, observation))

    def act(self, observation: str, info: dict[str, Any]) -> str:
        Recorder.seen |= set(info)
        return self._env.oracle_action() or "click[Buy Now]"


@pytest.fixture(autouse=True)
def _fresh_recorder():
    Recorder.seen, Recorder.first = set(), []


def test_agent_view_keeps_the_policy_fields_only():
    info = {"progress": 0.5, "success": False, "tools": [], "admissible_actions": ["back"], "turn": 3,
            "budget": {"cap": 4}, "injected_error": {"description": "click P1"}, "history": []}
    view = agent_view(info)
    assert set(view) == {"tools", "admissible_actions", "turn", "history"} and view["tools"] is info["tools"]
    assert not GRADER_FIELDS & AGENT_INFO_KEYS
    assert "progress" in info  # the runner's own info is left as it was


def test_an_episode_hands_the_agent_no_grader_field():
    env = ErrorInjection(TurnBudget(gym.make(WEB, split="test"), "1.5x", reveal="none"))
    try:
        result = play_episode(env, Recorder(), seed=0)
    finally:
        env.close()
    assert result.turns > 0
    assert {"tools", "history", "turn"} <= Recorder.seen <= AGENT_INFO_KEYS, Recorder.seen


def test_the_recovery_probe_hides_the_mistakes_description_and_shows_both_arms_their_prefix():
    env = gym.make(WEB, split="test")
    states = [s for s in text_env(env).failure_states() if s["kind"] == "far_page"][:2]
    env.close()
    result = run_recovery_probe(WEB, Recorder(), states=states, attempts=1, bootstrap=10)
    assert len(result["episodes"]) == 4
    assert "history" in Recorder.seen and "injected_error" not in Recorder.seen, Recorder.seen
    # Failure and clean arm alike: the instructions and every turn played so far, rendered.
    assert len(Recorder.first) == 4
    for turns, observation in Recorder.first:
        assert turns > 0 and observation.startswith("Instruction:") and observation.count("\n> ") == turns


def test_run_attempts_hands_the_agent_no_grader_field():
    env = gym.make(WEB, split="test")
    try:
        run_attempts(Recorder(), env, [text_env(env).tasks[0].id], attempts=1)
    finally:
        env.close()
    assert Recorder.seen and Recorder.seen <= AGENT_INFO_KEYS, Recorder.seen


def test_a_policy_that_climbs_progress_gets_nothing_to_climb():
    """``climb-progress`` never reads an item; handed the whole info it solves a share of the tasks,
    handed the agent's view (as every runner does) none."""
    env = gym.make(WEB, split="test")
    try:
        ids = [task.id for task in text_env(env).tasks][:20]
        whole = 0
        for seed, task_id in enumerate(ids):
            agent = ClimbProgress()
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            agent.reset(env, observation, info, seed)
            terminated = truncated = False
            while not (terminated or truncated):
                observation, _, terminated, truncated, info = env.step(agent.act(observation, info))
            whole += info["success"]
        viewed = sum(play_episode(env, ClimbProgress(), seed=seed, options={"task_id": task_id}).success
                     for seed, task_id in enumerate(ids))
    finally:
        env.close()
    assert whole >= 4 and viewed == 0, (whole, viewed)
