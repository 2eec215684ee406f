"""The budgetgym pytest plugin, enabled by installing budgetgym (the ``pytest11`` entry point).

Fixtures:

* ``budgetgym_env``: a factory, ``budgetgym_env(env_id, budget=..., reveal=..., budget_mix=...,
  inject_errors=..., **gym_make_kwargs)``, that makes a budgeted env (``budgetgym.make``) and closes
  every env it made when the test ends.
* ``assert_solves``: :func:`budgetgym.testing.assert_solves`: "this agent solves these tasks within
  T turns in at least x of K attempts", failing with the transcript of a failed episode.

Example::

    def test_my_agent(assert_solves):
        assert_solves(my_policy, "budgetgym/FunctionCalling-v0", tasks=3, turns=0.5, attempts=4, at_least=0.75)
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


@pytest.fixture
def budgetgym_env() -> Iterator[Callable[..., Any]]:
    import budgetgym

    made = []

    def make(env_id: str, **kwargs: Any) -> Any:
        env = budgetgym.make(env_id, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


@pytest.fixture
def assert_solves() -> Callable[..., Any]:
    from budgetgym.testing import assert_solves as check

    return check
