"""Reports over an inventory."""

import math


def low_stock(inventory, threshold=5):
    """SKUs whose available units are at or below the threshold, sorted."""
    return [sku for sku in inventory.skus() if inventory.available(sku) <= threshold]


def stock_value(inventory):
    """Value of all units on hand at their prices, rounded to cents."""
    return round(sum(inventory.on_hand(sku) * inventory.price(sku) for sku in inventory.skus()), 2)


def reorder_quantity(inventory, sku, target, pack_size=1):
    """Units to order so that available stock reaches target, in whole packs."""
    if pack_size < 1:
        raise ValueError("pack_size must be at least 1")
    missing = target - inventory.available(sku)
    if missing <= 0:
        return 0
    return math.ceil(missing / pack_size) * pack_size
