"""buy_stock: buy shares with the brokerage account's cash."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import BROKERAGE, SHARES, SYMBOL, Bank, dollars
from budgetgym.core.tools import object_schema


def buy_stock(bank: Bank, symbol: str, quantity: int) -> dict:
    cost = bank.price(symbol) * quantity
    bank.debit(BROKERAGE, cost, f"Buy {quantity} {symbol}")
    holdings = bank.state["holdings"]
    holdings[symbol] = holdings.get(symbol, 0) + quantity
    return {"bought": quantity, "symbol": symbol, "cost": dollars(cost), "shares_held": holdings[symbol]}


TOOL = Tool(
    name="buy_stock",
    description="Buy whole shares at the current price, paid from the brokerage account's cash.",
    parameters=object_schema({"symbol": SYMBOL, "quantity": SHARES}, ["symbol", "quantity"]),
    function=buy_stock,
)
