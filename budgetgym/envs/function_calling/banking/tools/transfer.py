"""transfer: move money between two of the customer's own accounts."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import ACCOUNT, AMOUNT, Bank, dollars, to_cents
from budgetgym.core.tools import ToolError, object_schema


def transfer(bank: Bank, from_account: str, to_account: str, amount: float) -> dict:
    if from_account == to_account:
        raise ToolError("The two accounts of a transfer must differ")
    cents = to_cents(amount)
    bank.account(to_account)
    bank.debit(from_account, cents, f"Transfer to {to_account}")
    bank.credit(to_account, cents, f"Transfer from {from_account}")
    return {"transferred": dollars(cents), "from": from_account, "to": to_account,
            "from_balance": dollars(bank.accounts[from_account]["balance"]),
            "to_balance": dollars(bank.accounts[to_account]["balance"])}


TOOL = Tool(
    name="transfer",
    description="Move money between two of the customer's own accounts. Refused if the source lacks the funds.",
    parameters=object_schema({"from_account": ACCOUNT, "to_account": ACCOUNT, "amount": AMOUNT},
                             ["from_account", "to_account", "amount"]),
    function=transfer,
)
