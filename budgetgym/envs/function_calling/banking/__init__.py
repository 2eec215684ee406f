"""The banking domain: accounts, transfers, payees, bill payments and a brokerage account."""

from budgetgym.envs.function_calling.banking.backend import Bank, project
from budgetgym.envs.function_calling.banking.generator import CUSTOMER, generate
from budgetgym.envs.function_calling.banking.mistakes import MISTAKES
from budgetgym.envs.function_calling.banking.planner import plan
from budgetgym.envs.function_calling.banking.tools import TOOLS
from budgetgym.envs.function_calling.domain import Domain

DOMAIN = Domain(
    name="banking",
    intro=(
        f"You are the banking assistant of {CUSTOMER}, who has checking, savings and brokerage accounts. "
        "You act only through the tools. Amounts are in dollars with two decimals."
    ),
    backend=Bank,
    tools=TOOLS,
    project=project,
    plan=plan,
    generate=generate,
    mistakes=MISTAKES,
)
