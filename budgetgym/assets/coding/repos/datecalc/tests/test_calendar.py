import pytest

from datecalc import days_in_month, days_in_year, is_leap, validate


@pytest.mark.parametrize("year, leap", [(2024, True), (2023, False), (1900, False), (2000, True), (2100, False), (4, True)])
def test_is_leap(year, leap):
    assert is_leap(year) is leap


def test_days_in_year():
    assert days_in_year(2024) == 366
    assert days_in_year(2023) == 365


def test_days_in_month():
    assert days_in_month(2023, 1) == 31
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2023, 4) == 30
    assert days_in_month(2023, 12) == 31


def test_days_in_month_range():
    with pytest.raises(ValueError):
        days_in_month(2023, 0)
    with pytest.raises(ValueError):
        days_in_month(2023, 13)


def test_validate():
    assert validate(2024, 2, 29) == (2024, 2, 29)
    assert validate(2023, 1, 1) == (2023, 1, 1)
    with pytest.raises(ValueError):
        validate(2023, 2, 29)
    with pytest.raises(ValueError):
        validate(2023, 4, 0)
    with pytest.raises(ValueError):
        validate(0, 1, 1)
