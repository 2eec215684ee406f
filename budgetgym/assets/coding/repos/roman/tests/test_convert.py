import pytest

from roman import from_roman, is_valid, to_roman


@pytest.mark.parametrize("number, numeral", [
    (1, "I"), (3, "III"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"), (90, "XC"),
    (400, "CD"), (944, "CMXLIV"), (1994, "MCMXCIV"), (2024, "MMXXIV"), (3999, "MMMCMXCIX"),
])
def test_to_roman(number, numeral):
    assert to_roman(number) == numeral


@pytest.mark.parametrize("bad", [0, -1, 4000])
def test_to_roman_range(bad):
    with pytest.raises(ValueError):
        to_roman(bad)


def test_to_roman_type():
    with pytest.raises(TypeError):
        to_roman(2.0)
    with pytest.raises(TypeError):
        to_roman(True)


def test_from_roman_roundtrip():
    for number in range(1, 4000, 7):
        assert from_roman(to_roman(number)) == number


def test_from_roman_case_and_space():
    assert from_roman(" xiv ") == 14


def test_from_roman_subtractive():
    assert from_roman("CM") == 900
    assert from_roman("XCIX") == 99


@pytest.mark.parametrize("bad", ["IIII", "VV", "IC", "MMMM", "ABC", ""])
def test_from_roman_rejects(bad):
    with pytest.raises(ValueError):
        from_roman(bad)


def test_from_roman_lenient():
    assert from_roman("IIII", strict=False) == 4
    assert from_roman("MMMM", strict=False) == 4000


def test_is_valid():
    assert is_valid("XLII")
    assert not is_valid("XXXX")
    assert not is_valid("")
