"""``keep_bounded``: the core's one bounded cache (kept parses, page actions, checked snapshots)."""

from collections import OrderedDict

from budgetgym.core.caches import keep_bounded


def test_a_bounded_cache_forgets_its_oldest_entry_first_and_never_grows_past_its_limit():
    cache: OrderedDict[int, str] = OrderedDict()
    for key in range(10):
        assert keep_bounded(cache, key, str(key), 4) == str(key)
        assert len(cache) == min(key + 1, 4)
    assert list(cache.items()) == [(6, "6"), (7, "7"), (8, "8"), (9, "9")]
    keep_bounded(cache, 10, "10", 4)
    assert list(cache) == [7, 8, 9, 10]
