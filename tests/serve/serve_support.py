"""What the serving tests share: the served id, the token, and servers in this process (a thread, on a
free loopback port) or as a ``budgetgym serve`` child process where a test kills it. (A module of its
own name: ``from conftest import`` finds another directory's conftest when both are collected.)"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from typing import Iterator

from budgetgym.serve.server import ServeConfig, Server

FC = "budgetgym/FunctionCalling-v0"
TOKEN = "test-token-0123456789abcdef"


@contextlib.contextmanager
def running(config: ServeConfig) -> Iterator[Server]:
    server = Server(config, "127.0.0.1", 0)
    server.serve_in_background()
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def child_server(*args: str, env: dict | None = None) -> Iterator[tuple[subprocess.Popen, str]]:
    """``budgetgym serve ARGS --port PORT`` in a child process, on a port free a moment before; yields it
    and its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "budgetgym.cli", "serve", *args, "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, **(env or {})})
    try:
        deadline, seen = time.monotonic() + 120, ""
        while time.monotonic() < deadline and process.poll() is None:
            if select.select([process.stdout], [], [], 1.0)[0]:
                line = process.stdout.readline()
                seen += line
                match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
                if match:
                    yield process, match.group(1)
                    break
        else:
            raise AssertionError(f"the server did not start: {seen}{process.stdout.read() if process.poll() is not None else ''}")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
