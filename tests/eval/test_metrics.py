import itertools
import math

import numpy as np
import pytest

from budgetgym.eval.metrics import (bootstrap_ci, difference_ci, difference_grid, mean_ci, mean_turns_to_success,
                                    pass_at_k, pass_grid, solved_within, wilson_interval)


def brute_force_pass_at_k(n: int, c: int, k: int) -> float:
    """The share of all k-subsets of n attempts (the first c successful) that hold a success."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(attempts[i] for i in subset) for subset in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 8))
def test_estimator_equals_enumeration(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_force_pass_at_k(n, c, k), abs=1e-12), (n, c, k)


def test_edge_cases():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 0, 10) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0
    assert pass_at_k(10, 10, 10) == 1.0
    assert pass_at_k(10, 1, 10) == 1.0  # k = n with one success: the success is always drawn
    assert pass_at_k(4, 1, 1) == 0.25
    with pytest.raises(ValueError, match="at least 5 attempts"):
        pass_at_k(4, 2, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError):
        pass_at_k(4, -1, 1)
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 0)
    with pytest.raises(TypeError):
        pass_at_k(4.0, 1, 1)  # type: ignore[arg-type]


def test_large_n_is_exact():
    # 1 - C(n-c,k)/C(n,k) with huge binomials: no overflow, no cancellation.
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001)
    assert pass_at_k(1000, 999, 2) == 1.0
    assert pass_at_k(200, 100, 100) == pytest.approx(1 - math.comb(100, 100) / math.comb(200, 100))


def _record(task, attempt, success, turns, full_budget=8, budget=None):
    return {"env": "e", "agent": "a", "task": task, "reveal": "none", "budget": budget, "attempt": attempt,
            "success": success, "turns": turns, "full_budget": full_budget}


def test_solved_within_reads_the_turn_of_success():
    record = _record("t", 0, True, 3, full_budget=8)
    assert solved_within(record, 3) and solved_within(record, 0.5)  # 0.5 * 8 = 4 turns
    assert not solved_within(record, 2) and not solved_within(record, 0.25)  # 2 turns
    assert not solved_within(_record("t", 0, False, 2), 8)


def test_pass_grid_by_hand():
    # Task x: successes at turns 2 and 6 of 4 attempts; task y: none of 4.
    records = [_record("x", 0, True, 2), _record("x", 1, True, 6), _record("x", 2, False, 8),
               _record("x", 3, False, 8)] + [_record("y", i, False, 8) for i in range(4)]
    cells = {(c.budget, c.k): c for c in pass_grid(records, [2, 8], [1, 2], bootstrap=200)}
    assert cells[(2, 1)].value == pytest.approx((1 / 4 + 0) / 2)
    assert cells[(8, 1)].value == pytest.approx((2 / 4 + 0) / 2)
    assert cells[(8, 2)].value == pytest.approx((1 - math.comb(2, 2) / math.comb(4, 2)) / 2)
    assert cells[(2, 1)].mean_turns_to_success == 2.0 and cells[(8, 1)].mean_turns_to_success == 4.0
    assert cells[(8, 2)].tasks == 2 and cells[(8, 2)].attempts == 4
    for cell in cells.values():
        assert cell.ci_low <= cell.value <= cell.ci_high
    assert mean_turns_to_success(records, 1) is None


def test_capped_records_serve_only_their_budget():
    records = [_record("x", 0, True, 2, budget=2), _record("x", 0, False, 4, budget=4)]
    assert [c.value for c in pass_grid(records, [2, 4], [1], bootstrap=10)] == [1.0, 0.0]


def test_difference_grid_is_paired_over_common_tasks():
    a = [_record("x", i, i < 1, 2) for i in range(2)] + [_record("z", i, True, 1) for i in range(2)]
    b = [_record("x", i, True, 2) for i in range(2)] + [_record("y", i, True, 1) for i in range(2)]
    (cell,) = difference_grid(a, b, [8], [1], bootstrap=100)
    assert cell.tasks == 1 and cell.value == pytest.approx(0.5)


def test_bootstrap_ci():
    assert bootstrap_ci(np.full(5, 0.3)) == pytest.approx((0.3, 0.3))
    values = np.linspace(0, 1, 50)
    low, high = bootstrap_ci(values, bootstrap=2000, seed=1)
    assert low < values.mean() < high and 0 < high - low < 0.5
    assert bootstrap_ci(values, seed=3) == bootstrap_ci(values, seed=3)
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([]))


def test_an_attempt_run_both_ways_counts_once():
    full = [_record("x", i, i == 0, 3) for i in range(4)]
    capped = [_record("x", i, i == 0, 3, budget=4) for i in range(4)]
    alone = [c.value for c in pass_grid(full, [4], [1, 2, 4], bootstrap=10)]
    assert [c.value for c in pass_grid(full + capped, [4], [1, 2, 4], bootstrap=10)] == alone
    assert pass_grid(full + capped, [4], [4], bootstrap=10)[0].attempts == 4


def test_wilson_interval_by_hand_and_at_the_edges():
    # Wilson (1927), 95%: 0 of 248 -> [0, z^2 / (n + z^2)]; 248 of 248 -> its mirror image.
    z2 = 1.959963984540054 ** 2
    assert wilson_interval(0.0, 248) == pytest.approx((0.0, z2 / (248 + z2)))
    assert wilson_interval(1.0, 248) == pytest.approx((248 / (248 + z2), 1.0))
    low, high = wilson_interval(0.5, 100)
    assert (low, high) == pytest.approx((0.4038, 0.5962), abs=1e-4)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_intervals_stay_honest_at_zero_and_one(value):
    # 248 tasks all at 0 (or all at 1): the bootstrap alone says [0.00, 0.00]; the interval must not.
    records = [_record(f"t{i}", a, bool(value), 2) for i in range(248) for a in range(2)]
    (cell,) = pass_grid(records, [8], [1], bootstrap=200)
    assert cell.value == value
    assert cell.ci_high - cell.ci_low > 0.01 and cell.ci_low <= value <= cell.ci_high
    assert 0.0 <= cell.ci_low and cell.ci_high <= 1.0
    (difference,) = difference_grid(records, records, [8], [1], bootstrap=200)
    assert difference.value == 0 and difference.ci_low < -0.01 and difference.ci_high > 0.01


def test_intervals_contain_the_bootstrap_and_widen_small_samples():
    rng = np.random.default_rng(0)
    per_task = rng.uniform(0, 1, size=40)
    low, high = mean_ci(per_task, bootstrap=500, seed=2)
    boot_low, boot_high = bootstrap_ci(per_task, bootstrap=500, seed=2)
    assert low <= boot_low and high >= boot_high
    # Three tasks all solved: an interval from three tasks cannot claim much.
    assert mean_ci(np.ones(3))[0] < 0.5
    a, b = rng.uniform(0, 1, size=30), rng.uniform(0, 1, size=30)
    low, high = difference_ci(a, b, bootstrap=500, seed=2)
    boot_low, boot_high = bootstrap_ci(b - a, bootstrap=500, seed=2)
    assert low <= boot_low and high >= boot_high and -1 <= low < high <= 1


def test_budgets_in_solution_lengths_and_infeasible_cells():
    record = {**_record("t", 0, True, 3, full_budget=12), "oracle_turns": 3}
    assert solved_within(record, "1x") and not solved_within(record, 0.15)  # 0.15 * 12 -> 2 turns
    assert solved_within(record, 0.25) and not solved_within({**record, "turns": 4}, "1x")
    assert solved_within({**record, "turns": 4}, "1.5x")  # ceil(4.5) = 5 turns
    records = [{**_record(f"t{i}", 0, True, 3, full_budget=12), "oracle_turns": 3} for i in range(4)]
    one_turn, one_x = pass_grid(records, [2, "1x"], [1], bootstrap=10)
    assert one_turn.infeasible_tasks == 4 and one_turn.value == 0
    assert one_x.infeasible_tasks == 0 and one_x.value == 1
    with pytest.raises(ValueError, match="shortest solution in turns is not known"):
        solved_within(_record("t", 0, True, 3), "1x")
