"""list_accounts: every account with its number and balance."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank, dollars
from budgetgym.core.tools import object_schema


def list_accounts(bank: Bank) -> dict:
    return {"accounts": [{"name": name, "number": a["number"], "balance": dollars(a["balance"])}
                         for name, a in bank.accounts.items()]}


TOOL = Tool(
    name="list_accounts",
    description="List the customer's accounts with their numbers and balances.",
    parameters=object_schema({}),
    function=list_accounts,
)
