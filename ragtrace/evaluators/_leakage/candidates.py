"""Which parts of a text can hold a name or a place: a cheap pass that spares NER the rest.

spaCy's NER reads every token of a text, and most sentences of a retrieved passage name no one
("Refunds are processed within five business days."). ``candidate_spans(text)`` cuts a text into
sentences with a plain regular expression and keeps, as runs of neighbouring sentences, those
that show a sign of a proper noun: a capital letter past the first word, a digit, an ``@``, or a
first word that is capitalised and not a common function word ("The", "If", "Each" start
ordinary sentences; "Paris" or "Smith" may start one that names a place or a person). NER then
reads only the runs, and its offsets are moved back by the run's start.

Opt-in (``PiiLeakage(ner_candidates_only=True)``) and not lossless: the package doc and
``docs/decisions/cold-record-options.md`` count what it loses. It is meant for the cased
entities (PERSON, LOCATION, ORGANIZATION): dates and nationalities ("within five days",
"french") often sit in sentences with no sign at all. What it misses by construction is an
all-lower-case name in a sentence with no other sign, which the small spaCy model rarely tags
either.
"""

from __future__ import annotations

import re

from ragtrace.evaluators._text import STOP_WORDS

# A sentence ends at . ! ? or an ellipsis followed by space, or at a line break.
_BREAK = re.compile("(?<=[.!?\u2026])\\s+|\\s*\\n\\s*")
_FIRST_WORD = re.compile("\\W*(\\w+)")
_SIGN = re.compile("[\\d@]")


def candidate_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the runs of sentences in ``text`` that may hold an entity.

    Runs are maximal stretches of neighbouring candidate sentences, so NER still sees a
    candidate's neighbours when they are candidates too; the spans are in order and disjoint.
    """
    sentences = sentence_spans(text)
    if any(_starts_lower(text[a:b]) for a, b in sentences):
        return [(0, len(text))] if sentences else []  # not cased prose: NER reads it all
    keep = [is_candidate(text[a:b]) for a, b in sentences]
    runs: list[tuple[int, int]] = []
    joined = False  # the previous sentence was kept: extend its run
    for (start, end), kept in zip(sentences, keep, strict=True):
        if not kept:
            joined = False
        elif joined:
            runs[-1] = (runs[-1][0], end)
        else:
            runs.append((start, end))
            joined = True
    return runs


def _starts_lower(sentence: str) -> bool:
    first = _FIRST_WORD.match(sentence)
    return first is not None and first.group(1)[:1].islower()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each non-empty sentence of ``text``, by the plain regular expression."""
    spans = []
    start = 0
    for match in _BREAK.finditer(text):
        if match.start() > start:
            spans.append((start, match.start()))
        start = match.end()
    if len(text) > start:
        spans.append((start, len(text)))
    return spans


def is_candidate(sentence: str) -> bool:
    """Whether one sentence shows a sign of a name, a place or a number."""
    if _SIGN.search(sentence):
        return True
    first = _FIRST_WORD.match(sentence)
    if first is None:
        return False
    word = first.group(1)
    if any(ch.isupper() for ch in sentence[first.end() :]):
        return True
    if any(ch.isupper() for ch in word[1:]):
        return True  # "iPhone", "McDonald": capitals inside the first word
    return word[:1].isupper() and word.lower() not in STOP_WORDS
