"""What a detector returns: ``Finding`` (type and offsets, never the value), and how findings
are compared: overlaps resolved by rank, values reduced to their letters and digits."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

REGEX = "regex"  # the detector name of the pattern suites
_NOT_ALNUM = re.compile(r"[\W_]+")


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing found in a text (never stored with its value).

    Attributes:
        entity_type: What it is (``EMAIL_ADDRESS``, ``PRIVATE_KEY``, ...).
        start: Offset of its first character in the scanned text.
        end: Offset after its last character.
        detector: What found it (``regex``, ``presidio:SpacyRecognizer``, ...).
        score: The detector's confidence (1.0 for validated patterns).
    """

    entity_type: str
    start: int
    end: int
    detector: str
    score: float = 1.0


def resolve_overlaps(findings: Iterable[Finding], rank: Callable[[Finding], int]) -> list[Finding]:
    """Drop findings overlapping a better one (lower ``rank`` first, then longer), by offset.

    The kept findings never overlap, so each new one is compared with its two neighbours only
    (``n log n`` however many findings a text holds)."""
    starts: list[int] = []
    kept: list[Finding] = []  # disjoint, by start
    for f in sorted(findings, key=lambda f: (rank(f), f.start - f.end, f.start)):
        i = bisect_right(starts, f.start)
        if i and kept[i - 1].end > f.start:
            continue
        if i < len(kept) and kept[i].start < f.end:
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return sorted(kept, key=lambda f: (f.start, f.end))


def comparable(value: str) -> str:
    """A value's letters and digits, case-folded: how answer and context values are compared."""
    return _NOT_ALNUM.sub("", value).casefold()
