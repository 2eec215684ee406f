"""get_balance: one account's balance."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import ACCOUNT, Bank, dollars
from budgetgym.core.tools import object_schema


def get_balance(bank: Bank, account: str) -> dict:
    return {"account": account, "balance": dollars(bank.account(account)["balance"])}


TOOL = Tool(
    name="get_balance",
    description="The current balance of one account.",
    parameters=object_schema({"account": ACCOUNT}, ["account"]),
    function=get_balance,
)
