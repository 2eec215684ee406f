"""list_payments: bill payments, pending and cancelled."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank, dollars
from budgetgym.core.tools import object_schema


def list_payments(bank: Bank, status: str | None = None) -> dict:
    return {"payments": [{**p, "amount": dollars(p["amount"])} for p in bank.state["payments"].values()
                         if status is None or p["status"] == status]}


TOOL = Tool(
    name="list_payments",
    description="List bill payments, optionally only pending or only cancelled ones.",
    parameters=object_schema({"status": {"type": "string", "enum": ["pending", "cancelled"]}}),
    function=list_payments,
)
