import pytest

from splitbill import apply_discount, settle, split_evenly, split_weighted, with_tip


def test_split_evenly():
    assert split_evenly(1000, 3) == [334, 333, 333]
    assert split_evenly(1001, 3) == [334, 334, 333]
    assert split_evenly(900, 3) == [300, 300, 300]
    assert split_evenly(5, 1) == [5]


def test_split_evenly_needs_people():
    with pytest.raises(ValueError):
        split_evenly(100, 0)


def test_split_weighted():
    assert split_weighted(1000, [1, 1, 2]) == [250, 250, 500]
    assert split_weighted(100, [1, 1, 1]) == [34, 33, 33]
    assert split_weighted(1000, [3, 0, 1]) == [750, 0, 250]


def test_split_weighted_largest_remainder():
    assert split_weighted(10, [1, 2]) == [3, 7]
    assert sum(split_weighted(997, [5, 3, 9, 1])) == 997


def test_split_weighted_rejects():
    for weights in ([], [0, 0], [1, -1]):
        with pytest.raises(ValueError):
            split_weighted(100, weights)


def test_with_tip():
    assert with_tip(1000) == 1150
    assert with_tip(1000, 20) == 1200
    assert with_tip(333, 10) == 366
    assert with_tip(335, 10) == 369


def test_apply_discount():
    assert apply_discount(1000, 10) == 900
    assert apply_discount(1000) == 1000
    assert apply_discount(999, 50) == 499


def test_apply_discount_minimum():
    assert apply_discount(1000, 10, minimum_total=2000) == 1000
    assert apply_discount(2000, 10, minimum_total=2000) == 1800


def test_apply_discount_range():
    with pytest.raises(ValueError):
        apply_discount(1000, 101)
    with pytest.raises(ValueError):
        apply_discount(1000, -1)
    assert apply_discount(1000, 100) == 0


def test_settle():
    assert settle({"ann": 3000, "bob": 0, "cy": 0}) == [("bob", "ann", 1000), ("cy", "ann", 1000)]


def test_settle_two_creditors():
    transfers = settle({"ann": 2000, "bob": 1000, "cy": 0})
    assert transfers == [("cy", "ann", 1000)]
    transfers = settle({"ann": 1500, "bob": 1500, "cy": 0})
    assert transfers == [("cy", "ann", 500), ("cy", "bob", 500)]


def test_settle_even():
    assert settle({"ann": 500, "bob": 500}) == []
