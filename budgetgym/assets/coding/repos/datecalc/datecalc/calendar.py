"""Leap years and month lengths."""

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_year(year):
    return 366 if is_leap(year) else 365


def days_in_month(year, month):
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is not in 1..12")
    if month == 2 and is_leap(year):
        return 29
    return MONTH_DAYS[month - 1]


def validate(year, month, day):
    """Raise ValueError unless (year, month, day) is a real date."""
    if year < 1:
        raise ValueError("years start at 1")
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError(f"{year}-{month:02d} has no day {day}")
    return (year, month, day)
