import pytest

from inventory import Inventory, low_stock, reorder_quantity, stock_value


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("apple", 10, price=0.5)
    inventory.add("pear", 5, price=0.8)
    inventory.add("plum", 2, price=1.25)
    return inventory


def test_low_stock_default_threshold(inv):
    assert low_stock(inv) == ["pear", "plum"]


def test_low_stock_counts_reservations(inv):
    inv.reserve("apple", 6)
    assert low_stock(inv, threshold=4) == ["apple", "plum"]


def test_stock_value(inv):
    assert stock_value(inv) == 11.5


def test_stock_value_empty():
    assert stock_value(Inventory()) == 0


def test_reorder_quantity(inv):
    assert reorder_quantity(inv, "plum", 10) == 8


def test_reorder_quantity_in_packs(inv):
    assert reorder_quantity(inv, "plum", 10, pack_size=6) == 12
    assert reorder_quantity(inv, "plum", 8, pack_size=6) == 6


def test_reorder_nothing_when_enough(inv):
    assert reorder_quantity(inv, "apple", 10) == 0
    assert reorder_quantity(inv, "apple", 4) == 0


def test_reorder_bad_pack(inv):
    with pytest.raises(ValueError):
        reorder_quantity(inv, "plum", 10, pack_size=0)
