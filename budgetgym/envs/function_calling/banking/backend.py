"""The bank: the customer's accounts, payees, bill payments and a brokerage account.

State: ``{"customer", "accounts": {name: {"number", "balance"}}, "payees": {name: {"account_number"}},
"payments": {id: {"id", "payee", "from_account", "amount", "status"}}, "prices": {symbol: price},
"holdings": {symbol: shares}, "transactions": [...], "next_id": int}``. Money is kept in integer
cents (tools speak in currency units with two decimals). A bill payment stays ``pending`` (and can
be cancelled, refunding it) until the bank sends it; stocks trade at the quoted price, no fees.
"""

from __future__ import annotations

from typing import Any, Mapping

from budgetgym.core.tools import ToolError

ACCOUNT = {"type": "string", "minLength": 1, "maxLength": 50, "description": "An account name: checking, savings or brokerage."}
AMOUNT = {"type": "number", "exclusiveMinimum": 0, "maximum": 10_000_000, "description": "In dollars, at most two decimals."}
SYMBOL = {"type": "string", "pattern": "^[A-Z]{1,5}$", "description": "A ticker symbol such as 'AAPL'."}
SHARES = {"type": "integer", "minimum": 1, "maximum": 100_000}
BROKERAGE = "brokerage"


def dollars(cents: int) -> float:
    return cents / 100


def to_cents(amount: float) -> int:
    cents = round(amount * 100)
    if abs(amount * 100 - cents) > 1e-6:
        raise ToolError(f"Amounts have at most two decimals, got {amount}")
    return cents


class Bank:
    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    @property
    def accounts(self) -> dict[str, dict[str, Any]]:
        return self.state["accounts"]

    def account(self, name: str) -> dict[str, Any]:
        found = self.accounts.get(name)
        if found is None:
            raise ToolError(f"No account named '{name}'; accounts: {', '.join(self.accounts)}")
        return found

    def price(self, symbol: str) -> int:
        found = self.state["prices"].get(symbol)
        if found is None:
            raise ToolError(f"Unknown symbol '{symbol}'")
        return found

    def debit(self, name: str, cents: int, description: str) -> None:
        account = self.account(name)
        if account["balance"] < cents:
            raise ToolError(
                f"Insufficient funds: {name} has {dollars(account['balance']):.2f}, this needs {dollars(cents):.2f}"
            )
        account["balance"] -= cents
        self.record(name, -cents, description)

    def credit(self, name: str, cents: int, description: str) -> None:
        self.account(name)["balance"] += cents
        self.record(name, cents, description)

    def record(self, account: str, cents: int, description: str) -> None:
        transactions = self.state["transactions"]
        transactions.append({"id": f"t{len(transactions) + 1}", "account": account, "amount": dollars(cents),
                             "description": description})

    def new_id(self, prefix: str) -> str:
        self.state["next_id"] += 1
        return f"{prefix}{self.state['next_id']}"


def project(state: Mapping[str, Any]) -> dict[str, Any]:
    """What matters: balances, holdings, payees and pending payments (not ids, not the transaction log)."""
    return {
        "balances": {name: account["balance"] for name, account in state["accounts"].items()},
        "holdings": state["holdings"],
        "payees": state["payees"],
        "payments": sorted([p["payee"], p["from_account"], p["amount"]]
                           for p in state["payments"].values() if p["status"] == "pending"),
    }
