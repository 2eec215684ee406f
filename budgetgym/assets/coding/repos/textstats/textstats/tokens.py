"""Splitting text into words and sentences; counting syllables."""

import re

WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
VOWELS = "aeiouy"


def words(text, lower=True):
    found = WORD.findall(text)
    return [word.lower() for word in found] if lower else found


def sentences(text):
    """Sentences, split after . ! or ? followed by white space; empty pieces dropped."""
    return [piece.strip() for piece in SENTENCE_END.split(text.strip()) if piece.strip()]


def syllables(word):
    """A heuristic syllable count: vowel groups, a silent final e dropped, at least one."""
    word = word.lower()
    count = 0
    previous_vowel = False
    for char in word:
        is_vowel = char in VOWELS
        if is_vowel and not previous_vowel:
            count += 1
        previous_vowel = is_vowel
    if word.endswith("e") and not word.endswith("le") and count > 1:
        count -= 1
    return max(count, 1)
