"""Features that say whether a claim is supported by retrieved passages.

One row per claim (``claim_features``, in the order of ``FEATURES``), over an index of the
passage sentences (``index_passages``). The features are cheap, language-agnostic where they can
be, and each one names a way an answer goes beyond its sources:

- ``word_support``: share of the claim's content words found anywhere in the passages;
  ``stem_support``: the same with 5-letter prefixes (grew/grows, hospital/hospitals);
  ``local_support``: the best share found within a single passage sentence (a claim stitched
  from words scattered across the passages scores lower here than in ``word_support``);
  ``bigram_support``: share of the claim's content-word bigrams found in the passages.
- ``missing_numbers``/``any_missing_number``: numbers in the claim that appear nowhere in the
  passages (compared as values: "1,300" = "1300", "17:00" = "17:0", "twenty" = "20").
- ``missing_names``: share of capitalised words inside the claim (names, places) that appear
  nowhere in the passages.
- ``max_similarity``/``top3_similarity``: cosine of the claim's embedding with its best and three
  best passage sentences (the groundedness signal of H2O's catalogue, per claim).
- ``meta_statement``: the claim talks about the passages rather than the world ("the passages
  do not mention ..."): such sentences make no factual claim.

Claim length is deliberately not a feature: in HaluEval it separates the classes by itself
(hallucinated answers are full sentences, right ones short phrases), an artifact of how that
set was built rather than a property of hallucinations.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from ragtrace.evaluators._text import STOP_WORDS, content_words, words

FEATURES = (
    "word_support",
    "stem_support",
    "local_support",
    "bigram_support",
    "missing_numbers",
    "any_missing_number",
    "missing_names",
    "max_similarity",
    "top3_similarity",
    "meta_statement",
)

INDEX_CACHE_SIZE = 256  # passage indexes kept (``index_passages``)
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_CAPITALISED = re.compile("(?<![.!?]\\s)(?<!^)\\b[A-Z][\\w'\u2019-]*")
_META = re.compile(
    r"\b(?:passages?|context|documents?|sources?|provided (?:text|information)|article)\b.{0,60}"
    r"\b(?:not|no|doesn't|does not|don't|do not|neither|without)\b|"
    r"\b(?:not|no)\b.{0,40}\b(?:mentioned|provided|specified|stated|given|available)\b|"
    r"\bunable to (?:answer|determine|find|provide)\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 10**9,
}


@dataclass(frozen=True, slots=True)
class PassageIndex:
    """What the features need to know about a record's passages, computed once per record."""

    words: frozenset[str]
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[float]
    sentence_words: tuple[frozenset[str], ...]
    lowered: str


def index_passages(sentences: Sequence[str]) -> PassageIndex:
    """Index the passage sentences (already split) of one record.

    Several evaluators index the same record's sentences (groundedness, answer relevance,
    faithfulness twice), and recurring passages recur together: the last ``INDEX_CACHE_SIZE``
    indexes are kept (a ``PassageIndex`` is immutable, so they are shared)."""
    return _index(tuple(sentences))


@functools.lru_cache(maxsize=INDEX_CACHE_SIZE)
def _index(sentences: tuple[str, ...]) -> PassageIndex:
    per_sentence = [content_words(s) for s in sentences]
    all_words = [w for ws in per_sentence for w in ws]
    bigrams = {pair for ws in per_sentence for pair in pairwise(ws)}
    text = " ".join(sentences)
    return PassageIndex(
        words=frozenset(all_words),
        stems=frozenset(w[:5] for w in all_words),
        bigrams=frozenset(bigrams),
        numbers=frozenset(numbers_in(text)),
        sentence_words=tuple(frozenset(ws) for ws in per_sentence),
        lowered=text.lower(),
    )


def claim_features(claim: str, index: PassageIndex, similarities: Sequence[float]) -> list[float]:
    """The ``FEATURES`` vector of one claim against one record's passages.

    ``similarities`` are the cosines of the claim's embedding with every passage sentence.
    """
    cws = content_words(claim)
    n = len(cws)
    if n:
        word_support = sum(w in index.words for w in cws) / n
        stem_support = sum(w[:5] in index.stems for w in cws) / n
        claim_set = set(cws)
        local = max((len(claim_set & s) for s in index.sentence_words), default=0)
        local_support = local / len(claim_set)
    else:
        word_support = stem_support = local_support = 1.0
    pairs = list(pairwise(cws))
    bigram_support = sum(p in index.bigrams for p in pairs) / len(pairs) if pairs else 1.0
    claim_numbers = numbers_in(claim)
    missing = [v for v in claim_numbers if v not in index.numbers]
    missing_names = missing_name_share(claim, index)
    ranked = sorted(similarities, reverse=True)
    best = ranked[0] if ranked else 0.0
    top3 = sum(ranked[:3]) / len(ranked[:3]) if ranked else 0.0
    return [
        word_support,
        stem_support,
        local_support,
        bigram_support,
        math.log1p(len(missing)),
        1.0 if missing else 0.0,
        missing_names,
        best,
        top3,
        1.0 if _META.search(claim) else 0.0,
    ]


def missing_name_share(text: str, index: PassageIndex) -> float:
    """Share of the capitalised words inside ``text``'s sentences (names, places) that appear
    nowhere in the passages; 0.0 when it has none."""
    names = [
        m.group(0).lower()
        for m in _CAPITALISED.finditer(text)
        if m.group(0).lower() not in STOP_WORDS
    ]
    return sum(name not in index.lowered for name in names) / len(names) if names else 0.0


def numbers_in(text: str) -> list[float]:
    """Numeric values in ``text``: digits (thousands separators dropped, "17:00" -> 17, 0) and
    the English number words up to twenty plus tens and powers of ten."""
    values: list[float] = []
    for match in _NUMBER.finditer(text):
        try:
            values.append(float(match.group(0).replace(",", "")))
        except ValueError:  # pragma: no cover - the pattern only matches numbers
            continue
    values.extend(float(_NUMBER_WORDS[w]) for w in words(text) if w in _NUMBER_WORDS)
    return values
