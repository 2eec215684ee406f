import csv
import json
import subprocess
import sys

import pytest

from budgetgym.eval.agents import NoisyOracleAgent, RandomAgent
from budgetgym.eval.report import compare, infer_grid, summarize, write_comparison, write_report
from budgetgym.eval.sweep import run_sweep
from eval_support import TOY_ID, toy_tasks

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def records():
    return run_sweep(TOY_ID, NoisyOracleAgent(0.5), tasks=toy_tasks(8), k=(1, 2, 4), budgets=(0.25, 0.5, 1.0),
                     reveal=("none", "remaining"), seed=1).records


def assert_real_png(path, min_size=(200, 200)):
    image = pytest.importorskip("matplotlib.image")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    pixels = image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] >= min_size[1] and pixels.shape[1] >= min_size[0]
    assert pixels.std() > 0.01  # not a blank canvas


def test_summary_json_csv_and_plots(records, tmp_path):
    summary = summarize(records, bootstrap=200)
    assert summary["budgets"] == [0.25, 0.5, 1.0] and summary["ks"] == [1, 2, 4]
    assert [(g["reveal"], g["shortcut"]) for g in summary["groups"]] == [("none", True), ("remaining", False)]
    assert summary["shortcut"]["episodes_saved"] == 8 * 4 * 2
    assert summary["reveal_comparison"]["groups"][0]["reveal"] == "remaining - none"
    files = write_report(summary, tmp_path)
    assert json.loads(files["json"].read_text()) == json.loads(json.dumps(summary))
    with open(files["csv"], newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 3 * 3
    cell = summary["groups"][0]["cells"][0]
    assert float(rows[0]["pass"]) == pytest.approx(cell["pass"]) and rows[0]["reveal"] == "none"
    for name in ("heatmap", "curves", "reveal_difference"):
        assert_real_png(files[name])


def test_grid_is_inferred_from_the_records(records):
    budgets, ks = infer_grid([r for r in records if r["reveal"] == "remaining"])
    assert budgets == [0.25, 0.5, 1.0] and ks == [1, 2, 4]


def test_comparison_of_two_agents(records, tmp_path):
    other = run_sweep(TOY_ID, RandomAgent(), tasks=toy_tasks(8), k=(1, 2, 4), budgets=(0.25, 0.5, 1.0),
                      reveal=("none", "remaining"), seed=1).records
    comparison = compare(records, other, bootstrap=200)
    assert (comparison["a"], comparison["b"]) == ("noisy-oracle(p=0.5)", "random")
    assert [g["reveal"] for g in comparison["groups"]] == ["none", "remaining"]
    mine = {(c["budget"], c["k"]): c["pass"] for c in summarize(records, bootstrap=10)["groups"][0]["cells"]}
    theirs = {(c["budget"], c["k"]): c["pass"] for c in summarize(other, bootstrap=10)["groups"][0]["cells"]}
    for cell in comparison["groups"][0]["cells"]:
        key = (cell["budget"], cell["k"])
        assert cell["pass"] == pytest.approx(theirs[key] - mine[key])
    assert any(c["pass"] < 0 for c in comparison["groups"][0]["cells"])  # random is worse somewhere
    files = write_comparison(comparison, tmp_path)
    assert json.loads(files["json"].read_text())["b"] == "random"
    assert_real_png(files["heatmap"])


def test_nothing_to_report():
    with pytest.raises(ValueError, match="no episode records"):
        summarize([])


def test_missing_extra_names_the_install_command(tmp_path, records):
    path = tmp_path / "episodes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # as if matplotlib were not installed
        "import budgetgym.eval\n"
        "from budgetgym.eval.episode_log import read_records\n"
        "from budgetgym.eval.report import summarize, write_report\n"
        f"write_report(summarize(read_records({str(path)!r}), bootstrap=10), {str(tmp_path)!r})\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "MissingExtra" in result.stderr and "pip install 'budgetgym[eval]'" in result.stderr


def test_the_package_imports_without_the_extras():
    code = ("import sys\n"
            "for name in ('openai', 'ray', 'matplotlib', 'rich'): sys.modules[name] = None\n"
            "import budgetgym.eval, budgetgym.eval.cli\n"
            "from budgetgym.eval import OracleAgent, run_sweep\n"
            "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr
