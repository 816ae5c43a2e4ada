"""How the benchmarks read an answer before featurising its claims (``READINGS``).

``announcements`` reads it as written but for the lines that only announce what follows ("Here
is a summary of the article in 82 words:"): what the shipped models are fitted on (``READING``,
since 2026-11-27; ``_faith_announcements.py``). ``raw`` reads it as written, as the models were
fitted before. The others
read past its marks with ``ragtrace.evaluators._faithfulness.markup.blank_markup`` (offsets kept, so
labelled spans still line up): every mark, every mark but list markers, or that and
conversational filler too; or, ``CLAIM_READINGS``, the claims split and embedded as written and
their words read past the marks. ``_faith_answer_markup.py`` compared fitting
and scoring each way.

Conversational filler was measured as a reading and not shipped: an interjection opening the
answer ("Sure!", "Great question!") and closing offers of help ("I
hope this helps!", "Let me know if ..."). Reading past them at run time let changed facts in
short answers be caught as often as without them (the helpers' sets: 93% against 54%), but moved
the locked part's Summary BA 0.605 -> 0.583 (RAGTruth's summaries open with "Sure!"), so the
evaluator reads them as written. ``blank_filler`` blanks them in place, as
``ragtrace.evaluators._faithfulness.markup.blank_markup`` does its marks.

``announcements`` blanks the lines that only announce what follows
(``faithfulness.markup.blank_announcements``); the markup readings above were measured before it,
on answers otherwise read raw.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ragtrace.evaluators._faithfulness.markup import blank_announcements, blank_markup

_OPENING = re.compile(
    r"\A\s{0,8}(?:(?:hi|hello|hey)(?: there)?|sure(?: thing)?|certainly|of course|absolutely"
    r"|great question|good question|thanks for (?:asking|your question)|happy to help"
    r"|glad you asked)\s{0,2}[!.,]",
    re.IGNORECASE,
)
_CLOSING = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=\n))(?:i hope (?:this|that) helps|hope (?:this|that) helps"
    r"|let me know if (?:you have|there are|you need)[^.!?\n]{0,80}"
    r"|feel free to (?:ask|reach out)[^.!?\n]{0,80}"
    r"|is there anything else i can (?:help|assist)[^.!?\n]{0,60}"
    r"|if you have any (?:other |more |further )?questions[^.!?\n]{0,80})[.!?]{0,3}",
    re.IGNORECASE | re.MULTILINE,
)


def blank_filler(text: str) -> str:
    """``text`` with its opening interjection and closing offers of help replaced by spaces."""
    for pattern in (_OPENING, _CLOSING):
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    return text


READINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda text: text,
    "blank_markup": lambda text: blank_markup(text)[0],
    "blank_markup_no_lists": lambda text: blank_markup(text, lists=False)[0],
    "blank_markup_filler": lambda text: blank_markup(blank_filler(text), lists=False)[0],
    "lexical_no_lists": lambda text: blank_markup(text, lists=False)[0],
    "announcements": lambda text: blank_announcements(text)[0],
}
READING = "announcements"
# The cross-encoder paths were fitted on answers as written, and the evaluator reads them so
# there (``Faithfulness._read``): their benchmarks read them so too.
CROSSENCODER_READING = "raw"
# Readings whose claims are split from the answer as written (and embedded so), each claim's
# words, numbers and names read past its marks: what ``Faithfulness(read_past_markup=True)``
# does (the answer's coverage and length read past them too, ``READINGS``).
CLAIM_READINGS: dict[str, Callable[[str], str]] = {
    "lexical_no_lists": lambda claim: blank_markup(claim, lists=False)[0].strip(),
}
