"""EnvPool: batched steps over Ray actors equal the same envs in process; a killed actor is replaced
and its episode replayed (or reported), none lost, none doubled."""

from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

import budgetgym  # noqa: E402
from budgetgym.core import text_env  # noqa: E402
from budgetgym.serve.ray_pool import LOST, EnvPool  # noqa: E402

FC = "budgetgym/FunctionCalling-v0"
MAKE = {"budget_mix": [0.5, 1.0], "reveal": "remaining"}


@pytest.fixture(scope="module")
def cluster():
    started = not ray.is_initialized()
    yield
    if started and ray.is_initialized():
        ray.shutdown()


def kill(actor) -> None:
    """Kill ``actor`` and wait until it is gone: ``ray.kill`` lands asynchronously, so a step sent at once
    could still run on the old process and the loss the test is about would not happen."""
    from ray.exceptions import RayActorError

    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(actor.pid.remote(), timeout=10)
        except RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers after 60 s")


def oracle_actions(locals_):
    return [text_env(env).oracle_action() or "I cannot do more." for env in locals_]


def test_a_killed_actor_is_replaced_and_its_episode_resumed_or_reported(cluster):
    locals_ = [budgetgym.make(FC, **MAKE) for _ in range(2)]
    with EnvPool(FC, 2, make_kwargs=MAKE, cpus_per_env=0.1) as pool:
        seeds = [11, 12]
        observations, infos = pool.reset(seeds=seeds)
        assert (observations, infos) == tuple(map(list, zip(*[env.reset(seed=s) for env, s in zip(locals_, seeds)])))
        for turn in range(3):
            if turn == 1:
                old_pid = ray.get(pool.actor(1).pid.remote())
                kill(pool.actor(1))  # mid-episode: slot 1's process is gone
            actions = oracle_actions(locals_)
            expected = [env.step(a) for env, a in zip(locals_, actions)]
            got = pool.step(actions)
            assert list(zip(*got)) == expected  # the batch the trainer would have had without the loss
        assert ray.get(pool.actor(1).pid.remote()) != old_pid
        assert [(e["slot"], e["what"], e["seed"], e["turn"]) for e in pool.events] == [(1, "retried", 12, 1)]

        # a slot whose action is None is not stepped
        actions = oracle_actions(locals_)
        got = pool.step([actions[0], None])
        assert got[0][0] == locals_[0].step(actions[0])[0]
        assert (got[0][1], got[1][1], got[2][1], got[3][1], got[4][1]) == (None, 0.0, False, False, None)

        # reported instead: the episode ends, saying why, and the slot takes a new one
        pool.on_lost = "report"
        kill(pool.actor(0))
        observations, rewards, terminated, truncated, infos = pool.step(oracle_actions(locals_))
        assert truncated[0] and not terminated[0] and rewards[0] == 0.0 and "lost at turn 5" in infos[0][LOST]
        assert LOST not in infos[1]
        with pytest.raises(RuntimeError, match="reset_at"):
            pool.step(["hello", None])
        assert pool.reset_at(0, seed=3)[1]["turn"] == 0
        assert [e["what"] for e in pool.events] == ["retried", "reported"]
    for env in locals_:
        env.close()
