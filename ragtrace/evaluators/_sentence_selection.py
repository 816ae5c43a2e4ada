"""A cheap first stage: the passage sentences the embedder needs to see, chosen by their words.

The embedding evaluators compare a few short texts (the query, each answer sentence or claim)
with every sentence of a record's passages, and read only the best matches: the best sentence of
each chunk for the query (``context_relevance``), the three nearest the query
(``answer_relevance``), the best for each answer sentence (``groundedness``) and the three best
for each claim (``faithfulness``). Embedding every passage sentence is most of a cold record's
CPU. ``select_sentences`` ranks the passage sentences for each probe by BM25 over content-word
stems (a word's first five letters, stop words left out, document frequencies taken over the
record's own sentences) and keeps the ``per_probe`` best of each, in each group when groups are
given. A probe that shares no stem with any sentence of a group keeps that group's first
``per_probe`` sentences (the lead of a news story is the likeliest match for an instruction
such as "Summarize the following news"). Groups with at most ``per_probe`` sentences are kept
whole.

What the embedder does not see is scored as unrelated (similarity 0 before the clip, left out of
faithfulness's top three): where the sentences the full model would have picked are among those
kept, every score is the one the full model gives (``tests/evaluators/test_sentence_selection.py``
checks that on a fixture set; docs/decisions/sentence-selection.md has the measured rates).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Sequence

from ragtrace.evaluators._text import content_words

STEM = 5
K1, B = 1.2, 0.75


@functools.lru_cache(maxsize=4096)
def stems(text: str) -> tuple[str, ...]:
    """The content-word stems of ``text`` (lower-cased, first ``STEM`` letters)."""
    return tuple(w[:STEM] for w in content_words(text))


def bm25(probe: str, sentences: Sequence[str]) -> list[float]:
    """BM25 of each sentence for ``probe``, document frequencies over ``sentences``."""
    bags = [Counter(stems(s)) for s in sentences]
    if not bags:
        return []
    n = len(bags)
    avg = sum(sum(b.values()) for b in bags) / n or 1.0
    wanted = set(stems(probe))
    df = {t: sum(1 for b in bags if t in b) for t in wanted}
    out = []
    for bag in bags:
        length = sum(bag.values())
        score = 0.0
        for term in wanted:
            tf = bag.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avg))
        out.append(score)
    return out


def select_sentences(
    probes: Sequence[str],
    sentences: Sequence[str],
    per_probe: int,
    groups: Sequence[tuple[int, int]] | None = None,
) -> list[int]:
    """Indices (ascending) of the ``sentences`` to embed: per probe and group, the ``per_probe``
    best by BM25 (ties: the earlier sentence), or the group's first ``per_probe`` sentences when
    the probe shares no stem with any of them. ``groups``: ``(start, end)`` spans of
    ``sentences`` (the chunks); default one group of all."""
    if per_probe < 1:
        raise ValueError("per_probe must be >= 1")
    spans = list(groups) if groups is not None else [(0, len(sentences))]
    kept: set[int] = set()
    scored = [bm25(p, sentences) for p in probes]
    for start, end in spans:
        if end - start <= per_probe:
            kept.update(range(start, end))
            continue
        for scores in scored:
            part = range(start, end)
            if not any(scores[i] > 0 for i in part):
                kept.update(range(start, start + per_probe))
                continue
            ranked = sorted(part, key=lambda i: (-scores[i], i))
            kept.update(ranked[:per_probe])
    return sorted(kept)
