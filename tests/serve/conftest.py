"""Fixtures of the serving tests (their helpers: ``serve_support``); skipped without the serve extra."""

from __future__ import annotations

from typing import Iterator

import pytest

pytest.importorskip("openenv.core", reason="the serve extra (openenv-core) is not installed: pip install -e '.[serve]'")

from budgetgym.serve.server import ServeConfig, Server  # noqa: E402
from serve_support import FC, TOKEN, running  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """FunctionCalling-v0 behind a token, with the default limits."""
    with running(ServeConfig(FC, token=TOKEN, max_sessions=32)) as served:
        yield served
