"""sell_stock: sell shares; the proceeds go to the brokerage account."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import BROKERAGE, SHARES, SYMBOL, Bank, dollars
from budgetgym.core.tools import ToolError, object_schema


def sell_stock(bank: Bank, symbol: str, quantity: int) -> dict:
    price = bank.price(symbol)
    holdings = bank.state["holdings"]
    held = holdings.get(symbol, 0)
    if held < quantity:
        raise ToolError(f"You hold {held} shares of {symbol}, cannot sell {quantity}")
    if held == quantity:
        del holdings[symbol]
    else:
        holdings[symbol] = held - quantity
    bank.credit(BROKERAGE, price * quantity, f"Sell {quantity} {symbol}")
    return {"sold": quantity, "symbol": symbol, "proceeds": dollars(price * quantity), "shares_held": held - quantity}


TOOL = Tool(
    name="sell_stock",
    description="Sell shares at the current price; the proceeds go to the brokerage account's cash.",
    parameters=object_schema({"symbol": SYMBOL, "quantity": SHARES}, ["symbol", "quantity"]),
    function=sell_stock,
)
