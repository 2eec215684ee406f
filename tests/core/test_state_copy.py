"""``copy_state``: a deep copy of a JSON state (marshal, with pickle for what marshal refuses) that
gives what pickle's round trip gave: equal values, the same dict orders, tuples, floats to the bit,
objects shared where the original shares them, and nothing shared with the original."""

from __future__ import annotations

import collections
import pickle

from budgetgym.core import copy_state
from budgetgym.envs.function_calling import FunctionCallingEnv


def _structure(value):
    """``value`` with every container's exact type and every dict's order spelled out."""
    if isinstance(value, dict):
        return (type(value), [(key, _structure(item)) for key, item in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value), [_structure(item) for item in value])
    return (type(value), repr(value))


def _containers(value, found):
    if isinstance(value, (dict, list, tuple)):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, found)
    return found


def test_a_copy_is_what_pickles_round_trip_gives_and_shares_nothing_with_the_original():
    shared = {"z": 1, "a": [0.1, -0.0, 1e300, True, None, 2**70]}
    state = {"b": shared, "a": (shared, ["é\ud800", ()]), "tuple": (1, (2, [3]))}
    copied = copy_state(state)
    assert _structure(copied) == _structure(pickle.loads(pickle.dumps(state))) == _structure(state)
    assert copied["b"] is copied["a"][0]  # shared in the original: shared in the copy
    originals = {id(c) for c in _containers(state, []) if not isinstance(c, tuple) or c}
    assert not originals & {id(c) for c in _containers(copied, [])}


def test_what_marshal_refuses_is_copied_by_pickle():
    state = {"ordered": collections.OrderedDict(b=1, a=2), "counter": collections.Counter("aab")}
    copied = copy_state(state)
    assert type(copied["ordered"]) is collections.OrderedDict and list(copied["ordered"]) == ["b", "a"]
    assert copied == state and copied["counter"] is not state["counter"]


def test_every_state_of_oracle_episodes_copies_as_pickle_copied_it():
    env = FunctionCallingEnv()
    for index in range(0, len(env.tasks), 7):
        env.reset(options={"task_index": index})
        while (action := env.oracle_action()) is not None:
            env.step(action)
            state = env.state_view()
            assert _structure(copy_state(state)) == _structure(pickle.loads(pickle.dumps(state)))
