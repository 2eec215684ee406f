"""Arithmetic on dates."""

from datecalc.calendar import days_in_month, validate

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def day_of_year(year, month, day):
    """1 for January 1st."""
    validate(year, month, day)
    return sum(days_in_month(year, m) for m in range(1, month)) + day


def _ordinal(year, month, day):
    """Days since 0001-01-01 (which is 1)."""
    previous = year - 1
    return previous * 365 + previous // 4 - previous // 100 + previous // 400 + day_of_year(year, month, day)


def days_between(start, end):
    """Signed number of days from start to end (each a (year, month, day) tuple)."""
    return _ordinal(*end) - _ordinal(*start)


def weekday(year, month, day):
    """The weekday's name; 0001-01-01 was a Monday."""
    return WEEKDAYS[(_ordinal(year, month, day) - 1) % 7]


def add_days(date, days):
    """The date `days` after `date` (negative goes back)."""
    year, month, day = validate(*date)
    day += days
    while day > days_in_month(year, month):
        day -= days_in_month(year, month)
        month += 1
        if month > 12:
            month, year = 1, year + 1
    while day < 1:
        month -= 1
        if month < 1:
            month, year = 12, year - 1
        day += days_in_month(year, month)
    return validate(year, month, day)


def add_months(date, months, clamp=True):
    """Same day `months` later; a day past the month's end is clamped (or an error without clamp)."""
    year, month, day = validate(*date)
    index = year * 12 + (month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    last = days_in_month(year, month)
    if day > last:
        if not clamp:
            raise ValueError(f"{year}-{month:02d} has no day {day}")
        day = last
    return (year, month, day)

