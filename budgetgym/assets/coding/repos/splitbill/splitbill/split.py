"""Splitting amounts between people."""


def split_evenly(total, people):
    """Shares in cents that differ by at most one cent and add up to total; the first get the extra."""
    if people < 1:
        raise ValueError("need at least one person")
    base, extra = divmod(total, people)
    return [base + 1 if index < extra else base for index in range(people)]


def split_weighted(total, weights):
    """Shares proportional to weights; leftover cents go to the largest remainders first."""
    if not weights or any(weight < 0 for weight in weights) or sum(weights) == 0:
        raise ValueError("weights must be non-negative with a positive sum")
    whole = sum(weights)
    shares = [total * weight // whole for weight in weights]
    remainders = [total * weight % whole for weight in weights]
    leftover = total - sum(shares)
    order = sorted(range(len(weights)), key=lambda index: (-remainders[index], index))
    for index in order[:leftover]:
        shares[index] += 1
    return shares


def with_tip(total, percent=15):
    """Total plus a tip of percent, rounded half up to the cent."""
    return total + (total * percent + 50) // 100


def apply_discount(total, percent=0, minimum_total=0):
    """Total less percent off, applied only when total is at least minimum_total."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    if total < minimum_total:
        return total
    return total - (total * percent + 50) // 100


def settle(paid):
    """Given {person: cents paid} for a shared bill, the transfers (debtor, creditor, cents) that even it out."""
    people = sorted(paid)
    shares = dict(zip(people, split_evenly(sum(paid.values()), len(people))))
    balance = {person: paid[person] - shares[person] for person in people}
    debtors = [person for person in people if balance[person] < 0]
    creditors = [person for person in people if balance[person] > 0]
    transfers = []
    while debtors and creditors:
        debtor, creditor = debtors[0], creditors[0]
        amount = min(-balance[debtor], balance[creditor])
        transfers.append((debtor, creditor, amount))
        balance[debtor] += amount
        balance[creditor] -= amount
        if balance[debtor] == 0:
            debtors.pop(0)
        if balance[creditor] == 0:
            creditors.pop(0)
    return transfers
