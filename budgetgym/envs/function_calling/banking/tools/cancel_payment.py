"""cancel_payment: cancel a pending bill payment and refund it."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank, dollars
from budgetgym.core.tools import ToolError, object_schema


def cancel_payment(bank: Bank, payment_id: str) -> dict:
    payment = bank.state["payments"].get(payment_id)
    if payment is None:
        raise ToolError(f"No payment with id '{payment_id}'")
    if payment["status"] != "pending":
        raise ToolError(f"Payment {payment_id} is {payment['status']}, not pending")
    payment["status"] = "cancelled"
    bank.credit(payment["from_account"], payment["amount"], f"Refund of payment to {payment['payee']}")
    return {"cancelled": payment_id, "refunded": dollars(payment["amount"]), "to": payment["from_account"]}


TOOL = Tool(
    name="cancel_payment",
    description="Cancel a pending bill payment; the amount goes back to the account it came from.",
    parameters=object_schema({"payment_id": {"type": "string", "pattern": "^p[0-9]+$"}}, ["payment_id"]),
    function=cancel_payment,
)
