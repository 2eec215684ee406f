import pytest

from splitbill import format_cents, parse_amount


@pytest.mark.parametrize("text, cents", [
    ("12", 1200), ("$12.5", 1250), ("12.05", 1205), ("$1,234.56", 123456), ("-3.10", -310), (" 0.99 ", 99),
    ("1234567", 123456700),
])
def test_parse_amount(text, cents):
    assert parse_amount(text) == cents


@pytest.mark.parametrize("bad", ["", "abc", "1.234", "1,23", "$", "12.", "--1"])
def test_parse_amount_rejects(bad):
    with pytest.raises(ValueError):
        parse_amount(bad)


def test_format_cents():
    assert format_cents(123456) == "$1,234.56"
    assert format_cents(5) == "$0.05"
    assert format_cents(0) == "$0.00"
    assert format_cents(-250) == "-$2.50"
    assert format_cents(100, symbol="EUR ") == "EUR 1.00"


def test_roundtrip():
    for cents in (1, 99, 100, 101, 99999, 1000000):
        assert parse_amount(format_cents(cents)) == cents
