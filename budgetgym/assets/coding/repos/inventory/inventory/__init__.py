"""Stock keeping: items, reservations, reports."""

from inventory.stock import Inventory, OutOfStock
from inventory.reports import low_stock, reorder_quantity, stock_value

__all__ = ["Inventory", "OutOfStock", "low_stock", "reorder_quantity", "stock_value"]
