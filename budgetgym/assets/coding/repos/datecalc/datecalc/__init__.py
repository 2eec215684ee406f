"""Calendar arithmetic on (year, month, day) triples (proleptic Gregorian)."""

from datecalc.calendar import days_in_month, days_in_year, is_leap, validate
from datecalc.arith import add_days, add_months, day_of_year, days_between, weekday

__all__ = ["add_days", "add_months", "day_of_year", "days_between", "days_in_month", "days_in_year",
           "is_leap", "validate", "weekday"]
