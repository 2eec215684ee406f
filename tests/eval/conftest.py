"""Fixtures of the evaluation tests."""

from __future__ import annotations

import pytest

from eval_support import failure_state


@pytest.fixture
def toy_failure_states() -> list[dict]:
    """Failure states for the toy env, whose family ships none. Each is a mistake at turn 1 on a task
    the oracle needs 2 turns for, so each has a clean twin (toy-04 and toy-09: target 6 in 8 turns;
    toy-03: target 5 in 7 turns)."""
    return [
        failure_state("fs-talk", "toy-04", "wasted-turn", ["say(text='hm')"]),
        failure_state("fs-small", "toy-09", "small-step", ["add(1)"]),
        failure_state("fs-talk-2", "toy-03", "wasted-turn", ["say(text='?')"]),
    ]
