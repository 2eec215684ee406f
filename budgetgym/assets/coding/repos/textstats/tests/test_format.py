from textstats import slugify, truncate


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  Crème Brûlée  ") == "creme-brulee"


def test_slugify_separator():
    assert slugify("a b c", separator="_") == "a_b_c"


def test_slugify_max_length():
    assert slugify("alpha beta gamma", max_length=11) == "alpha-beta"
    assert slugify("x" * 60) == "x" * 50


def test_truncate_short_text_unchanged():
    assert truncate("short", 10) == "short"
    assert truncate("exactly10!", 10) == "exactly10!"


def test_truncate_word_boundary():
    assert truncate("the quick brown fox", 12) == "the quick..."
    assert truncate("the quick brown fox", 14) == "the quick..."


def test_truncate_no_space():
    assert truncate("abcdefghij", 6) == "abc..."


def test_truncate_tiny_width():
    assert truncate("abcdef", 2) == ".."
