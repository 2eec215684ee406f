"""Ranked retrieval over the catalogue: BM25 from the ``bm25s`` package.

Why ``bm25s``: it precomputes each (term, document) BM25 score at indexing time into a sparse
matrix, so a query costs a sum over the query's terms' posting lists plus a top-k selection: it
does not loop over documents in Python. ``rank-bm25``, the other well-kept library, scores every
document in Python for every query term; ``benchmarks/bench_web.py`` measures both (about 25x apart
at 2,000 products, 400x at 20,000). ``bm25s`` needs only numpy.

Tokens: lower case, letters and digits; hyphens dropped inside a word (``t-shirt`` -> ``tshirt``,
``USB-C`` -> ``usbc``), a plural ``s`` removed from words of four letters or more, and common
English words that say nothing about a product dropped. Ranking is deterministic: ties are broken
by catalogue order.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from budgetgym.core.extras import MissingExtra

if TYPE_CHECKING:
    from budgetgym.envs.web.catalogue import Product

MAX_RESULTS = 50
_CACHE_SIZE = 4096
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
STOPWORDS = frozenset(
    "a an the i im i'm me my we our you your need want wanted looking look find get buy buying please would "
    "like some one that which is it its be to of in on at by for from with and or but than less lower more "
    "under below over price priced cost costs dollars dollar usd bucks can could should will also just "
    "something thing item product".split()
)


def tokenize(text: str) -> list[str]:
    """The search tokens of a text (also used for documents)."""
    tokens = []
    for word in _WORD.findall(text.lower()):
        word = word.replace("-", "")
        if word in STOPWORDS:
            continue
        if len(word) >= 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        tokens.append(word)
    return tokens


class SearchIndex:
    """A BM25 index over products; ``search(query)`` returns product ids, best first (at most 50)."""

    def __init__(self, products: Sequence["Product"]) -> None:
        try:
            import bm25s
        except ImportError as err:  # a base dependency of budgetgym's web extra
            raise MissingExtra("web", "the web shop's search", missing="bm25s") from err
        self._ids = [p.id for p in products]
        corpus = [tokenize(p.search_text()) for p in products]
        self._bm25 = bm25s.BM25()
        self._bm25.index(corpus, show_progress=False)
        self._vocab = self._bm25.vocab_dict
        self._cache: OrderedDict[str, tuple[str, ...]] = OrderedDict()  # query -> ranked ids, LRU

    def __len__(self) -> int:
        return len(self._ids)

    def clear_cache(self) -> None:
        """Forget the ranked queries (the next search of each ranks afresh, as in a new process)."""
        self._cache.clear()

    def search(self, query: str, limit: int = MAX_RESULTS) -> tuple[str, ...]:
        """The ids of the products matching ``query``, best first; empty when no term is known."""
        cached = self._cache.get(query)
        if cached is not None:
            self._cache.move_to_end(query)
            return cached[:limit]
        tokens = [t for t in tokenize(query) if t in self._vocab]
        ranked = self._rank(tokens, MAX_RESULTS) if tokens else ()
        self._cache[query] = ranked
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return ranked[:limit]

    def search_uncached(self, query: str, limit: int = MAX_RESULTS) -> tuple[str, ...]:
        """As :meth:`search`, computed afresh (the benchmark measures this)."""
        key = [t for t in tokenize(query) if t in self._vocab]
        return self._rank(key, limit) if key else ()

    def _rank(self, tokens: list[str], limit: int) -> tuple[str, ...]:
        scores = self._bm25.get_scores(tokens)
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > limit:
            values = scores[candidates]
            kth = np.partition(values, candidates.size - limit)[candidates.size - limit]
            candidates = candidates[values >= kth]
        order = np.lexsort((candidates, -scores[candidates]))  # score down, then catalogue order
        return tuple(self._ids[i] for i in candidates[order][:limit])


def rank_bm25_search(products: Iterable["Product"]):
    """The same ranking with the ``rank-bm25`` package (for the benchmark's comparison only)."""
    from rank_bm25 import BM25Okapi

    products = list(products)
    model = BM25Okapi([tokenize(p.search_text()) for p in products])
    ids = [p.id for p in products]

    def search(query: str, limit: int = MAX_RESULTS) -> tuple[str, ...]:
        scores = model.get_scores(tokenize(query))
        order = np.lexsort((np.arange(len(ids)), -scores))
        return tuple(ids[i] for i in order[:limit] if scores[i] > 0)

    return search
