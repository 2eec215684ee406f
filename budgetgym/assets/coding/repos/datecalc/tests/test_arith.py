import datetime

import pytest

from datecalc import add_days, add_months, day_of_year, days_between, weekday


def test_day_of_year():
    assert day_of_year(2023, 1, 1) == 1
    assert day_of_year(2023, 12, 31) == 365
    assert day_of_year(2024, 12, 31) == 366
    assert day_of_year(2024, 3, 1) == 61


def test_days_between_matches_datetime():
    pairs = [((2020, 1, 1), (2024, 6, 15)), ((1999, 12, 31), (2000, 1, 1)), ((2024, 3, 1), (2023, 3, 1))]
    for start, end in pairs:
        expected = (datetime.date(*end) - datetime.date(*start)).days
        assert days_between(start, end) == expected


def test_weekday():
    assert weekday(2024, 1, 1) == "Monday"
    assert weekday(2000, 2, 29) == "Tuesday"
    assert weekday(1, 1, 1) == "Monday"
    assert weekday(2023, 12, 31) == "Sunday"


def test_weekday_matches_datetime():
    for offset in range(0, 3000, 97):
        date = datetime.date(2019, 1, 1) + datetime.timedelta(days=offset)
        assert weekday(date.year, date.month, date.day) == date.strftime("%A")


def test_add_days_forward():
    assert add_days((2023, 1, 30), 3) == (2023, 2, 2)
    assert add_days((2023, 12, 31), 1) == (2024, 1, 1)
    assert add_days((2024, 2, 28), 1) == (2024, 2, 29)


def test_add_days_backward():
    assert add_days((2024, 1, 1), -1) == (2023, 12, 31)
    assert add_days((2024, 3, 1), -1) == (2024, 2, 29)


def test_add_days_matches_datetime():
    start = datetime.date(2022, 5, 17)
    for days in (-800, -31, 0, 45, 365, 1000):
        expected = start + datetime.timedelta(days=days)
        assert add_days((2022, 5, 17), days) == (expected.year, expected.month, expected.day)


def test_add_months():
    assert add_months((2023, 1, 15), 1) == (2023, 2, 15)
    assert add_months((2023, 11, 15), 3) == (2024, 2, 15)
    assert add_months((2023, 3, 15), -3) == (2022, 12, 15)


def test_add_months_clamps():
    assert add_months((2023, 1, 31), 1) == (2023, 2, 28)
    assert add_months((2024, 1, 31), 1) == (2024, 2, 29)


def test_add_months_without_clamp():
    with pytest.raises(ValueError):
        add_months((2023, 1, 31), 1, clamp=False)
    assert add_months((2023, 1, 28), 1, clamp=False) == (2023, 2, 28)
