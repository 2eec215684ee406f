"""reward_mode="oracle_distance" (budgetgym.core.process_reward): a potential-based process reward.

A bar plays cycles and regressions under the reward and sums them: a cycle nets exactly nothing, an
episode's rewards sum to the change in potential from its start to its end, and a solved episode
from the task's start earns 1.0. A line world (below) holds it exactly; the shipped families hold
it on their own states.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import gymnasium as gym
import pytest

import budgetgym  # noqa: F401
from budgetgym.core import Action, Outcome, Task, TaskSet, TextEnv, Tool, ToolCall, rollout
from budgetgym.core.process_reward import state_digest

LINE_TASKS = TaskSet({"id": f"line-{g}", "split": "test", "max_turns": 12, "instruction": f"Walk to {g}.",
                      "goal": g, "pit": -3, "oracle_turns": g} for g in (2, 4))
MOVE = Tool("move", "Step left or right.", {
    "type": "object", "properties": {"to": {"enum": ["left", "right"]}}, "required": ["to"],
    "additionalProperties": False})
LOOK = Tool("look", "Look around.", {"type": "object", "properties": {}, "additionalProperties": False})


class LineEnv(TextEnv):
    """Walk right from 0 to the goal; the pit at -3 fails the task for good; ``look`` changes nothing."""

    family = "line"
    oracle_plans_from_any_state = True

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("tasks", LINE_TASKS)
        super().__init__(**kwargs)
        self.tools = {"move": MOVE, "look": LOOK}
        self.x = 0
        self.oracle_calls = 0

    def _load_task(self, task: Task, seed: int) -> str:
        self.x = 0
        return f"{task.instruction} You are at 0."

    def _execute(self, action: Action) -> Outcome:
        for call in action.calls:
            if call.name == "move":
                self.x += 1 if call.arguments["to"] == "right" else -1
        goal = self.task["goal"]
        return Outcome(f"You are at {self.x}.", solved=self.x == goal, failed=self.x <= self.task["pit"],
                       progress=max(0, min(self.x, goal)) / goal)

    def _oracle(self) -> Action:
        self.oracle_calls += 1
        return Action((ToolCall("move", {"to": "right" if self.x < self.task["goal"] else "left"}),))

    def _get_state(self) -> Any:
        return {"x": self.x}

    def _set_state(self, task: Task, seed: int, state: Any) -> None:
        self.x = state["x"]


def move(to: str) -> str:
    return json.dumps({"name": "move", "arguments": {"to": to}})


LOOK_CALL = json.dumps({"name": "look", "arguments": {}})


def play(env: gym.Env, actions: list[str], **reset: Any) -> list[float]:
    env.reset(**reset)
    return [env.step(action)[1] for action in actions]


def test_a_cycle_nets_nothing_and_a_solved_episode_earns_one():
    env = LineEnv(reward_mode="oracle_distance")
    rewards = play(env, [move("right"), move("left")] * 3 + [move("left"), move("right")], options={"task_id": "line-4"})
    assert rewards[:2] == [0.25, -0.25]  # one step of four closer, then back
    assert sum(rewards) == 0.0
    solved = rollout(env, "oracle", options={"task_id": "line-4"})
    assert solved.success and [s.reward for s in solved.steps] == [0.25] * 4 and solved.total_reward == 1.0


def test_a_regression_costs_what_it_moved_away_and_the_sum_is_the_change_in_potential():
    env = LineEnv(reward_mode="oracle_distance")
    rewards = play(env, [move("right"), move("right"), move("left"), move("left"), move("left")],
                   options={"task_id": "line-4"})
    assert rewards == [0.25, 0.25, -0.25, -0.25, -0.25]
    assert sum(rewards) == pytest.approx(-env._distance.turns(env) / 4 + 1.0)


def test_progress_then_regress_and_oscillation_earn_no_more_than_standing_still():
    """Every loop of the bar returns to the start; standing still (an invalid action or a look) earns 0."""
    loops = {
        "oscillate": [move("right"), move("left")] * 6,
        "progress then regress": [move("right")] * 3 + [move("left")] * 3,
        "regress then progress": [move("left")] * 2 + [move("right")] * 2,
        "stand still": [LOOK_CALL, "not an action"] * 6,
    }
    for mode in ("oracle_distance", "progress"):
        env = LineEnv(reward_mode=mode)
        for name, actions in loops.items():
            rewards = play(env, actions, options={"task_id": "line-4"})
            assert sum(rewards) == pytest.approx(0.0, abs=1e-12), (mode, name, rewards)


def test_failing_for_good_is_the_floor_not_a_way_out():
    """The pit ends the episode at the floor, max_turns turns away: worse than wandering."""
    env = LineEnv(reward_mode="oracle_distance")
    rewards = play(env, [move("left")] * 3, options={"task_id": "line-2"})
    assert sum(rewards) == pytest.approx(1.0 - 12 / 2)


def test_an_invalid_action_pays_nothing_and_costs_no_lookup():
    env = LineEnv(reward_mode="oracle_distance")
    env.reset(options={"task_id": "line-4"})
    looked_up = env._distance.hits + env._distance.misses
    assert env.step("no such thing")[1] == 0.0
    assert env._distance.hits + env._distance.misses == looked_up


def test_the_oracle_path_is_cached_whole():
    """One oracle rollout from the start caches every state on its path: following it costs no rollout
    (the cache lives for a task and episode seed)."""
    env = LineEnv(reward_mode="oracle_distance")
    rollout(env, "oracle", seed=0, options={"task_id": "line-4"})
    assert env._distance.misses == 1
    env.reset(seed=0, options={"task_id": "line-4"})
    env.step(move("left"))  # off the path: one more rollout
    assert env._distance.misses == 2


def test_copies_and_restores_pay_the_same_future_rewards():
    env = LineEnv(reward_mode="oracle_distance")
    play(env, [move("right"), move("left"), move("left")], options={"task_id": "line-4"})
    snap = env.snapshot()
    future = [move("right")] * 5
    expected = [env.step(a)[1] for a in future]
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        twin.reset(options={"snapshot": snap})
        assert [twin.step(a)[1] for a in future] == expected
    restored = LineEnv(reward_mode="oracle_distance")
    restored.reset(options={"snapshot": snap})  # a fresh env: its start is measured on its shadow
    assert [restored.step(a)[1] for a in future] == expected == [0.25] * 5


def test_the_shadow_has_the_whole_budget_ahead_late_in_an_episode():
    """turns(s) is a property of the state: at the last turn of the budget, a step back to -1 is one
    more turn away (5), not out of reach for want of turns."""
    env = LineEnv(reward_mode="oracle_distance")
    rewards = play(env, [LOOK_CALL] * 11 + [move("left")], options={"task_id": "line-4"})
    assert not env.running and rewards[-1] == -0.25


def test_an_env_whose_oracle_cannot_plan_from_any_state_refuses_the_mode():
    class Scripted(LineEnv):
        oracle_plans_from_any_state = False

    with pytest.raises(ValueError, match="does not plan from any state"):
        Scripted(reward_mode="oracle_distance")

    class ReplayOnly(LineEnv):
        def _get_state(self) -> Any:
            return None

    ReplayOnly._get_state = TextEnv._get_state
    with pytest.raises(ValueError, match="restores by replay only"):
        ReplayOnly(reward_mode="oracle_distance")
    with pytest.raises(ValueError, match="must be one of 'sparse', 'progress', 'oracle_distance'"):
        LineEnv(reward_mode="distance")


def test_state_digest_tells_states_apart_that_state_key_does_not():
    """FunctionCalling's state_key leaves out the lookups made: the digest (the potential's key) does not."""
    env = gym.make("budgetgym/FunctionCalling-v0")
    base = env.unwrapped
    env.reset(seed=0, options={"task_index": 2})
    key, digest = base.state_key(), state_digest(base)
    first = base.oracle_action()
    assert "search_messages" in first  # a lookup: the same outcome-relevant state, one turn closer
    env.step(first)
    assert base.state_key() == key and state_digest(base) != digest
    env.close()


def test_state_digest_holds_what_functioncalling_has_seen():
    """Two FunctionCalling states with the same fast-restore state but different things seen (which its
    batching rule, answer checks and oracle read) have different digests; a restore, a copy and a
    pickle keep the digest."""
    env = gym.make("budgetgym/FunctionCalling-v0").unwrapped
    digests = []
    for text in ('{"name": "no_such_tool", "arguments": {}}', '{"name": "another_missing_tool", "arguments": {}}'):
        env.reset(seed=0, options={"task_index": 2})
        state = env._get_state()
        env.step(text)  # invalid: the state stays, the observation is seen
        assert env._get_state() == state
        digests.append(state_digest(env))
    assert digests[0] != digests[1]
    snap = env.snapshot()
    other = gym.make("budgetgym/FunctionCalling-v0").unwrapped
    other.reset(options={"snapshot": snap})
    assert state_digest(other) == digests[1]
    assert state_digest(copy.deepcopy(env)) == state_digest(pickle.loads(pickle.dumps(env))) == digests[1]
    env.close()
    other.close()


FAMILIES = ["budgetgym/FunctionCalling-v0", "budgetgym/Navigation-v0", "budgetgym/Web-v0"]


@pytest.mark.parametrize("env_id", FAMILIES)
def test_shipped_families_earn_one_on_the_oracle_path_and_nothing_for_standing_still(env_id):
    env = gym.make(env_id, reward_mode="oracle_distance")
    base = env.unwrapped
    for index in range(2):
        played = rollout(env, "oracle", seed=index, options={"task_index": index})
        assert played.success
        assert played.total_reward == pytest.approx(1.0)
        assert all(step.reward > 0 for step in played.steps), [s.reward for s in played.steps]
    env.reset(seed=0, options={"task_index": 0})
    assert env.step("\x00 not an action")[1] == 0.0
    env.close()
    assert base._distance.misses <= 4  # one rollout a task, and their paths cached


@pytest.mark.parametrize("env_id", FAMILIES)
def test_shipped_families_sum_a_detour_to_its_change_in_potential(env_id):
    """A first oracle step, a detour of admissible or random valid actions, then the oracle: the sum
    is the potential's change; after the oracle finishes the task, it is 1.0 whatever the detour."""
    import numpy as np

    env = gym.make(env_id, reward_mode="oracle_distance")
    base = env.unwrapped
    rng = np.random.default_rng(0)
    env.reset(seed=3, options={"task_index": 3})
    rewards = [env.step(base.oracle_action())[1]]
    for _ in range(3):
        admissible = base.admissible_actions()
        if admissible:
            action = admissible[int(rng.integers(len(admissible)))].replace("<query>", "socks")
        else:
            name = sorted(base.tools)[int(rng.integers(len(base.tools)))]
            action = json.dumps({"name": name, "arguments": {}})
        _, reward, terminated, truncated, _ = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            break
    if base.running:
        rest = rollout(env, "oracle", reset=False)
        rewards += [s.reward for s in rest.steps]
        if rest.success:
            assert sum(rewards) == pytest.approx(1.0)
    assert sum(rewards) == pytest.approx(base._distance.potential - (-1.0))
    env.close()


def test_coding_pays_a_fix_and_takes_it_back_when_reverted():
    """Coding-v0 in its sandbox: the fix is paid, reverting it costs exactly as much, and the oracle
    from there finishes at 1.0 in all."""
    from coding_support import require

    require("local")
    env = gym.make("budgetgym/Coding-v0", reward_mode="oracle_distance", backend="local")
    base = env.unwrapped
    env.reset(seed=0, options={"task_index": 0})
    bug = base.task["bug"]
    fix = json.dumps({"name": "replace_in_file", "arguments": {"path": bug["path"], "old": bug["buggy"], "new": bug["fixed"]}})
    revert = json.dumps({"name": "replace_in_file", "arguments": {"path": bug["path"], "old": bug["fixed"], "new": bug["buggy"]}})
    rewards = [env.step(action)[1] for action in (fix, revert, fix, revert)]
    # The first edit also read the file (the oracle's view is done): the state after the revert is
    # one turn closer than the start. From there on, fix-and-revert is a cycle and nets nothing.
    assert rewards[0] > 0 and sum(rewards[:2]) == pytest.approx(1 / 5)
    assert rewards[2] > 0 and sum(rewards[2:]) == pytest.approx(0.0, abs=1e-12)
    rest = rollout(env, "oracle", reset=False)
    assert rest.success and sum(rewards) + rest.total_reward == pytest.approx(1.0)
    shadow = base._distance._shadow
    assert shadow is not None
    closed = []
    shadow.sandbox.close = lambda original=shadow.sandbox.close: closed.append(original())
    env.close()
    assert base._distance._shadow is None and closed  # the shadow's sandbox went with the env


# ------------------------------------------------------------------ the farms (budgetgym.eval.exploits.process)


@pytest.mark.parametrize("env_id, sample, reward_mode", [("budgetgym/FunctionCalling-v0", 10, "oracle_distance"),
                                                        ("budgetgym/FunctionCalling-v0", 10, "progress"),
                                                        ("budgetgym/Web-v0", 8, "oracle_distance")])
def test_the_exploit_probe_finds_no_farm_of_a_process_reward(env_id, sample, reward_mode):
    from budgetgym.eval.probes import format_exploit_table, run_exploit_probe

    result = run_exploit_probe(env_id, sample=sample, seed=0, reward_mode=reward_mode)
    table = format_exploit_table(result)
    rows = {row["name"]: row for row in result["exploits"]}
    assert rows["oscillate"]["applies"] and rows["progress-regress"]["applies"], table
    assert not result["flagged"], table
    assert result["baselines"]["oracle"]["mean_return"] == pytest.approx(1.0), table


def farm_returns(env_id, reward_mode, tasks):
    from budgetgym.eval.episodes import play_episode
    from budgetgym.eval.exploits.process import Oscillate, ProgressRegress

    env = gym.make(env_id, reward_mode=reward_mode)
    ids = env.unwrapped.tasks.ids[:tasks]
    returns = {}
    for agent in (Oscillate(), ProgressRegress()):
        played = [play_episode(env, agent, seed=n, options={"task_id": task}) for n, task in enumerate(ids)]
        returns[agent.name] = [p.reward for p in played]
        returns[agent.name + " actions"] = [p.actions for p in played]
    env.close()
    return returns


@pytest.mark.parametrize("reward_mode", ["oracle_distance", "progress"])
def test_navigation_loops_earn_nothing(reward_mode):
    """Navigation's farms do loop (go east, go west; take, insert) and every loop nets out."""
    returns = farm_returns("budgetgym/Navigation-v0", reward_mode, 2)
    assert any(len(set(actions)) > 1 for actions in returns["oscillate actions"])
    for name in ("oscillate", "progress-regress"):
        assert all(value == pytest.approx(0.0, abs=1e-9) for value in returns[name]), (name, returns)


def test_web_progress_and_the_oracle_distance_pay_loops_nothing():
    """Web's progress is a potential of the current state (not the best milestone reached), so
    searching and opening the target, then going back, gives back what it earned, as the
    oracle-distance reward does."""
    for reward_mode in ("progress", "oracle_distance"):
        returns = farm_returns("budgetgym/Web-v0", reward_mode, 2)
        assert returns["progress-regress"] == returns["oscillate"] == [0.0, 0.0], reward_mode


PLANS_FROM_ANY_STATE = {"budgetgym/FunctionCalling-v0", "budgetgym/Navigation-v0", "budgetgym/Web-v0",
                        "budgetgym/Coding-v0"}


@pytest.mark.parametrize("env_id", [e for e in __import__("registered").ENV_IDS
                                    if e not in PLANS_FROM_ANY_STATE and e != "budgetgym/SWEBench-v0"])
def test_every_other_id_refuses_the_mode_with_its_reason(env_id):
    """Adapters whose oracle replays a script (BFCL-v0) or whose planning from any state is not
    checked here refuse the mode at construction, saying why and what to use instead. (SWEBench-v0
    refuses alike; building its test instance takes longer than this check is worth.)"""
    from registered import make_or_skip

    with pytest.raises(ValueError, match="cannot give reward_mode='oracle_distance'.*use 'sparse' or 'progress'"):
        make_or_skip(env_id, reward_mode="oracle_distance")


def reference_turns(sparse: gym.Env, snap: dict) -> int:
    """The oracle's turns from ``snap``'s state, measured afresh (no cache): a rollout on a sparse
    env restored to it, its clock set back so the whole budget is ahead."""
    sparse.reset(options={"snapshot": snap})
    base = sparse.unwrapped
    floor = base.task.max_turns
    if base._solved:
        return 0
    if base._failed:
        return floor
    base._turn, base._ready = 0, True
    played = rollout(sparse, "oracle", reset=False, max_steps=floor)
    return played.turns if played.success else floor


@pytest.mark.parametrize("env_id", FAMILIES)
def test_every_reward_is_the_uncached_change_in_potential(env_id):
    """The cached potentials (every state of a rollout, the states an agent reaches by following a
    rollout's actions) equal a fresh rollout from each state: the oracle's and noisy oracles'
    episodes, played twice in one env (the second time from the cache), and an off-path episode of
    each task first (its states then lie on rollouts the later episodes enter and follow), each
    agent with seeds of its own."""
    from budgetgym.eval.agents.scripted import NoisyOracleAgent, OracleAgent
    from budgetgym.eval.episodes import play_episode

    recorder, sparse = gym.make(env_id), gym.make(env_id)
    ids = recorder.unwrapped.tasks.ids[:3]
    runs = []
    for index, agent in enumerate((NoisyOracleAgent(p=0.5), OracleAgent(), NoisyOracleAgent(p=0.25))):
        for number, task_id in enumerate(ids):
            # Each agent's episodes of a task with a seed of its own: families whose seed reaches
            # nothing (episode_seed_matters = False) carry a task's potentials across them.
            start = {"seed": 100 * index + number, "options": {"task_id": task_id}}
            runs.append((start, play_episode(recorder, agent, **start).actions))
    env = gym.make(env_id, reward_mode="oracle_distance")
    base = env.unwrapped
    for _ in range(2):
        for start, actions in runs:
            env.reset(**start)
            unit = reference_turns(sparse, base.snapshot())
            before = -1.0
            for action in actions:
                reward = env.step(action)[1]
                now = -reference_turns(sparse, base.snapshot()) / max(1, unit)
                assert reward == now - before, (start, action)
                before = now
    for closing in (env, sparse, recorder):
        closing.close()


@pytest.mark.parametrize("env_id", FAMILIES)
def test_a_lean_info_env_plays_the_same_game(env_id):
    """``lean_info`` (the shadow's) leaves only what info alone carries out: the same observations,
    rewards, ends, states and verdicts on the oracle's and noisy oracles' episodes."""
    from budgetgym.eval.agents.scripted import NoisyOracleAgent, OracleAgent
    from budgetgym.eval.episodes import play_episode

    full, lean = gym.make(env_id), gym.make(env_id)
    lean.unwrapped.lean_info = True
    ids = full.unwrapped.tasks.ids[:3]
    for agent in (OracleAgent(), NoisyOracleAgent(p=0.5)):
        for number, task_id in enumerate(ids):
            start = {"seed": number, "options": {"task_id": task_id}}
            actions = play_episode(full, agent, **start).actions
            assert full.reset(**start)[0] == lean.reset(**start)[0]
            for action in actions:
                ours, theirs = full.step(action), lean.step(action)
                assert ours[:4] == theirs[:4], action
                assert {k: v for k, v in ours[4].items() if k not in ("admissible_actions", "tools")} == theirs[4]
                assert state_digest(full.unwrapped) == state_digest(lean.unwrapped)
            assert full.unwrapped.snapshot()["transcript"] == lean.unwrapped.snapshot()["transcript"]
    full.close()
    lean.close()


@pytest.mark.parametrize("env_id", ["budgetgym/FunctionCalling-v0", "budgetgym/Web-v0"])
def test_a_family_whose_seed_reaches_nothing_measures_a_task_once_across_seeds(env_id):
    """FunctionCalling and Web ignore the episode seed (``episode_seed_matters = False``): a second
    attempt of a task with another seed finds its oracle path measured, another task's episode in
    between (the env keeps several tasks' potentials); another task does not."""
    env = gym.make(env_id, reward_mode="oracle_distance")
    distance = env.unwrapped._distance
    first = rollout(env, "oracle", seed=1, options={"task_index": 0})
    misses = distance.misses
    rollout(env, "oracle", seed=2, options={"task_index": 1})
    assert distance.misses > misses
    misses = distance.misses
    again = rollout(env, "oracle", seed=2, options={"task_index": 0})
    assert distance.misses == misses and [s.reward for s in again.steps] == [s.reward for s in first.steps]
    env.close()


@pytest.mark.parametrize("env_id", FAMILIES)
def test_a_state_view_is_the_fast_restore_state_uncopied(env_id):
    """``state_view()`` (what a digest reads) is ``_get_state()``'s JSON value on every state of the
    oracle's and a noisy oracle's episodes: the digests are those of the copied state."""
    import hashlib

    from budgetgym.eval.agents.scripted import NoisyOracleAgent, OracleAgent
    from budgetgym.eval.episodes import play_episode

    env = gym.make(env_id)
    base = env.unwrapped
    canonical = {"sort_keys": True, "ensure_ascii": False, "separators": (",", ":")}
    for agent in (OracleAgent(), NoisyOracleAgent(p=0.5)):
        for number, task_id in enumerate(base.tasks.ids[:3]):
            start = {"seed": number, "options": {"task_id": task_id}}
            actions = play_episode(env, agent, **start).actions
            env.reset(**start)
            for action in [None, *actions]:
                if action is not None:
                    env.step(action)
                assert json.dumps(base.state_view(), **canonical) == json.dumps(base._get_state(), **canonical)
                state, history = base._get_state(), base.history_key()
                text = json.dumps(state if history is None else [state, history], **canonical)
                assert state_digest(base) == hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    env.close()


def test_a_functioncalling_refusal_that_shows_a_value_is_a_new_state_with_its_own_potential():
    """FunctionCalling's future reads what the agent has seen (``history_key``), and a refusal is
    seen: an unknown tool named after the path the oracle's second turn needs shows the path, so
    the oracle needs one turn fewer from there (8 -> 7). The invalid action pays that change, as a
    fresh rollout measures it, not 0; the next step is looked up from the new state, not taken from
    the rollout it left."""
    env, sparse = gym.make("budgetgym/FunctionCalling-v0", reward_mode="oracle_distance"), gym.make("budgetgym/FunctionCalling-v0")
    base = env.unwrapped
    env.reset(seed=0, options={"task_id": "fc-filesystem-s0-0004"})
    unit = reference_turns(sparse, base.snapshot())
    echo = env.step(json.dumps({"name": "/projects/contract.csv", "arguments": {}}))
    assert not echo[4]["action_valid"] and "/projects/contract.csv" in echo[0]
    after = reference_turns(sparse, base.snapshot())
    assert (unit, after) == (8, 7) and echo[1] == -after / unit - (-1.0)
    followed = env.step(base.oracle_action())[1]
    assert followed == -reference_turns(sparse, base.snapshot()) / unit - (-after / unit)
    env.close()
    sparse.close()


@pytest.mark.parametrize("env_id", FAMILIES)
def test_a_repeated_episode_finds_every_state_cached(env_id):
    """The same noisy episodes (random and invalid actions among the oracle's) played again in one
    env, with other seeds where the seed reaches nothing: every state was cached the first time, so
    the second costs no rollout (a FunctionCalling rollout from a restored state once digested its
    states with the restored turns read twice, keys no agent's state has)."""
    from budgetgym.eval.agents.scripted import NoisyOracleAgent
    from budgetgym.eval.episodes import play_episode

    recorder = gym.make(env_id)
    env = gym.make(env_id, reward_mode="oracle_distance")
    distance = env.unwrapped._distance
    seed_matters = type(env.unwrapped).episode_seed_matters
    runs = [({"seed": number, "options": {"task_id": task_id}},
             play_episode(recorder, NoisyOracleAgent(p=1 / 3), seed=number, options={"task_id": task_id}).actions)
            for number, task_id in enumerate(recorder.unwrapped.tasks.ids[:6])]
    for again in (False, True):
        misses = distance.misses
        for start, actions in runs:
            env.reset(seed=start["seed"] + (100 if again and not seed_matters else 0), options=start["options"])
            for action in actions:
                env.step(action)
    assert distance.misses == misses
    recorder.close()
    env.close()


JUMP = Tool("jump", "Jump to a place.", {"type": "object", "properties": {"to": {"type": "integer"}},
                                         "required": ["to"], "additionalProperties": False})


class JumpLineEnv(LineEnv):
    """The line with a ``jump`` anywhere: a state farther than the budget, reached in one turn."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools = {"move": MOVE, "look": LOOK, "jump": JUMP}

    def _execute(self, action: Action) -> Outcome:
        if action.calls and action.calls[0].name == "jump":
            self.x = action.calls[0].arguments["to"]
            return Outcome(f"You are at {self.x}.", progress=0.0)
        return super()._execute(action)


def test_a_rollout_cut_by_the_budget_measures_its_first_state_alone():
    """From -4 the goal (3) is 7 turns away, past the budget (6): the rollout is cut unsolved, and
    its first state is at the floor. Its later states had less than the whole budget ahead: -2 is 5
    turns away and -1 is 4, which their own rollouts find, so the steps there pay 1/3 each."""
    tasks = TaskSet([{"id": "far", "split": "test", "max_turns": 6, "instruction": "Walk to 3.", "goal": 3,
                      "pit": -30, "oracle_turns": 3}])
    env, sparse = JumpLineEnv(reward_mode="oracle_distance", tasks=tasks), JumpLineEnv(tasks=tasks)
    rewards = play(env, [json.dumps({"name": "jump", "arguments": {"to": -4}})] + [move("right")] * 3,
                   options={"task_id": "far"})
    assert rewards == pytest.approx([-1.0, 0.0, 1 / 3, 1 / 3])
    env.reset(options={"task_id": "far"})
    before = -1.0
    for action in [json.dumps({"name": "jump", "arguments": {"to": -4}})] + [move("right")] * 3:
        reward = env.step(action)[1]
        now = -reference_turns(sparse, env.snapshot()) / 3
        assert reward == now - before
        before = now
