"""pay_bill: schedule a payment to a payee; the money leaves the account at once."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import ACCOUNT, AMOUNT, Bank, dollars, to_cents
from budgetgym.envs.function_calling.banking.tools.add_payee import PAYEE
from budgetgym.core.tools import ToolError, object_schema


def pay_bill(bank: Bank, payee: str, from_account: str, amount: float) -> dict:
    if payee not in bank.state["payees"]:
        raise ToolError(f"No payee named '{payee}'; add it with add_payee first")
    cents = to_cents(amount)
    bank.debit(from_account, cents, f"Bill payment to {payee}")
    payment_id = bank.new_id("p")
    bank.state["payments"][payment_id] = {"id": payment_id, "payee": payee, "from_account": from_account,
                                          "amount": cents, "status": "pending"}
    return {"payment_id": payment_id, "payee": payee, "amount": dollars(cents), "status": "pending"}


TOOL = Tool(
    name="pay_bill",
    description="Pay a registered payee from an account. The payment is pending until sent and can be cancelled.",
    parameters=object_schema({"payee": PAYEE, "from_account": ACCOUNT, "amount": AMOUNT}, ["payee", "from_account", "amount"]),
    function=pay_bill,
)
