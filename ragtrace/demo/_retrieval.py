"""A deterministic BM25 index over the demo corpus (pure Python, no framework).

``Bm25Index(ARTICLES).search("How long is the warranty?", k=4)`` returns the best articles with
a score in [0, 1]: the BM25 score divided by the best score the query could reach, so a
question the help centre does not cover gets low scores, as it would from a real retriever.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ragtrace.demo._corpus import Article

_WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    "a an and are at be by can do does for from how i if in is it its me my of on or the this "
    "to what when where which who why will with you your".split()
)


def words(text: str) -> list[str]:
    """Content words, crudely stemmed: no plural ``s``, first five letters (install ~ installs)."""
    found = _WORD.findall(text.lower())
    return [w.removesuffix("s")[:5] if len(w) > 3 else w for w in found if w not in STOP_WORDS]


class Bm25Index:
    """Okapi BM25 over title and text of each article.

    Args:
        articles: The documents to index.
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, articles: Sequence[Article], k1: float = 1.2, b: float = 0.75) -> None:
        self.articles = tuple(articles)
        self.k1 = k1
        self.b = b
        self._terms = [Counter(words(f"{a.title} {a.text}")) for a in self.articles]
        self._lengths = [sum(t.values()) for t in self._terms]
        self._avg_length = sum(self._lengths) / max(1, len(self._lengths))
        n = len(self.articles)
        df: Counter[str] = Counter()
        for terms in self._terms:
            df.update(terms.keys())
        self._idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def search(self, query: str, k: int = 4) -> list[tuple[Article, float]]:
        """The ``k`` best articles for ``query`` with scores in [0, 1], best first (ties by id)."""
        wanted = set(words(query))
        best = sum(self._idf.get(w, 0.0) * (self.k1 + 1) for w in wanted)
        scored = []
        for article, terms, length in zip(self.articles, self._terms, self._lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / self._avg_length)
            raw = sum(
                self._idf[w] * terms[w] * (self.k1 + 1) / (terms[w] + norm)
                for w in wanted
                if w in terms
            )
            scored.append((round(raw / best, 3) if best else 0.0, article))
        scored.sort(key=lambda item: (-item[0], item[1].id))
        return [(article, score) for score, article in scored[:k]]
