"""Conversion between integers and canonical Roman numerals (1 to 3999)."""

SYMBOLS = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
MAXIMUM = 3999


def to_roman(number):
    """The canonical numeral of an integer between 1 and 3999."""
    if not isinstance(number, int) or isinstance(number, bool):
        raise TypeError("expected an int")
    if number < 1 or number > MAXIMUM:
        raise ValueError(f"{number} is out of range 1..{MAXIMUM}")
    parts = []
    for value, symbol in SYMBOLS:
        count, number = divmod(number, value)
        parts.append(symbol * count)
    return "".join(parts)


def from_roman(numeral, strict=True):
    """The integer value of a numeral; with strict, only the canonical spelling is accepted."""
    text = numeral.strip().upper()
    if not text:
        raise ValueError("empty numeral")
    result = 0
    for index, char in enumerate(text):
        if char not in VALUES:
            raise ValueError(f"{char!r} is not a Roman digit")
        value = VALUES[char]
        if index + 1 < len(text) and VALUES.get(text[index + 1], 0) > value:
            result -= value
        else:
            result += value
    if strict and (result > MAXIMUM or to_roman(result) != text):
        raise ValueError(f"{numeral!r} is not a canonical numeral")
    return result


def is_valid(numeral):
    """True when the numeral is in canonical form."""
    try:
        from_roman(numeral)
    except (ValueError, TypeError):
        return False
    return True
