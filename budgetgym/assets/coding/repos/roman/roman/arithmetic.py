"""Arithmetic on numerals, with the result as a numeral."""

from roman.convert import MAXIMUM, from_roman, to_roman


def add(left, right):
    return to_roman(from_roman(left) + from_roman(right))


def subtract(left, right):
    """left - right; Roman numerals have no zero or negatives."""
    difference = from_roman(left) - from_roman(right)
    if difference < 1:
        raise ValueError("the difference is not positive")
    return to_roman(difference)


def total(numerals, cap=MAXIMUM):
    """Sum of several numerals; a total above cap is an error."""
    value = sum(from_roman(numeral) for numeral in numerals)
    if value > cap:
        raise OverflowError(f"total {value} exceeds {cap}")
    return to_roman(value)
