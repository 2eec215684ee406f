"""list_transactions: an account's latest transactions, newest first."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import ACCOUNT, Bank
from budgetgym.core.tools import object_schema


def list_transactions(bank: Bank, account: str, limit: int = 10) -> dict:
    bank.account(account)
    mine = [t for t in reversed(bank.state["transactions"]) if t["account"] == account]
    return {"account": account, "transactions": mine[:limit]}


TOOL = Tool(
    name="list_transactions",
    description="An account's latest transactions, newest first (amounts are negative for money out).",
    parameters=object_schema({"account": ACCOUNT, "limit": {"type": "integer", "minimum": 1, "maximum": 100}}, ["account"]),
    function=list_transactions,
)
