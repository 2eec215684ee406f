"""No silent zeros: a backend that cannot run here is refused, in one line, before any episode runs
(sweeps, probes, the command line and exports alike)."""

from __future__ import annotations

import gymnasium as gym
import pytest

from budgetgym.cli import main
from budgetgym.core import BackendUnavailable
from budgetgym.eval import OracleAgent, run_sweep
from toy_env import CounterEnv

BROKEN_ID = "budgetgym-test/BrokenBackend-v0"


class BrokenBackendEnv(CounterEnv):
    """The toy env, whose backend 'cannot start': every episode would otherwise score 0."""

    checks = 0

    def check_backend(self) -> None:
        BrokenBackendEnv.checks += 1
        raise BackendUnavailable("the toy backend did not start (no engine); install the engine")

    def _load_task(self, task, seed):
        raise AssertionError("no episode may start on a broken backend")


if BROKEN_ID not in gym.registry:
    gym.register(BROKEN_ID, entry_point=BrokenBackendEnv)


@pytest.mark.parametrize("executor", ["serial", "threads", "processes"])
def test_a_sweep_refuses_a_broken_backend_before_any_episode(tmp_path, executor):
    with pytest.raises(BackendUnavailable, match="did not start"):
        run_sweep(BROKEN_ID, OracleAgent(), tasks=2, k=[1], budgets=[1.0], executor=executor,
                  out=tmp_path / "episodes.jsonl", progress=False)
    assert not (tmp_path / "episodes.jsonl").exists() or (tmp_path / "episodes.jsonl").read_text() == ""


def test_the_command_line_says_it_in_one_line_and_exits_1(tmp_path, capsys):
    code = main(["eval", "--env", BROKEN_ID, "--agent", "oracle", "--k", "1", "--budgets", "1.0", "--quiet",
                 "--no-progress", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "did not start" in err and "install the engine" in err
    assert not list(tmp_path.glob("summary.json"))  # no score reported


def test_export_refuses_a_broken_backend(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    assert main(["export", BROKEN_ID, "--out", str(out)]) == 1
    assert "did not start" in capsys.readouterr().err and not out.exists()


def test_a_working_backend_is_checked_once_per_process(tmp_path):
    from budgetgym.core.env import check_backend

    class Counting(CounterEnv):
        checks = 0

        def check_backend(self) -> None:
            Counting.checks += 1

    gym.register("budgetgym-test/CountedCheck-v0", entry_point=Counting)
    try:
        for _ in range(3):
            env = gym.make("budgetgym-test/CountedCheck-v0")
            check_backend(env)
            env.close()
        assert Counting.checks == 1
    finally:
        del gym.registry["budgetgym-test/CountedCheck-v0"]


def test_the_default_sweep_names_each_env_it_leaves_out_and_runs_the_rest(tmp_path, capsys, monkeypatch):
    from registered import TOY_ID

    import budgetgym.eval.cli as eval_cli

    monkeypatch.setattr(eval_cli, "default_env_ids", lambda: [BROKEN_ID, TOY_ID])
    code = main(["eval", "--agent", "oracle", "--k", "1", "--budgets", "1.0", "--quiet", "--no-progress",
                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 0, err
    skipped = [line for line in err.splitlines() if line.startswith("budgetgym: skipped")]
    assert skipped == [f"budgetgym: skipped {BROKEN_ID}: the toy backend did not start (no engine); "
                       "install the engine"]
    envs = {line.split('"env": "')[1].split('"')[0] for line in (tmp_path / "episodes.jsonl").read_text().splitlines()}
    assert envs == {TOY_ID}
    monkeypatch.setattr(eval_cli, "default_env_ids", lambda: [BROKEN_ID])
    assert main(["eval", "--agent", "oracle", "--quiet", "--no-progress", "--out", str(tmp_path / "none")]) == 1
