"""Text statistics."""

from textstats.tokens import sentences, syllables, words
from textstats.stats import readability, summary, top_words
from textstats.format import slugify, truncate

__all__ = ["readability", "sentences", "slugify", "summary", "syllables", "top_words", "truncate", "words"]
