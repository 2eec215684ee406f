"""get_quote: a stock's current price."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import SYMBOL, Bank, dollars
from budgetgym.core.tools import object_schema


def get_quote(bank: Bank, symbol: str) -> dict:
    return {"symbol": symbol, "price": dollars(bank.price(symbol))}


TOOL = Tool(
    name="get_quote",
    description="The current price of one share of a stock.",
    parameters=object_schema({"symbol": SYMBOL}, ["symbol"]),
    function=get_quote,
)
