"""Money in integer cents and fair bill splitting."""

from splitbill.money import format_cents, parse_amount
from splitbill.split import apply_discount, settle, split_evenly, split_weighted, with_tip

__all__ = ["apply_discount", "format_cents", "parse_amount", "settle", "split_evenly", "split_weighted", "with_tip"]
