"""Parsing and formatting amounts."""

import re

AMOUNT = re.compile(r"^(-)?\$?(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{1,2}))?$")


def parse_amount(text):
    """'$1,234.5' -> 123450 cents. Raises ValueError for anything else."""
    match = AMOUNT.match(text.strip())
    if not match:
        raise ValueError(f"not an amount: {text!r}")
    sign, whole, fraction = match.groups()
    cents = int(whole.replace(",", "")) * 100 + int((fraction or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_cents(cents, symbol="$"):
    """123450 -> '$1,234.50'; negative amounts get a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, fraction = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{fraction:02d}"
