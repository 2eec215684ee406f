"""Seeded task drafts for the bank: three accounts, payees, maybe a pending bill and a few stocks,
then requests drawn from the kinds below. ``requests`` is how many kinds (two or three by default;
eight to ten for a long conversation, ``generate.LONG_REQUESTS``); each kind makes one or two user
turns."""

from __future__ import annotations

import random
from typing import Callable

from budgetgym.envs.function_calling.banking.backend import Bank, dollars, project
from budgetgym.envs.function_calling.banking.tools import TOOLS
from budgetgym.envs.function_calling.domain import REQUESTS
from budgetgym.envs.function_calling.drafting import Draft

CUSTOMER = "Jordan Avery"
PRICES = {"AAPL": 18925, "MSFT": 41010, "NVDA": 12140, "TSLA": 17580, "VTI": 26530, "KO": 6120}
PAYEES = {"City Power": "CP-88120", "Water Works": "WW-40417", "Landlord LLC": "LL-2231", "FiberNet": "FN-77310",
          "Gym Club": "GC-5521"}
NEW_PAYEES = {"Dr. Patel Dental": "DP-10932", "Green Lawn Care": "GL-33018", "Metro Insurance": "MI-90021"}
SHOPS = ["Coffee Corner", "Grocer Bros", "Book Nook", "Fuel Stop", "Pizza Place"]
IMPOSSIBLE = [
    "Open a new credit card for me.",
    "Wire 200 dollars to my cousin's bank account in Brazil.",
    "What will {symbol} be worth next week?",
    "Change my online banking password.",
    "Order a new checkbook for my checking account.",
]


def _money(cents: int) -> str:
    return f"{dollars(cents):.2f}"


def random_bank(rng: random.Random) -> dict:
    accounts = {
        "checking": {"number": f"CHK-{rng.randint(1000, 9999)}", "balance": rng.randint(800, 6000) * 100 + rng.randint(0, 99)},
        "savings": {"number": f"SAV-{rng.randint(1000, 9999)}", "balance": rng.randint(8000, 25000) * 100},
        "brokerage": {"number": f"BRK-{rng.randint(1000, 9999)}", "balance": rng.randint(200, 3000) * 100 + rng.randint(0, 99)},
    }
    payees = {name: {"account_number": number} for name, number in sorted(rng.sample(sorted(PAYEES.items()), 3))}
    state = {"customer": CUSTOMER, "accounts": accounts, "payees": payees, "payments": {},
             "prices": dict(PRICES), "holdings": {}, "transactions": [], "next_id": 0}
    bank = Bank(state)
    for symbol in sorted(rng.sample(sorted(PRICES), 2)):
        state["holdings"][symbol] = rng.randint(2, 30)
    for shop in rng.sample(SHOPS, 3):
        bank.debit("checking", rng.randint(300, 9000), f"Card purchase at {shop}")
    if rng.random() < 0.6:
        payee = rng.choice(sorted(payees))
        state["next_id"] += 1
        payment_id = f"p{state['next_id']}"
        amount = rng.randint(40, 300) * 100
        bank.debit("checking", amount, f"Bill payment to {payee}")
        state["payments"][payment_id] = {"id": payment_id, "payee": payee, "from_account": "checking",
                                         "amount": amount, "status": "pending"}
    return state


def generate(rng: random.Random, requests: tuple[int, int] = REQUESTS) -> Draft:
    draft = Draft("banking", TOOLS, project, Bank, random_bank(rng))
    kinds = list(KINDS)
    if rng.random() < 0.15:
        draft.without_tools("pay_bill")
        kinds = [k for k in kinds if k not in NEEDS_PAY]
        payee = rng.choice(sorted(draft.state["payees"]))
        draft.user(f"Pay {payee} {rng.randint(30, 120)}.00 from checking.")
        draft.reply("Sorry, I can't pay bills here: I don't have a bill payment tool.", decline=True)
    for kind in rng.sample(kinds, min(len(kinds), rng.randint(*requests))):
        kind(rng, draft)
    return draft


def _balance(draft: Draft, account: str) -> int:
    return draft.state["accounts"][account]["balance"]


def _other_balances(draft: Draft, *accounts: str) -> list[str]:
    """Distractors: the balances of the accounts a request is not about."""
    return [_money(_balance(draft, a)) for a in ("checking", "savings", "brokerage") if a not in accounts]


def transfer(rng: random.Random, draft: Draft) -> None:
    source, target = rng.sample(["checking", "savings"], 2)
    amount = min(_balance(draft, source) // 2, rng.randint(5, 40) * 2500)
    draft.user(f"Move {_money(amount)} from {source} to {target}.")
    draft.do("transfer", from_account=source, to_account=target, amount=dollars(amount))
    draft.reply(f"Transferred {_money(amount)} from {source} to {target}.")


def balance(rng: random.Random, draft: Draft) -> None:
    account = rng.choice(["checking", "savings", "brokerage"])
    draft.user(f"How much money is in my {account} account?")
    draft.look("get_balance", account=account)
    amount = _money(_balance(draft, account))
    draft.reply(f"Your {account} balance is {amount}.", facts=[amount], distractors=_other_balances(draft, account))


def _payer(draft: Draft, cents: int) -> str:
    """Checking, unless earlier requests left it short: then savings."""
    return "checking" if _balance(draft, "checking") >= cents else "savings"


def pay(rng: random.Random, draft: Draft) -> None:
    payee = rng.choice(sorted(draft.state["payees"]))
    amount = rng.randint(20, 250) * 100 + rng.choice([0, 50, 99])
    account = _payer(draft, amount)
    draft.user(f"Pay {payee} {_money(amount)} from my {account} account.")
    draft.do("pay_bill", payee=payee, from_account=account, amount=dollars(amount))
    draft.reply(f"Scheduled a payment of {_money(amount)} to {payee}.")


def new_payee(rng: random.Random, draft: Draft) -> None:
    name, number = rng.choice(sorted(NEW_PAYEES.items()))
    if name in draft.state["payees"]:
        return pay(rng, draft)
    amount = rng.randint(50, 400) * 100
    account = _payer(draft, amount)
    draft.user(f"Add {name} as a payee (account {number}) and pay them {_money(amount)} from {account}.")
    draft.do("add_payee", name=name, account_number=number)
    draft.do("pay_bill", payee=name, from_account=account, amount=dollars(amount))
    draft.reply(f"Added {name} and paid them {_money(amount)}.")


def buy(rng: random.Random, draft: Draft) -> None:
    symbol = rng.choice(sorted(PRICES))
    budget = _balance(draft, "brokerage") + _balance(draft, "savings") // 2
    quantity = min(rng.randint(2, 12), max(1, budget // PRICES[symbol]))
    cost = PRICES[symbol] * quantity
    draft.user(f"Buy {quantity} shares of {symbol}. If my brokerage cash isn't enough, top it up from savings "
               "with exactly the shortfall. How much did it cost?")
    draft.look("get_quote", symbol=symbol)
    draft.look("get_balance", account="brokerage")
    shortfall = cost - _balance(draft, "brokerage")
    if shortfall > 0:
        draft.do("transfer", from_account="savings", to_account="brokerage", amount=dollars(shortfall))
    draft.do("buy_stock", symbol=symbol, quantity=quantity)
    draft.reply(f"Bought {quantity} {symbol} for {_money(cost)}.", facts=[_money(cost)],
                distractors=[*_other_balances(draft, "brokerage", "savings"), *_other_prices(symbol)])


def sell_all(rng: random.Random, draft: Draft) -> None:
    holdings = draft.state["holdings"]
    if not holdings:
        return buy(rng, draft)
    symbol = rng.choice(sorted(holdings))
    quantity = holdings[symbol]
    draft.user(f"Sell all my {symbol} shares. What did I get for them?")
    draft.look("get_portfolio")
    draft.do("sell_stock", symbol=symbol, quantity=quantity)
    others = [_money(PRICES[s] * q) for s, q in sorted(holdings.items()) if s != symbol]
    proceeds = _money(PRICES[symbol] * quantity)
    draft.reply(f"Sold {quantity} {symbol} for {proceeds}.", facts=[proceeds],
                distractors=[*others, *_other_balances(draft, "brokerage")])


def cancel(rng: random.Random, draft: Draft) -> None:
    pending = [p for p in draft.state["payments"].values() if p["status"] == "pending"]
    payees = [p["payee"] for p in pending]
    pending = [p for p in pending if payees.count(p["payee"]) == 1]
    if not pending:
        return balance(rng, draft)
    payment = pending[0]
    draft.user(f"Cancel my pending payment to {payment['payee']}.")
    draft.look("list_payments", status="pending")
    draft.do("cancel_payment", payment_id=payment["id"])
    draft.reply(f"Cancelled it; {_money(payment['amount'])} went back to {payment['from_account']}.")


def too_much(rng: random.Random, draft: Draft) -> None:
    have = _balance(draft, "checking")
    amount = (have // 100000 + 2) * 100000
    draft.user(f"Transfer {_money(amount)} from checking to savings.")
    draft.look("get_balance", account="checking")
    draft.reply(f"I can't: checking only has {_money(have)}, not enough for {_money(amount)}.",
                decline=True)


def last_purchase(rng: random.Random, draft: Draft) -> None:
    history = [t for t in draft.state["transactions"] if t["account"] == "checking"]
    latest = history[-1]
    draft.user("What was the last transaction on my checking account, and how much was it?")
    draft.look("list_transactions", account="checking", limit=1)
    draft.reply(f"The last one was \"{latest['description']}\" for {abs(latest['amount']):.2f}.",
                facts=[f"{abs(latest['amount']):.2f}"],
                distractors=[f"{abs(t['amount']):.2f}" for t in history[:-1]] + _other_balances(draft))


def quote_then_buy(rng: random.Random, draft: Draft) -> None:
    symbol = rng.choice(sorted(PRICES))
    draft.user(f"What's {symbol} trading at right now?")
    draft.look("get_quote", symbol=symbol)
    draft.reply(f"{symbol} is at {_money(PRICES[symbol])} a share.", facts=[_money(PRICES[symbol])],
                distractors=_other_prices(symbol))
    cash = _balance(draft, "brokerage")
    quantity = cash // PRICES[symbol]
    draft.user("Buy as many whole shares of it as my brokerage cash allows, without moving any money.")
    draft.look("get_balance", account="brokerage")
    if quantity == 0:
        draft.reply(f"Your brokerage cash ({_money(cash)}) isn't enough for even one share, so I can't buy any.",
                    decline=True)
        return
    draft.do("buy_stock", symbol=symbol, quantity=quantity)
    draft.reply(f"Bought {quantity} shares of {symbol}.")


def _other_prices(symbol: str) -> list[str]:
    """Distractors: the share prices of the other symbols."""
    return [_money(price) for other, price in sorted(PRICES.items()) if other != symbol]


def impossible(rng: random.Random, draft: Draft) -> None:
    request = rng.choice(IMPOSSIBLE).format(symbol=rng.choice(sorted(PRICES)))
    draft.user(request)
    draft.reply("Sorry, I can't do that with the banking tools I have.", decline=True)


KINDS: list[Callable[[random.Random, Draft], None]] = [
    transfer, balance, pay, new_payee, buy, sell_all, cancel, too_much, last_purchase, quote_then_buy, impossible,
]
NEEDS_PAY = {pay, new_payee}
