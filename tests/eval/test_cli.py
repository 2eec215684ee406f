"""The evaluation verbs, run through ``budgetgym.cli.main`` as a user would."""

import json

import pytest

from budgetgym.cli import main
from eval_support import TOY_ID


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_writes_episodes_and_the_report_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["eval", "--env", TOY_ID, "--agent", "noisy-oracle:0.4", "--tasks", "6", "--k", "1,2",
            "--budgets", "0.5,1.0", "--reveal", "none,total", "--out", str(out), "--no-progress"]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0
    assert "Pass@1" in stdout and "reveal=total" in stdout and "single-run shortcut" in stdout
    assert "36 episodes run (0 resumed" in stdout  # 6 tasks x 2 attempts x (1 full run + 2 caps)
    for name in ("episodes.jsonl", "summary.json", "pass_at_k.csv", "pass_heatmap.png", "pass_curves.png",
                 "reveal_difference.png"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ks"] == [1, 2] and summary["budgets"] == [0.5, 1.0]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and "0 episodes run (36 resumed" in stdout


def test_report_and_compare(tmp_path, capsys):
    for agent in ("oracle", "random"):
        assert run(capsys, "eval", "--env", TOY_ID, "--agent", agent, "--tasks", "test", "--k", "1,2,4",
                   "--out", str(tmp_path / agent), "--no-progress", "--quiet")[0] == 0
    code, stdout, _ = run(capsys, "report", str(tmp_path / "oracle" / "episodes.jsonl"), "--out", str(tmp_path / "r"))
    assert code == 0 and (tmp_path / "r" / "pass_heatmap.png").exists()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["ks"] == [1, 2, 4]
    code, stdout, _ = run(capsys, "compare", str(tmp_path / "oracle" / "episodes.jsonl"),
                          str(tmp_path / "random" / "episodes.jsonl"), "--out", str(tmp_path / "c"))
    assert code == 0 and "random minus oracle" in stdout
    assert (tmp_path / "c" / "difference_heatmap.png").exists()


def test_probes(tmp_path, capsys):
    code, stdout, _ = run(capsys, "probe", "action-quality", "--env", TOY_ID, "--agent-a", "random",
                          "--agent-b", "oracle", "--reference", "oracle", "--rollouts", "2", "--out", str(tmp_path),
                          "--no-progress")
    assert code == 0 and "mean quality" in stdout
    result = json.loads((tmp_path / "action_quality.json").read_text())
    assert result["mean_quality_b"] == 1.0 and result["b_better"] > 0
    # The toy family ships no failure states: a clear error, not a traceback.
    code, _, stderr = run(capsys, "probe", "recovery", "--env", TOY_ID, "--out", str(tmp_path), "--no-progress")
    assert code == 1 and "no failure states" in stderr


def test_errors_are_one_line(tmp_path, capsys):
    code, _, stderr = run(capsys, "eval", "--env", TOY_ID, "--agent", "genius", "--out", str(tmp_path))
    assert code == 1 and stderr.startswith("budgetgym: error: unknown agent 'genius'")
    code, _, stderr = run(capsys, "eval", "--env", TOY_ID, "--k", "1,8", "--n", "4", "--out", str(tmp_path))
    assert code == 1 and "n must be >= max(K)" in stderr
    code, _, stderr = run(capsys, "report", str(tmp_path / "missing.jsonl"))
    assert code == 1 and "missing.jsonl" in stderr
    with pytest.raises(SystemExit):
        main(["eval", "--reveal", "sometimes"])
