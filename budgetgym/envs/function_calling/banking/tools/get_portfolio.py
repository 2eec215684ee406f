"""get_portfolio: the shares held in the brokerage account, valued at current prices."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import BROKERAGE, Bank, dollars
from budgetgym.core.tools import object_schema


def get_portfolio(bank: Bank) -> dict:
    positions = [{"symbol": s, "shares": n, "price": dollars(bank.price(s)), "value": dollars(n * bank.price(s))}
                 for s, n in sorted(bank.state["holdings"].items())]
    return {"positions": positions, "cash": dollars(bank.account(BROKERAGE)["balance"])}


TOOL = Tool(
    name="get_portfolio",
    description="The shares held in the brokerage account, with prices and values, and its cash balance.",
    parameters=object_schema({}),
    function=get_portfolio,
)
