"""Fixtures of the integration tests (their helpers: ``integration_support``)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from integration_support import FAMILY_IDS, Probe, probe_task  # noqa: E402


@pytest.fixture(params=FAMILY_IDS, scope="module")
def probe(request) -> Probe:
    return probe_task(request.param)
