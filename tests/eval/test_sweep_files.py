"""Sweep files cannot lose or double an episode: duplicates, a removed file, two sweeps at once, any
text, killed parents, malformed lines."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetgym.cli import main
from budgetgym.eval.agents import NoisyOracleAgent
from budgetgym.eval.episode_log import EpisodeLog, MalformedRecordsError, SweepLockedError, read_records
from budgetgym.eval.report import summarize
from budgetgym.eval.sweep import run_sweep
from eval_support import TESTS_DIR, TOY_ID, toy_tasks

SWEEP = dict(tasks=toy_tasks(6), k=(1, 2), budgets=("1x", 0.5, 1.0), reveal=("none", "remaining"), seed=4)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("reference") / "episodes.jsonl"
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=path, **SWEEP)
    return path, result


def test_resume_drops_duplicate_lines_and_says_how_many(reference, tmp_path):
    path, uninterrupted = reference
    lines = path.read_text().splitlines(keepends=True)
    out = tmp_path / "episodes.jsonl"
    out.write_text("".join(lines[:10] + [lines[3], lines[3], lines[7]] + lines[10:20]))
    result = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    assert result.duplicates_dropped == 3
    assert result.ran == uninterrupted.planned - 20
    assert out.read_bytes() == path.read_bytes()
    assert summarize(read_records(out), bootstrap=10) == summarize(uninterrupted.records, bootstrap=10)


def test_the_cli_reports_dropped_duplicates(tmp_path, capsys):
    argv = ["eval", "--env", TOY_ID, "--agent", "oracle", "--k", "1", "--out", str(tmp_path), "--no-progress",
            "--quiet"]
    assert main(argv) == 0
    episodes = tmp_path / "episodes.jsonl"
    first = episodes.read_text().splitlines(keepends=True)[0]
    with open(episodes, "a") as handle:
        handle.write(first)
    capsys.readouterr()
    assert main(argv) == 0
    assert "dropped 1 duplicate episode lines" in capsys.readouterr().err


class DeletingAgent(NoisyOracleAgent):
    """The same agent, which removes (or replaces) the episodes file at its n-th action."""

    def __init__(self, path: Path, after: int, replace: bool = False) -> None:
        super().__init__(0.3)
        self.path, self.left, self.replace = path, after, replace

    def act(self, observation, info):
        self.left -= 1
        if self.left == 0:
            self.path.unlink()
            if self.replace:
                self.path.write_text('{"stray": "file"}\n')
        return super().act(observation, info)


@pytest.mark.parametrize("replace", [False, True], ids=["removed", "replaced"])
def test_a_file_removed_mid_run_is_rewritten_from_what_the_run_holds(reference, tmp_path, replace):
    path, uninterrupted = reference
    out = tmp_path / "episodes.jsonl"
    out.write_text("".join(path.read_text().splitlines(keepends=True)[:15]))  # a resumed run
    result = run_sweep(TOY_ID, DeletingAgent(out, after=40, replace=replace), out=out, **SWEEP)
    assert result.ran == uninterrupted.planned - 15
    assert out.read_bytes() == path.read_bytes()


def test_a_second_sweep_into_the_same_file_is_refused(tmp_path, capsys):
    out = tmp_path / "episodes.jsonl"
    holder = EpisodeLog(out)
    holder.open()
    try:
        with pytest.raises(SweepLockedError, match=f"another sweep is writing {out}.*pid {os.getpid()}"):
            run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
        code = main(["eval", "--env", TOY_ID, "--out", str(tmp_path), "--no-progress", "--quiet"])
        assert code == 1 and "another sweep is writing" in capsys.readouterr().err
    finally:
        holder.close()
    assert not out.read_text()  # the refused sweeps wrote nothing
    assert run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP).ran > 0


HOLD_LOCK = """
import sys, time
from budgetgym.eval.episode_log import EpisodeLog
log = EpisodeLog(sys.argv[1])
log.open()
print("locked", flush=True)
time.sleep(600)
"""


def test_a_killed_sweeps_lock_is_not_stale(tmp_path):
    out = tmp_path / "episodes.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SweepLockedError, match=f"pid {holder.pid}"):
            run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    finally:
        holder.kill()
        holder.wait()
    assert (tmp_path / "episodes.jsonl.lock").exists()  # the file stays; the kernel dropped the lock
    assert run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP).ran > 0


class OddTextAgent(NoisyOracleAgent):
    """The same agent, whose first action of each episode is a message holding odd code points."""

    TEXT = "say(text='\ud800 \udfff \U0001f600 \x7f \u2028 \"')"

    def reset(self, env, observation, info, seed):
        super().reset(env, observation, info, seed)
        self.first = True

    def act(self, observation, info):
        if self.first:
            self.first = False
            return self.TEXT
        return super().act(observation, info)


def test_any_python_str_round_trips_through_the_file(tmp_path):
    out = tmp_path / "episodes.jsonl"
    result = run_sweep(TOY_ID, OddTextAgent(0.3), out=out, **SWEEP)
    assert all(r["actions"][0] == OddTextAgent.TEXT for r in result.records)
    assert read_records(out) == result.records
    out.read_bytes().decode("ascii")  # written with JSON's escapes: plain ASCII on disk


def test_every_malformed_line_is_reported_by_number_and_nothing_changes(reference, tmp_path):
    path, _ = reference
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[2])
    del record["env"]
    bad = lines[:2] + [json.dumps(record) + "\n", "[]\n", "\n", "{oops\n"] + lines[5:9] + ['{"budget": true}\n']
    out = tmp_path / "episodes.jsonl"
    out.write_text("".join(bad))
    before = out.read_bytes()
    with pytest.raises(MalformedRecordsError) as error:
        run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{out}: 4 malformed lines")
    for text in ("line 3: lacks env", "line 4: a JSON list, not an object", "line 6: not JSON", "line 11: lacks"):
        assert text in message, message
    assert out.read_bytes() == before
    # A cut last line (a kill mid-write) is not malformed: it is dropped on resume.
    out.write_text("".join(lines[:4]) + lines[4][:30])
    assert len(read_records(out)) == 4


def _children(pid: int) -> set[int]:
    """Every descendant of ``pid``, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


KILLED = """
from budgetgym.eval.executors import make_executor
from budgetgym.eval.sweep import run_sweep
from eval_support import SlowAgent  # registers the toy env too

run_sweep({toy!r}, SlowAgent(0.3), out={out!r}, executor=make_executor({executor!r}, 2), **{sweep!r})
"""


@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_workers_end_with_their_killed_parent(tmp_path, executor):
    if executor == "ray":
        pytest.importorskip("ray")
    out = tmp_path / "episodes.jsonl"
    sweep = {**SWEEP, "tasks": toy_tasks(20), "k": (1, 2, 4)}
    script = KILLED.format(toy=TOY_ID, out=str(out), executor=executor, sweep=sweep)
    path = [str(TESTS_DIR), str(TESTS_DIR / "eval"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    log = open(tmp_path / "stderr.txt", "w")  # noqa: SIM115  (closed below)
    process = subprocess.Popen([sys.executable, "-c", script], env=env, start_new_session=True, stdout=log,
                               stderr=log)
    descendants: set[int] = set()
    try:
        deadline = time.monotonic() + 300  # a guard against a hang, not a timing check
        while process.poll() is None and time.monotonic() < deadline:
            descendants |= _children(process.pid)
            if out.exists() and out.read_bytes().count(b"\n") >= 4:
                break
            time.sleep(0.05)
        descendants |= _children(process.pid)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        log.close()
    output = (tmp_path / "stderr.txt").read_text()
    assert process.returncode == -signal.SIGKILL, f"the sweep ended before it could be killed:\n{output}"
    # Ray's own log lines ("Started a local Ray instance", INFO ...) stay quiet unless asked for.
    assert "Started a local Ray instance" not in output and " INFO " not in output, output
    assert descendants, "the sweep started no worker"
    deadline = time.monotonic() + 120
    while any(_alive(pid) for pid in descendants) and time.monotonic() < deadline:
        time.sleep(0.1)
    orphans = [pid for pid in descendants if _alive(pid)]
    for pid in orphans:  # leave the machine clean even when the test fails
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not orphans, f"{len(orphans)} of {len(descendants)} workers outlived their parent"
    assert run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **sweep).ran > 0  # and the file resumes


def test_cells_into_one_file_see_every_edit_made_between_them(reference, tmp_path):
    # A process remembers the file it finalized (later cells do not decode it again): whatever is
    # done to the file between two sweeps must still be seen, even an edit that keeps its size.
    path, uninterrupted = reference
    out = tmp_path / "episodes.jsonl"
    first = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    assert first.ran == first.planned and out.read_bytes() == path.read_bytes()
    assert run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP).ran == 0  # nothing to do

    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5] + lines[6:]))  # one episode removed
    again = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    assert again.ran == 1 and out.read_bytes() == path.read_bytes()

    edited = json.loads(lines[2])
    old, new = f'"turns": {edited["turns"]}', f'"turns": {(edited["turns"] + 1) % 10}'
    out.write_text("".join(lines[:2] + [lines[2].replace(old, new)] + lines[3:]))  # the same size
    seen = run_sweep(TOY_ID, NoisyOracleAgent(0.3), out=out, **SWEEP)
    assert seen.ran == 0
    assert [r["turns"] for r in seen.records if r["task"] == edited["task"] and r["budget"] == edited["budget"]
            and r["reveal"] == edited["reveal"] and r["attempt"] == edited["attempt"]] == [(edited["turns"] + 1) % 10]
    assert lines[2].replace(old, new) in out.read_text()  # kept, not written over from memory

