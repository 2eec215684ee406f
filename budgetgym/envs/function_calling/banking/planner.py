"""The bank's repair planner. Money is conserved inside the bank except for pending payments (which
can be cancelled) and trades at fixed prices (which can be reversed), so any state the tools reach
can be brought to the target in this order: add missing payees; cancel stray pending payments; sell
surplus shares; move cash between accounts until each holds its target balance plus what the
remaining purchases and payments will take from it; buy missing shares; make missing payments;
remove stray payees."""

from __future__ import annotations

from collections import Counter
from typing import Any, Collection, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.banking.backend import BROKERAGE, dollars


def plan(state: Mapping[str, Any], target: Mapping[str, Any], tools: Collection[str]) -> ToolCall | None:
    payees, wanted_payees = state["payees"], target["payees"]
    for name in sorted(wanted_payees):
        if name not in payees:
            return ToolCall("add_payee", {"name": name, "account_number": wanted_payees[name]["account_number"]})

    pending = [p for p in state["payments"].values() if p["status"] == "pending"]
    have = Counter((p["payee"], p["from_account"], p["amount"]) for p in pending)
    want = Counter((payee, account, amount) for payee, account, amount in target["payments"])
    stray = have - want
    for payment in sorted(pending, key=lambda p: int(p["id"][1:]), reverse=True):
        key = (payment["payee"], payment["from_account"], payment["amount"])
        if stray[key] > 0:
            return ToolCall("cancel_payment", {"payment_id": payment["id"]})
    missing_payments = sorted((want - have).elements())

    holdings, wanted_holdings = state["holdings"], target["holdings"]
    for symbol in sorted(holdings):
        surplus = holdings[symbol] - wanted_holdings.get(symbol, 0)
        if surplus > 0:
            return ToolCall("sell_stock", {"symbol": symbol, "quantity": surplus})
    purchases = {s: n - holdings.get(s, 0) for s, n in sorted(wanted_holdings.items()) if n > holdings.get(s, 0)}

    need = {name: target["balances"][name] - account["balance"] for name, account in state["accounts"].items()}
    need[BROKERAGE] += sum(state["prices"][s] * n for s, n in purchases.items())
    for payee, account, amount in missing_payments:
        need[account] += amount
    short = sorted((name for name in need if need[name] > 0), key=lambda n: (-need[n], n))
    spare = sorted((name for name in need if need[name] < 0), key=lambda n: (need[n], n))
    if short and spare:
        amount = min(need[short[0]], -need[spare[0]])
        return ToolCall("transfer", {"from_account": spare[0], "to_account": short[0], "amount": dollars(amount)})

    for symbol, quantity in purchases.items():
        return ToolCall("buy_stock", {"symbol": symbol, "quantity": quantity})
    for payee, account, amount in missing_payments:
        return ToolCall("pay_bill", {"payee": payee, "from_account": account, "amount": dollars(amount)})
    for name in sorted(payees):
        if name not in wanted_payees:
            return ToolCall("remove_payee", {"name": name})
    return None
