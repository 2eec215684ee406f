from textstats import readability, summary, top_words


def test_top_words():
    text = "the cat and the hat and the bat sat on the cat"
    assert top_words(text) == [("cat", 2), ("bat", 1), ("hat", 1)]


def test_top_words_with_stopwords():
    text = "the cat and the hat"
    assert top_words(text, n=2, skip_stopwords=False) == [("the", 2), ("and", 1)]


def test_top_words_n():
    assert len(top_words("a b c d e f g", n=5)) == 5
    assert len(top_words("a b c d e f g", n=10)) == 6


def test_readability_simple():
    assert readability("The cat sat on the mat.") == 116.1


def test_readability_harder_is_lower():
    easy = readability("The dog ran. The cat sat.")
    hard = readability("Institutional considerations necessitate comprehensive reorganization.")
    assert hard < easy


def test_readability_empty():
    assert readability("") == 0.0
    assert readability("123 456") == 0.0


def test_summary():
    assert summary("One fish. Two fish!") == {
        "words": 4, "sentences": 2, "unique_words": 3, "average_word_length": 3.5,
    }


def test_summary_empty():
    assert summary("") == {"words": 0, "sentences": 0, "unique_words": 0, "average_word_length": 0.0}
