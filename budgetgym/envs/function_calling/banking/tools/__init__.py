"""The bank's tools, one module each, in the order the agent sees them."""

from budgetgym.envs.function_calling.banking.tools import (
    add_payee, buy_stock, cancel_payment, get_balance, get_portfolio, get_quote, list_accounts, list_payees,
    list_payments, list_transactions, pay_bill, remove_payee, sell_stock, transfer,
)
from budgetgym.core.tools import tool_map

TOOLS = tool_map(
    list_accounts.TOOL, get_balance.TOOL, list_transactions.TOOL, transfer.TOOL, list_payees.TOOL, add_payee.TOOL,
    remove_payee.TOOL, pay_bill.TOOL, list_payments.TOOL, cancel_payment.TOOL, get_quote.TOOL, get_portfolio.TOOL,
    buy_stock.TOOL, sell_stock.TOOL,
)
#: The tools that only read (the exploit probe's read-only sweep calls them).
READ_ONLY = frozenset({"list_accounts", "get_balance", "list_transactions", "list_payees", "list_payments", "get_quote",
                       "get_portfolio"})
