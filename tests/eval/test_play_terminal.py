"""``budgetgym play`` in a real terminal (a pty): what a person sees and types, Ctrl-C included."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time

import pytest

from eval_support import TESTS_DIR

FC = "budgetgym/FunctionCalling-v0"
RUN_WITH_TOY = (
    "import sys; sys.path.insert(0, {tests!r}); import gymnasium as gym, budgetgym; "
    "gym.register('budgetgym-test/Counter-v0', entry_point='toy_env:CounterEnv'); "
    "from budgetgym.cli import main; sys.exit(main(sys.argv[1:]))"
).format(tests=str(TESTS_DIR))


def _as_from_a_shell() -> None:
    """In the child: SIGINT handled by default and not blocked, as a shell starts a program. A child
    inherits both from the test process, where an earlier test's library may have left SIGINT
    ignored or blocked: the Ctrl-C below would then never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _controlling_terminal() -> None:
    """In the child, after setsid: make the pty on stdin its controlling terminal, so that Ctrl-C
    typed there becomes SIGINT, as in a person's terminal."""
    _as_from_a_shell()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``budgetgym ARGS`` on a pseudo-terminal: ``expect`` reads until a pattern shows up."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen([sys.executable, "-c", RUN_WITH_TOY, *args], stdin=slave, stdout=slave,
                                        stderr=slave, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                        start_new_session=True, preexec_fn=_controlling_terminal)
        os.close(slave)
        self.seen = ""

    def expect(self, pattern: str, guard: float = 120.0) -> str:
        """Everything printed up to and including ``pattern`` (a regex); the guard only stops a hang."""
        deadline = time.monotonic() + guard
        while True:
            match = re.search(pattern, self.seen)
            if match:
                before, self.seen = self.seen[:match.end()], self.seen[match.end():]
                return before
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} never showed; the terminal shows:\n{self.seen}")
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the program ended and closed the terminal
                    chunk = b""
                if not chunk and self.process.poll() is not None:
                    raise AssertionError(f"{pattern!r} never showed before the exit; the terminal shows:\n{self.seen}")
                self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        try:
            return self.process.wait(timeout=60)
        finally:
            os.close(self.master)


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        opened.append(Terminal(*args))
        return opened[-1]

    yield start
    for term in opened:
        if term.process.poll() is None:
            term.process.kill()
            term.process.wait()


def test_empty_lines_help_and_bare_tool_names_cost_no_turn(terminal):
    term = terminal("play", FC, "--task", "fc-curated-filesystem-project-cleanup", "--seed", "0")
    header = term.expect(r"\[turn 1/\d+\] > ")
    assert "Plain text (no tool call) is a message to the user" in header
    for _ in range(2):
        term.send("\n")
        term.expect(r"\[turn 1/\d+\] > ")
    term.send(":help\n")
    assert ":tools the tools" in term.expect(r"\[turn 1/\d+\] > ")
    term.send("list_directory\n")
    answer = term.expect(r"\[turn 1/\d+\] > ")
    assert "list_directory is a tool: call it as list_directory(" in answer and "no turn was spent" in answer
    term.send(":frob\n")
    assert "unknown command ':frob'" in term.expect(r"\[turn 1/\d+\] > ")
    term.send('{"name": "list_directory", "arguments": {}}\n')
    term.expect(r"\[turn 2/\d+\] > ")  # a real call costs its turn
    term.send(":quit\n")
    assert term.close() == 0


def test_ctrl_c_ends_play_without_a_traceback(terminal):
    term = terminal("play", "budgetgym-test/Counter-v0", "--task", "toy-04")
    term.expect(r"\[turn 1/\d+\] > ")
    term.send("\x03")  # what the terminal sends for Ctrl-C: SIGINT to the foreground program
    output = term.expect(r"\[interrupted\]")
    assert term.close() == 130
    assert "Traceback" not in output + term.seen


def test_bfcl_says_up_front_that_plain_text_ends_the_user_turn(terminal):
    pytest.importorskip("bfcl_eval", reason="the BFCL adapter needs bfcl-eval (installed by make setup)")
    term = terminal("play", "budgetgym/BFCL-v0", "--seed", "0")
    header = term.expect(r"\[turn 1/\d+\] > ")
    assert "Plain text (no tool call) is a message to the user: it ends your part of the current user turn" \
        in header
    term.send(":quit\n")
    assert term.close() == 0


def test_inject_errors_shows_the_task_and_the_turns_so_far(terminal):
    term = terminal("play", FC, "--inject-errors", "--seed", "3", "--reveal", "remaining")
    header = term.expect(r"\[turn \d+/\d+\] > ")
    assert "[Injected failure at turn" in header and "The episode so far:" in header
    shown = header.split("The episode so far:]", 1)[1]
    # The first observation (the assistant's instructions and the user's first request) comes first,
    # then each turn of the prefix as the env renders it, then the budget.
    assert "\n> " in shown and "[Turns remaining:" in shown
    assert shown.index("\n> ") > 10
    term.send(":quit\n")
    assert term.close() == 0


def test_unknown_env_ids_are_answered_with_close_matches(terminal):
    term = terminal("play", "budgetgym/FunctionCalling-v9")
    output = term.expect(r"did you mean budgetgym/FunctionCalling-v0\?")
    assert term.close() == 2 and "Traceback" not in output


def test_ctrl_c_in_a_probe_keeps_what_finished(tmp_path):
    from chat_server import API_KEY, MODEL, ChatServer, counter_solver

    pytest.importorskip("openai")
    import threading

    release = threading.Event()

    def stalled(request):  # the first request is answered; the second one waits
        if len(server.requests) > 1:
            release.wait(120)
        return counter_solver(request)

    with ChatServer(responder=stalled) as server:
        process = subprocess.Popen(
            [sys.executable, "-c", RUN_WITH_TOY, "probe", "action-quality", "--env", "budgetgym-test/Counter-v0",
             "--agent-a", f"openai:{MODEL}", "--agent-b", "oracle", "--reference", "oracle", "--rollouts", "1",
             "--base-url", server.url, "--api-key", API_KEY, "--tool-mode", "native", "--executor", "serial",
             "--out", str(tmp_path), "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_as_from_a_shell)
        try:
            deadline = time.monotonic() + 120
            while len(server.requests) < 2 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            # As a person does: Ctrl-C, and again if nothing happened. The client waits for the stalled
            # answer in a blocking call, and a SIGINT that lands just before the call blocks is only
            # raised when it returns (Python checks signals when a call is interrupted).
            for _ in range(12):
                process.send_signal(signal.SIGINT)
                try:
                    _, stderr = process.communicate(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                raise AssertionError("the probe did not end on Ctrl-C within a minute")
        finally:
            release.set()
            if process.poll() is None:
                process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted; what finished is kept" in stderr and "Traceback" not in stderr
    from budgetgym.eval.episode_log import read_records

    kept = read_records(tmp_path / "action_quality_states.jsonl", required=("state", "agent", "quality"))
    assert kept and kept[0]["state"] == "toy-00@0"  # the states before the interrupt, ready for a resume
