from textstats import sentences, syllables, words


def test_words_lower():
    assert words("The cat's HAT, and 3 dogs!") == ["the", "cat's", "hat", "and", "dogs"]


def test_words_keep_case():
    assert words("Hello World", lower=False) == ["Hello", "World"]


def test_sentences():
    assert sentences("One. Two! Three? Four") == ["One.", "Two!", "Three?", "Four"]


def test_sentences_strip_and_empty():
    assert sentences("   Hi there.   ") == ["Hi there."]
    assert sentences("") == []


def test_sentences_need_space():
    assert sentences("Pi is 3.14 today.") == ["Pi is 3.14 today."]


def test_syllables():
    assert syllables("cat") == 1
    assert syllables("water") == 2
    assert syllables("banana") == 3
    assert syllables("make") == 1
    assert syllables("table") == 2
    assert syllables("the") == 1
    assert syllables("rhythm") == 1
    assert syllables("queue") == 1
