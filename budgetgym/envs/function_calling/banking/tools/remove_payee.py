"""remove_payee: unregister a payee that has no pending payment."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank
from budgetgym.envs.function_calling.banking.tools.add_payee import PAYEE
from budgetgym.core.tools import ToolError, object_schema


def remove_payee(bank: Bank, name: str) -> dict:
    if name not in bank.state["payees"]:
        raise ToolError(f"No payee named '{name}'")
    if any(p["payee"] == name and p["status"] == "pending" for p in bank.state["payments"].values()):
        raise ToolError(f"Payee '{name}' has a pending payment; cancel it first")
    del bank.state["payees"][name]
    return {"removed": name}


TOOL = Tool(
    name="remove_payee",
    description="Remove a payee (refused while a payment to them is pending).",
    parameters=object_schema({"name": PAYEE}, ["name"]),
    function=remove_payee,
)
