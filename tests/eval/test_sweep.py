import os
import signal
import subprocess
import sys
import time

import pytest

from budgetgym.eval.agents import NoisyOracleAgent, OracleAgent
from budgetgym.eval.episode_log import read_records
from budgetgym.eval.metrics import pass_grid, solved_within
from budgetgym.eval.sweep import plan_sweep, run_sweep
from eval_support import TESTS_DIR, TOY_ID, toy_tasks

BUDGETS = (0.25, 0.5, 2, 1.0)
KS = (1, 2, 4)


@pytest.mark.parametrize("agent", [OracleAgent(), NoisyOracleAgent(0.5)], ids=lambda a: a.name)
def test_single_run_shortcut_equals_separate_runs_per_budget(agent):
    shortcut = run_sweep(TOY_ID, agent, tasks=toy_tasks(10), k=KS, budgets=BUDGETS, seed=3).records
    separate = run_sweep(TOY_ID, agent, tasks=toy_tasks(10), k=KS, budgets=BUDGETS, seed=3, shortcut=False).records
    assert len(shortcut) == 10 * 4 and len(separate) == 10 * 4 * len(BUDGETS)
    assert all(r["budget"] is None for r in shortcut)
    # Episode by episode: the capped run succeeded iff the full run succeeded within the cap...
    full = {(r["task"], r["attempt"]): r for r in shortcut}
    for record in separate:
        assert record["success"] == solved_within(full[(record["task"], record["attempt"])], record["budget"])
    # ...so Pass@(K,T) is the same on the whole grid.
    assert [c.value for c in pass_grid(shortcut, BUDGETS, KS)] == [c.value for c in pass_grid(separate, BUDGETS, KS)]
    if agent.name != "oracle":  # the grid is not trivially all ones
        assert len({c.value for c in pass_grid(shortcut, BUDGETS, KS)}) > 2


def test_plan_has_n_attempts_per_task_budget_and_reveal():
    tasks = {"a": {"full_budget": 4, "oracle_turns": 2, "split": "test"},
             "b": {"full_budget": 8, "oracle_turns": 3, "split": "test"}}
    jobs = plan_sweep(TOY_ID, "oracle", tasks, 3, (0.5, 2, "1.5x"), ("none", "total"), seed=0)
    assert len(jobs) == 2 * 3 * (1 + 3)
    assert {j["cap"] for j in jobs if j["task"] == "a" and j["reveal"] == "total"} == {2, 3}
    assert {j["cap"] for j in jobs if j["task"] == "b" and j["budget"] == "1.5x"} == {5}
    # The seed depends on task and attempt only: attempt i is paired across budgets and reveals.
    assert len({j["seed"] for j in jobs}) == 6


def test_announced_caps_reach_the_agent():
    result = run_sweep(TOY_ID, OracleAgent(), tasks=2, k=1, budgets=(0.5,), reveal=("total", "remaining"))
    assert {(r["reveal"], r["budget"]) for r in result.records} == {("total", 0.5), ("remaining", 0.5)}
    assert all(r["success"] and r["turns"] <= r["cap"] for r in result.records)


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="n must be >= max"):
        run_sweep(TOY_ID, OracleAgent(), tasks=1, k=(1, 4), n=2)
    with pytest.raises(ValueError, match="budget"):
        run_sweep(TOY_ID, OracleAgent(), tasks=1, budgets=(0,))
    with pytest.raises(ValueError, match="distinct"):
        run_sweep(TOY_ID, OracleAgent(), tasks=1, budgets=(1, 1.0))
    with pytest.raises(ValueError, match="reveal"):
        run_sweep(TOY_ID, OracleAgent(), tasks=1, reveal="sometimes")
    with pytest.raises(KeyError):
        run_sweep(TOY_ID, OracleAgent(), tasks=["no-such-task"])


def test_a_count_of_tasks_is_run_whole_or_refused(tmp_path):
    # The toy env's test split (the default) has 5 tasks: 5 run all five, 6 must not run five.
    assert run_sweep(TOY_ID, OracleAgent(), tasks=5, k=1, budgets=(1.0,)).planned == 5
    out = tmp_path / "episodes.jsonl"
    with pytest.raises(ValueError, match=r"6 tasks asked for, but the env's test split has 5: .*'all' \(20 tasks\)"):
        run_sweep(TOY_ID, OracleAgent(), tasks=6, k=1, budgets=(1.0,), out=out)
    assert not out.exists()  # refused before anything ran


SWEEP = dict(tasks=toy_tasks(8), k=KS, budgets=(0.5, 1.0), reveal=("none", "remaining"), seed=5)


class InterruptingAgent(NoisyOracleAgent):
    """The same agent (same name, same actions) that raises KeyboardInterrupt at its n-th action."""

    def __init__(self, after: int) -> None:
        super().__init__(0.3)
        self.left = after

    def act(self, observation, info):
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
        return super().act(observation, info)


def test_resume_after_an_interruption_ends_with_the_uninterrupted_episodes(tmp_path):
    reference = tmp_path / "reference.jsonl"
    uninterrupted = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=reference, **SWEEP)
    resumed = tmp_path / "resumed.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(TOY_ID, InterruptingAgent(after=60), out=resumed, **SWEEP)
    done = len(read_records(resumed))
    assert 0 < done < uninterrupted.planned
    with open(resumed, "a", encoding="utf-8") as handle:
        handle.write('{"env": "budgetgym-test/Coun')  # a line cut short by a kill mid-write
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=resumed, **SWEEP)
    assert result.ran == uninterrupted.planned - done
    assert resumed.read_bytes() == reference.read_bytes()
    assert result.records == uninterrupted.records
    # A third call has nothing left to do.
    assert run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=resumed, **SWEEP).ran == 0


KILLED_SWEEP = """
import sys, time
sys.path.insert(0, {tests!r})
import gymnasium as gym
import budgetgym
gym.register({toy!r}, entry_point="toy_env:CounterEnv")
from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.sweep import run_sweep

class SlowAgent(NoisyOracleAgent):  # the same agent, slowed so the kill lands midway
    def act(self, observation, info):
        time.sleep(0.02)
        return super().act(observation, info)

run_sweep({toy!r}, SlowAgent(0.3), out={out!r}, **{sweep!r})
"""


def test_resume_after_a_killed_process(tmp_path):
    reference = tmp_path / "reference.jsonl"
    uninterrupted = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=reference, **SWEEP)
    out = tmp_path / "killed.jsonl"
    script = KILLED_SWEEP.format(tests=str(TESTS_DIR), toy=TOY_ID, out=str(out), sweep=SWEEP)
    process = subprocess.Popen([sys.executable, "-c", script])
    try:
        while process.poll() is None and (not out.exists() or out.read_bytes().count(b"\n") < 20):
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    done = len(read_records(out))
    assert 20 <= done < uninterrupted.planned
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    assert result.ran == uninterrupted.planned - done
    assert out.read_bytes() == reference.read_bytes()


def test_resume_refuses_another_sweeps_file(tmp_path):
    out = tmp_path / "episodes.jsonl"
    run_sweep(TOY_ID, NoisyOracleAgent(0.3), tasks=2, k=1, out=out)
    with pytest.raises(ValueError, match="another sweep"):
        run_sweep(TOY_ID, NoisyOracleAgent(0.3), tasks=2, k=1, out=out, seed=1)
    with pytest.raises(ValueError, match="another sweep"):
        run_sweep(TOY_ID, OracleAgent(), tasks=2, k=1, out=out)


def test_sweeps_of_several_envs_share_one_file(tmp_path):
    out = tmp_path / "episodes.jsonl"
    first = run_sweep(TOY_ID, OracleAgent(), tasks="test", k=1, out=out)
    second = run_sweep(TOY_ID, OracleAgent(), tasks=["toy-01"], k=1, out=out)
    assert {r["task"] for r in first.records} == {f"toy-{i:02d}" for i in range(0, 20, 4)}
    assert len(read_records(out)) == len(first.records) + len(second.records)
    assert os.path.getsize(out) > 0
