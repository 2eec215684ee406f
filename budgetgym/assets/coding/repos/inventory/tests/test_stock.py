import pytest

from inventory import Inventory, OutOfStock


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("apple", 10, price=0.5)
    inventory.add("pear", 3, price=0.8)
    return inventory


def test_add_accumulates(inv):
    inv.add("apple", 5)
    assert inv.on_hand("apple") == 15
    assert inv.price("apple") == 0.5


def test_add_rejects_non_positive(inv):
    with pytest.raises(ValueError):
        inv.add("apple", 0)


def test_unknown_sku_is_zero(inv):
    assert inv.on_hand("kiwi") == 0
    assert inv.available("kiwi") == 0
    assert inv.price("kiwi") == 0


def test_reserve_reduces_available(inv):
    inv.reserve("apple", 4)
    assert inv.available("apple") == 6
    assert inv.on_hand("apple") == 10


def test_reserve_default_is_one(inv):
    inv.reserve("pear")
    assert inv.available("pear") == 2


def test_reserve_exactly_all(inv):
    inv.reserve("pear", 3)
    assert inv.available("pear") == 0


def test_reserve_too_many(inv):
    with pytest.raises(OutOfStock):
        inv.reserve("pear", 4)


def test_reserve_rejects_non_positive(inv):
    with pytest.raises(ValueError):
        inv.reserve("pear", 0)


def test_release(inv):
    inv.reserve("apple", 4)
    inv.release("apple", 3)
    assert inv.available("apple") == 9


def test_release_never_below_zero(inv):
    inv.reserve("apple", 2)
    inv.release("apple", 5)
    assert inv.available("apple") == 10


def test_ship(inv):
    inv.reserve("apple", 4)
    inv.ship("apple", 3)
    assert inv.on_hand("apple") == 7
    assert inv.available("apple") == 6


def test_ship_needs_reservation(inv):
    with pytest.raises(OutOfStock):
        inv.ship("apple", 1)


def test_remove(inv):
    inv.remove("apple", 4)
    assert inv.on_hand("apple") == 6


def test_remove_respects_reservations(inv):
    inv.reserve("pear", 2)
    with pytest.raises(OutOfStock):
        inv.remove("pear", 2)


def test_remove_all_forgets_sku(inv):
    inv.remove("pear", 3)
    assert inv.skus() == ["apple"]


def test_skus_sorted(inv):
    inv.add("banana", 1)
    assert inv.skus() == ["apple", "banana", "pear"]
