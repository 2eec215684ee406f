"""Frequencies and readability."""

from collections import Counter

from textstats.tokens import sentences, syllables, words

STOPWORDS = frozenset({"a", "an", "and", "the", "of", "to", "in", "is", "it", "on"})


def top_words(text, n=3, skip_stopwords=True):
    """The n most frequent words, ties broken alphabetically, as (word, count) pairs."""
    counts = Counter(word for word in words(text) if not (skip_stopwords and word in STOPWORDS))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]


def readability(text):
    """Flesch reading ease, rounded to one decimal; 0.0 for text without words."""
    found = words(text)
    if not found:
        return 0.0
    sentence_count = max(len(sentences(text)), 1)
    syllable_count = sum(syllables(word) for word in found)
    score = 206.835 - 1.015 * (len(found) / sentence_count) - 84.6 * (syllable_count / len(found))
    return round(score, 1)


def summary(text):
    found = words(text)
    return {
        "words": len(found),
        "sentences": len(sentences(text)),
        "unique_words": len(set(found)),
        "average_word_length": round(sum(map(len, found)) / len(found), 2) if found else 0.0,
    }
