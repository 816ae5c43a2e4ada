"""Sentence splitting (pysbd's sentences, its spans found without a regex per sentence) and the
text a scanner reads from whatever a record holds (``clean_text``)."""

from __future__ import annotations

import pysbd
import pytest

from ragtrace.demo._corpus import ARTICLES, QUESTIONS
from ragtrace.evaluators._text import _segmenter, clean_text, split_sentences

TRICKY = [
    "Dr. Smith paid $3.50 in the U.S. on Monday. He left.",
    "Hi!!  Hi!!  Hi!!  ",
    "Dr. Smith went. Dr. Smith went. Dr. Smith went.",
    "(a) b. (a) b. (a) b.",
    "a  b. c",
    "x.",
    "Tabs\tbetween.\tWords here.\u00a0Non-breaking space after.\u2003Em space.",
    "Trailing white space at the end.   \n",
    "Ellipses... and more... The end.",
    "Quotes: \"He said so.\" Then he left. 'Really?' Yes.",
    "Numbers 1.5 and 2.75 stay. So do e.g. and i.e. here.",
    "A sentence with a URL https://example.com/a.b?c=d. Another one.",
    "",
]


def _reference_segmenter() -> pysbd.Segmenter:
    """pysbd exactly as shipped: spans by one compiled regex per sentence."""
    return pysbd.Segmenter(language="en", clean=False)


def _corpus_texts() -> list[str]:
    """The demo's help-centre articles and questions, and each article's prefixes cut at every
    other space (sentences broken mid-way, dangling abbreviations)."""
    texts = [a.text for a in ARTICLES] + list(QUESTIONS)
    for article in ARTICLES:
        cuts = [i for i, ch in enumerate(article.text) if ch == " "][::2]
        texts += [article.text[:i] for i in cuts]
    return texts


@pytest.mark.parametrize("text", TRICKY)
def test_spans_match_pysbd_on_tricky_text(text: str) -> None:
    assert _segmenter().segment(text) == _reference_segmenter().segment(text)


def test_spans_match_pysbd_on_a_corpus_and_its_broken_prefixes() -> None:
    texts = _corpus_texts()
    assert len(texts) > 300
    ours, theirs = _segmenter(), _reference_segmenter()
    differing = [t for t in texts if ours.segment(t) != theirs.segment(t)]
    assert differing == []


def test_split_sentences_keeps_abbreviations_and_decimals_whole() -> None:
    text = "Dr. Smith paid $3.50 in the U.S. on Monday. He left.\n\nA new paragraph."
    assert split_sentences(text) == [
        "Dr. Smith paid $3.50 in the U.S. on Monday.",
        "He left.",
        "A new paragraph.",
    ]


class _Odd:
    def __str__(self) -> str:
        return "odd object"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("", False)),
        ("plain", ("plain", False)),
        (b"caf\xc3\xa9 \xff", ("caf\u00e9 \ufffd", False)),  # UTF-8, bad bytes replaced
        (bytearray(b"abc"), ("abc", False)),
        (_Odd(), ("odd object", False)),
        ("a\ud800b\udfffc", ("a?b?c", False)),  # lone surrogates: same length, encodable
        ("x" * 12, ("x" * 10, True)),
    ],
)
def test_clean_text_reads_anything_a_record_holds(
    value: object, expected: tuple[str, bool]
) -> None:
    assert clean_text(value, 10) == expected
