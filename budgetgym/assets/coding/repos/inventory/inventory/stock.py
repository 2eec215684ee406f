"""Items on hand and reserved."""


class OutOfStock(Exception):
    """Not enough units available."""


class Inventory:
    def __init__(self):
        self._on_hand = {}
        self._reserved = {}
        self._prices = {}

    def add(self, sku, quantity, price=None):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._on_hand[sku] = self._on_hand.get(sku, 0) + quantity
        self._reserved.setdefault(sku, 0)
        if price is not None:
            self._prices[sku] = price

    def on_hand(self, sku):
        return self._on_hand.get(sku, 0)

    def available(self, sku):
        """Units on hand that are not reserved."""
        return self.on_hand(sku) - self._reserved.get(sku, 0)

    def price(self, sku):
        return self._prices.get(sku, 0)

    def reserve(self, sku, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        if self.available(sku) < quantity:
            raise OutOfStock(f"only {self.available(sku)} of {sku} available")
        self._reserved[sku] = self._reserved.get(sku, 0) + quantity

    def release(self, sku, quantity=1):
        """Give back reserved units (never more than are reserved)."""
        reserved = self._reserved.get(sku, 0)
        self._reserved[sku] = max(0, reserved - quantity)

    def ship(self, sku, quantity=1):
        """Ship reserved units: they leave both the reservation and the stock."""
        if self._reserved.get(sku, 0) < quantity:
            raise OutOfStock(f"only {self._reserved.get(sku, 0)} of {sku} reserved")
        self._reserved[sku] -= quantity
        self._on_hand[sku] -= quantity

    def remove(self, sku, quantity):
        """Write off units that are not reserved (damage, loss)."""
        if quantity > self.available(sku):
            raise OutOfStock(f"cannot remove {quantity} of {sku}")
        self._on_hand[sku] -= quantity
        if self._on_hand[sku] == 0 and self._reserved.get(sku, 0) == 0:
            del self._on_hand[sku]
            self._reserved.pop(sku, None)

    def skus(self):
        return sorted(self._on_hand)
