"""The evaluation verbs, run through ``budgetgym.cli.main`` as a user would."""

import argparse
import io
import json
import sys

import pytest

from budgetgym.cli import build_parser, main
from eval_support import TOY_ID

FC = "budgetgym/FunctionCalling-v0"


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_eval_writes_episodes_and_the_report_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["eval", "--env", TOY_ID, "--agent", "noisy-oracle:0.4", "--tasks", "all", "--k", "1,2",
            "--budgets", "0.5,1.0", "--reveal", "none,total", "--out", str(out), "--no-progress"]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0
    assert "Pass@1" in stdout and "reveal=total" in stdout and "single-run shortcut" in stdout
    assert "120 episodes run (0 resumed" in stdout  # 20 tasks x 2 attempts x (1 full run + 2 caps)
    assert "on split test, train" in stdout and "Intervals:" in stdout
    for name in ("episodes.jsonl", "summary.json", "pass_at_k.csv", "pass_heatmap.png", "pass_curves.png",
                 "reveal_difference.png"):
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ks"] == [1, 2] and summary["budgets"] == [0.5, 1.0] and "Wilson" in summary["interval"]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and "0 episodes run (120 resumed" in stdout


def test_eval_defaults_to_the_test_split_and_budgets_in_solution_lengths(tmp_path, capsys):
    code, stdout, _ = run(capsys, "eval", "--env", TOY_ID, "--agent", "oracle", "--k", "1,2", "--out",
                          str(tmp_path), "--no-progress")
    assert code == 0 and "on split test;" in stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["budgets"] == ["1x", "1.25x", "1.5x", "2x", 1.0]
    assert {g["splits"][0] for g in summary["groups"]} == {"test"} and summary["groups"][0]["tasks"] == 5
    # The oracle is perfect on every cell of the default grid: none is below a task's shortest solution.
    assert all(c["pass"] == 1.0 and c["infeasible_tasks"] == 0 for g in summary["groups"] for c in g["cells"])


def test_infeasible_cells_are_marked(tmp_path, capsys):
    code, stdout, _ = run(capsys, "eval", "--env", TOY_ID, "--agent", "oracle", "--tasks", "all", "--k", "1",
                          "--budgets", "1,1x", "--out", str(tmp_path), "--no-progress")
    assert code == 0
    cells = json.loads((tmp_path / "summary.json").read_text())["groups"][0]["cells"]
    one_turn, one_x = cells
    assert one_turn["infeasible_tasks"] > 0 and one_turn["pass"] < 1 and one_x["infeasible_tasks"] == 0
    assert "1 turns*" in stdout and "below their shortest solution" in stdout


def test_report_and_compare_by_run(tmp_path, capsys):
    for name in ("oracle", "random"):
        assert run(capsys, "eval", "--env", TOY_ID, "--agent", name, "--k", "1,2,4",
                   "--out", str(tmp_path / name), "--no-progress", "--quiet")[0] == 0
    # A second run of the same agent: compare labels runs by folder and never pools their attempts.
    assert run(capsys, "eval", "--env", TOY_ID, "--agent", "oracle", "--k", "1,2,4", "--seed", "5",
               "--out", str(tmp_path / "oracle-again"), "--no-progress", "--quiet")[0] == 0
    code, stdout, _ = run(capsys, "report", str(tmp_path / "oracle"), "--out", str(tmp_path / "r"))
    assert code == 0 and (tmp_path / "r" / "pass_heatmap.png").exists()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["ks"] == [1, 2, 4]
    code, stdout, _ = run(capsys, "compare", str(tmp_path / "oracle" / "episodes.jsonl"), str(tmp_path / "random"),
                          "--out", str(tmp_path / "c"))
    assert code == 0 and "random minus oracle" in stdout
    assert (tmp_path / "c" / "difference_heatmap.png").exists()
    code, stdout, _ = run(capsys, "compare", str(tmp_path / "oracle"), str(tmp_path / "oracle-again"),
                          "--out", str(tmp_path / "c2"))
    assert code == 0 and "oracle-again minus oracle" in stdout
    comparison = json.loads((tmp_path / "c2" / "comparison.json").read_text())
    assert comparison["ks"] == [1, 2, 4] and all(c["pass"] == 0 for g in comparison["groups"] for c in g["cells"])
    code, stdout, _ = run(capsys, "compare", str(tmp_path / "oracle"), str(tmp_path / "oracle-again"),
                          "--label-a", "monday", "--label-b", "tuesday", "--out", str(tmp_path / "c3"))
    assert code == 0 and "tuesday minus monday" in stdout


def test_probes_resume(tmp_path, capsys):
    argv = ["probe", "action-quality", "--env", TOY_ID, "--agent-a", "random", "--agent-b", "oracle",
            "--reference", "oracle", "--rollouts", "2", "--out", str(tmp_path), "--no-progress"]
    code, stdout, _ = run(capsys, *argv)
    assert code == 0 and "mean quality" in stdout
    result = json.loads((tmp_path / "action_quality.json").read_text())
    assert result["mean_quality_b"] == 1.0 and result["b_better"] > 0
    states = (tmp_path / "action_quality_states.jsonl").read_bytes()
    assert run(capsys, *argv)[0] == 0
    assert json.loads((tmp_path / "action_quality.json").read_text()) == result
    assert (tmp_path / "action_quality_states.jsonl").read_bytes() == states
    code, _, stderr = run(capsys, *argv[:-4], "3", "--out", str(tmp_path), "--no-progress")
    assert code == 2 and "from another run" in stderr
    # The toy family ships no failure states: a clear error, not a traceback.
    code, _, stderr = run(capsys, "probe", "recovery", "--env", TOY_ID, "--out", str(tmp_path), "--no-progress")
    assert code == 2 and "no failure states" in stderr


def test_recovery_probe_resumes_from_its_episodes(tmp_path, capsys):
    argv = ["probe", "recovery", "--env", FC, "--kinds", "wrong_argument", "--attempts", "1", "--agent", "oracle",
            "--out", str(tmp_path), "--no-progress", "--quiet"]
    code, stdout, stderr = run(capsys, *argv)
    if code == 2 and "unknown failure kinds" in stderr:
        pytest.skip(f"the function-calling family has other failure kinds: {stderr}")
    assert code == 0, stderr
    episodes = (tmp_path / "recovery_episodes.jsonl").read_text().splitlines()
    assert episodes and all(json.loads(line)["agent"] == "oracle" for line in episodes)
    first = json.loads((tmp_path / "recovery.json").read_text())
    (tmp_path / "recovery_episodes.jsonl").write_text("\n".join(episodes[:-1]) + "\n")  # as if killed
    assert run(capsys, *argv)[0] == 0
    assert json.loads((tmp_path / "recovery.json").read_text()) == first


def test_recovery_probe_on_the_test_split_and_named_tasks(tmp_path, capsys):
    from budgetgym.core.tasks import load_failure_states, load_tasks

    tasks = load_tasks("function_calling")
    held_out = [r for r in load_failure_states("function_calling") if tasks.get(r["task_id"]).split == "test"]
    chosen = sorted({r["task_id"] for r in held_out})[:2]
    code, _, stderr = run(capsys, "probe", "recovery", "--env", FC, "--split", "test", "--tasks", ",".join(chosen),
                          "--attempts", "1", "--agent", "oracle", "--out", str(tmp_path), "--no-progress", "--quiet")
    assert code == 0, stderr
    result = json.loads((tmp_path / "recovery.json").read_text())
    assert result["split"] == "test" and result["tasks"] == chosen
    assert {e["task"] for e in result["episodes"]} == set(chosen)
    code, _, stderr = run(capsys, "probe", "recovery", "--env", FC, "--split", "nope", "--out", str(tmp_path),
                          "--no-progress")
    assert code == 2 and "unknown split 'nope'" in stderr


@pytest.mark.parametrize("argv,message", [
    (["eval", "--env", TOY_ID, "--agent", "genius"], "unknown agent 'genius'"),
    (["eval", "--env", TOY_ID, "--k", "1,8", "--n", "4"], "n must be >= max(K)"),
    (["eval", "--env", "budgetgym/FunctionCaling-v0"], "did you mean budgetgym/FunctionCalling-v0?"),
    (["eval", "--env", "FunctionCalling-v0"], "did you mean budgetgym/FunctionCalling-v0"),
    (["probe", "recovery", "--env", "budgetgym/FunctionCalling-v1"], "did you mean budgetgym/FunctionCalling-v0"),
])
def test_usage_errors_are_one_line_with_exit_code_2(tmp_path, capsys, argv, message):
    code, _, stderr = run(capsys, *argv, "--out", str(tmp_path / "o"), "--no-progress")
    assert code == 2 and stderr.startswith("budgetgym: error: ") and message in stderr, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr


def test_argparse_usage_errors_share_the_exit_code(capsys):
    for argv in (["eval", "--reveal", "sometimes"], ["eval", "--budgets", "0x"], ["report"], ["frobnicate"]):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    assert "0x" in capsys.readouterr().err


def test_out_must_be_a_folder(tmp_path, capsys):
    existing = tmp_path / "file.txt"
    existing.write_text("keep me\n")
    for out in (str(existing), "/dev/null", str(existing / "below")):
        code, _, stderr = run(capsys, "eval", "--env", TOY_ID, "--tasks", "toy-00", "--out", out, "--no-progress")
        assert code == 2 and "is a file" in stderr and "Traceback" not in stderr, stderr
    assert existing.read_text() == "keep me\n"


def test_report_of_folders_and_of_bad_files(tmp_path, capsys):
    code, _, stderr = run(capsys, "report", str(tmp_path))
    assert code == 2 and "without an episodes.jsonl" in stderr
    code, _, stderr = run(capsys, "report", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "missing.jsonl" in stderr
    bad = tmp_path / "episodes.jsonl"
    bad.write_text('{"env": "x"}\n[1, 2]\nnot json\n"text"\n')
    code, _, stderr = run(capsys, "report", str(tmp_path))
    assert code == 2 and stderr.count("\n") == 1
    for text in ("4 malformed lines", "line 1: lacks agent", "line 2: a JSON list, not an object",
                 "line 3: not JSON", "line 4: a JSON str, not an object"):
        assert text in stderr, stderr


def test_missing_extras_are_found_before_the_sweep_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now raises ImportError
    code, _, stderr = run(capsys, "eval", "--env", TOY_ID, "--agent", "openai:m", "--base-url",
                          "http://127.0.0.1:1/v1", "--out", str(tmp_path), "--no-progress")
    assert code == 1 and "pip install 'budgetgym[eval]'" in stderr and stderr.count("\n") == 1
    assert not (tmp_path / "episodes.jsonl").exists()  # nothing ran


def test_help_shows_defaults_and_every_option_has_a_help_line():
    parser = build_parser()
    top = parser.format_help()
    assert "``" not in top and ":func:" not in top and ":mod:" not in top

    def parsers(p):
        yield p
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    for sub in parsers(parser):
        for action in sub._actions:
            if action.option_strings and action.help != argparse.SUPPRESS:
                assert action.help, f"{sub.prog} {action.option_strings} has no help line"
        text = sub.format_help()
        assert "``" not in text, sub.prog
    evaluate = next(p for p in parsers(parser) if p.prog.endswith(" eval"))
    text = " ".join(evaluate.format_help().split())
    assert "(default: runs/eval)" in text and "(default: noisy-oracle)" in text and "(default: 0.7)" in text


def test_the_progress_bar_fits_80_columns():
    from rich.console import Console

    from budgetgym.eval.progress import progress_bar

    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=True, color_system=None)
    with progress_bar(1248, "FunctionCalling-v0 openai:SmolLM2-135M-Instruct", console=console) as advance:
        advance(312)
    lines = [line for line in buffer.getvalue().replace("\r", "\n").splitlines() if line.strip()]
    final = [line for line in lines if "312/1248" in line]
    assert final, buffer.getvalue()
    assert all(len(line) <= 80 for line in lines)
    assert "FunctionCalling-v0 open…" in final[-1] and "eta" in final[-1]


def test_served_models_default_to_threads_and_scripted_agents_to_serial():
    from budgetgym.eval.cli import _executor
    from budgetgym.eval.executors import SerialExecutor, ThreadExecutor

    args = build_parser().parse_args(["eval", "--agent", "openai:some-model"])
    assert isinstance(_executor(args, args.agent), ThreadExecutor)
    args = build_parser().parse_args(["eval"])
    assert isinstance(_executor(args, args.agent), SerialExecutor)
