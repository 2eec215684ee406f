"""Realistic banking mistakes for the failure-state generator."""

from __future__ import annotations

import random
from typing import Any, Mapping

from budgetgym.core import ToolCall
from budgetgym.envs.function_calling.banking.backend import dollars
from budgetgym.envs.function_calling.domain import Mistakes


def wrong_argument(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = dict(call.arguments)
    if call.name == "transfer":
        if rng.random() < 0.5:
            args["amount"] = round(args["amount"] * 10, 2)  # a slipped zero
        else:
            others = [a for a in state["accounts"] if a not in (args["from_account"], args["to_account"])]
            if not others:
                return None
            args["to_account"] = rng.choice(others)
    elif call.name == "pay_bill":
        others = [p for p in sorted(state["payees"]) if p != args["payee"]]
        if others and rng.random() < 0.5:
            args["payee"] = rng.choice(others)
        else:
            args["amount"] = round(args["amount"] + 100, 2)
    elif call.name in ("buy_stock", "sell_stock"):
        args["quantity"] = args["quantity"] + rng.choice([1, 9])
    elif call.name == "cancel_payment":
        others = sorted(p["id"] for p in state["payments"].values()
                        if p["status"] == "pending" and p["id"] != args["payment_id"])
        if not others:
            return None
        args["payment_id"] = rng.choice(others)
    else:
        return None
    return ToolCall(call.name, args)


def wrong_tool(call: ToolCall, state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    args = call.arguments
    if call.name == "buy_stock":
        return ToolCall("sell_stock", dict(args))  # the opposite order
    if call.name == "sell_stock":
        return ToolCall("buy_stock", dict(args))
    if call.name == "transfer" and args["to_account"] not in ("brokerage",):
        payees = sorted(state["payees"])
        if payees:
            return ToolCall("pay_bill", {"payee": payees[0], "from_account": args["from_account"], "amount": args["amount"]})
    if call.name == "pay_bill":
        others = [a for a in state["accounts"] if a != args["from_account"]]
        return ToolCall("transfer", {"from_account": args["from_account"], "to_account": others[0], "amount": args["amount"]})
    return None


def destructive(state: Mapping[str, Any], rng: random.Random) -> ToolCall | None:
    pending = sorted(p["id"] for p in state["payments"].values() if p["status"] == "pending")
    if pending and rng.random() < 0.5:
        return ToolCall("cancel_payment", {"payment_id": rng.choice(pending)})
    if state["holdings"]:
        symbol = rng.choice(sorted(state["holdings"]))
        return ToolCall("sell_stock", {"symbol": symbol, "quantity": state["holdings"][symbol]})  # the whole position
    checking = state["accounts"]["checking"]["balance"]
    if not checking:
        return None
    return ToolCall("transfer", {"from_account": "checking", "to_account": "brokerage", "amount": dollars(checking)})


MISTAKES = Mistakes(wrong_argument=wrong_argument, wrong_tool=wrong_tool, destructive=destructive)
