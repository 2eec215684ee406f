"""list_payees: the registered bill payees."""

from budgetgym.core import Tool
from budgetgym.envs.function_calling.banking.backend import Bank
from budgetgym.core.tools import object_schema


def list_payees(bank: Bank) -> dict:
    return {"payees": [{"name": name, **details} for name, details in sorted(bank.state["payees"].items())]}


TOOL = Tool(
    name="list_payees",
    description="List the payees bills can be paid to.",
    parameters=object_schema({}),
    function=list_payees,
)
