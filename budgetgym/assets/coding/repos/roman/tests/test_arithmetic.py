import pytest

from roman import add, subtract, total


def test_add():
    assert add("XIV", "VI") == "XX"
    assert add("MCM", "XCIX") == "MCMXCIX"


def test_add_overflow():
    with pytest.raises(ValueError):
        add("MMM", "M")


def test_subtract():
    assert subtract("X", "I") == "IX"
    assert subtract("MM", "I") == "MCMXCIX"


def test_subtract_not_positive():
    with pytest.raises(ValueError):
        subtract("V", "V")
    with pytest.raises(ValueError):
        subtract("I", "V")


def test_total():
    assert total(["I", "II", "III"]) == "VI"
    assert total(["M", "M", "M"]) == "MMM"


def test_total_cap():
    with pytest.raises(OverflowError):
        total(["X", "X"], cap=19)
    assert total(["X", "IX"], cap=19) == "XIX"
