"""add_payee: register someone bills can be paid to."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank
from budgetgym.core.tools import ToolError, object_schema

PAYEE = {"type": "string", "minLength": 1, "maxLength": 100}


def add_payee(bank: Bank, name: str, account_number: str) -> dict:
    if name in bank.state["payees"]:
        raise ToolError(f"Payee '{name}' already exists")
    bank.state["payees"][name] = {"account_number": account_number}
    return {"added": name, "account_number": account_number}


TOOL = Tool(
    name="add_payee",
    description="Register a new payee with their account number.",
    parameters=object_schema({"name": PAYEE, "account_number": {"type": "string", "pattern": "^[A-Z0-9-]{4,34}$"}},
                             ["name", "account_number"]),
    function=add_payee,
)
