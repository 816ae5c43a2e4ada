"""Looping detection: did the model's answer go round in a loop?

A cheap lexical evaluator after H2O Eval Studio's "Looping Detection Evaluator". It reads
``record.response`` and returns three Scores, each in [0, 1]:

- ``looping.unique_sentences`` (higher is better, the primary metric):
  ``number of unique sentences / number of all sentences``, sentences shorter than
  ``min_sentence_chars`` (3) omitted.
- ``looping.longest_repeated_substring`` (lower is better):
  ``len(longest repeated substring) * frequency of that substring / length of the text``.
- ``looping.compression_ratio`` (higher is better): how well the text compresses, against what
  ordinary text of its length compresses to: ``len(zlib.compress(text, 9))`` divided by
  ``EXPECTED_SLOPE * n + EXPECTED_OFFSET`` (0.46 n + 60 bytes, for a text of ``n`` UTF-8 bytes),
  capped at 1.0. Texts under ``min_compression_bytes`` (100) bytes are not judged (1.0).

Use it by name or directly::

    from ragtrace.evaluators import create
    looping = create("looping")                       # the default operating point
    looping = create("looping", threshold="lenient")  # fewer alarms
    scores = looping.evaluate(record)

Operating points (``threshold=`` a name; ``operating_points``), chosen on the tuning part of
public data (``benchmarks/alarms.py``; docs/evaluators-online.md gives the measured rates):

==========  ================  ==========================  =================
point       unique_sentences  longest_repeated_substring  compression_ratio
==========  ================  ==========================  =================
strict      0.9               0.5                         0.75
default     0.75              0.75                        0.6
lenient     0.5               0.75                        0.5
==========  ================  ==========================  =================

A number (``threshold=0.6``) sets all three, and ``unique_sentences_threshold`` and the like set
one each.

Why the compression ratio is judged against length: zlib's ratio falls with length for any
text (a fixed header, then ever more context to match): ordinary answers of 500-1,000 bytes
compress to 0.45-0.6, of 2,000 bytes to about 0.5, so the catalogue's fixed 0.75 failed nearly
every answer past a few hundred bytes (98% of RAGTruth's faithful summaries). The expected size
``0.46 n + 60`` is a least-squares fit of compressed size on length over the faithful answers
of the tuning part (RAGTruth, HaluEval, ARES; 100 bytes and more); a runaway loop compresses
to a quarter to a third of it, ordinary answers to 0.7-1.3 of it. Below 100 bytes zlib's
header dominates and nothing can be told: short loops are left to the repeated substring.

Choices where the catalogue is silent:

- Sentences end at ``.``, ``!``, ``?`` or an ellipsis followed by whitespace, at the CJK
  full stop, exclamation or question mark, or at a line break. They are compared after
  collapsing whitespace and case folding; the length limit counts characters of that
  normalised form. With no sentence long enough the value is 1.0 (nothing repeats), and
  ``details["sentences"]`` is 0. The limit is 3 characters, not the catalogue's 10, so that a
  loop of a short answer ("1967", one a line) is counted, while list markers and stray
  characters are not.
- The longest repeated substring is the classic one (its two occurrences may overlap); its
  frequency counts non-overlapping occurrences (``str.count``), which keeps the value in
  [0, 1] as the catalogue's range says. Ties go to the one whose second occurrence comes first.
  It is found with a rolling hash (every hit verified) over the last ``max_chars`` characters
  (100,000 by default; loops gather at the end of a runaway answer), so the cost stays linear;
  ``details["truncated"]`` says when the window was used and the value is relative to it.
- ``details`` of the compression score give the raw ratio (``ratio``) beside the expected one.
- Text that is not valid UTF-8 (lone surrogates) is encoded with ``surrogatepass``.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator, unit_option

DEFAULT_THRESHOLD = 0.75
UNIQUE = "looping.unique_sentences"
REPEATED = "looping.longest_repeated_substring"
COMPRESSION = "looping.compression_ratio"
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "strict": {UNIQUE: 0.9, REPEATED: 0.5, COMPRESSION: 0.75},
    "default": {UNIQUE: 0.75, REPEATED: 0.75, COMPRESSION: 0.6},
    "lenient": {UNIQUE: 0.5, REPEATED: 0.75, COMPRESSION: 0.5},
}
# Compressed size of ordinary text of n UTF-8 bytes: EXPECTED_SLOPE * n + EXPECTED_OFFSET.
EXPECTED_SLOPE = 0.46
EXPECTED_OFFSET = 60.0
MIN_COMPRESSION_BYTES = 100
_SENTENCE_END = re.compile("(?<=[.!?\u2026])\\s+|(?<=[\u3002\uff01\uff1f])\\s*|\n\\s*")
_HASH_MOD = (1 << 61) - 1
_HASH_BASE = 1_000_003
_EXAMPLES = 5
_EXAMPLE_CHARS = 200


class LoopingDetection(Evaluator):
    """Scores how repetitive an answer is: unique sentences, repeated substring, compression."""

    name: ClassVar[str] = "looping"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})
    kind = "lexical"
    direction = "higher_is_better"
    threshold: float | None = DEFAULT_THRESHOLD
    operating_points = OPERATING_POINTS

    def __init__(
        self,
        *,
        unique_sentences_threshold: float | None = None,
        longest_repeated_substring_threshold: float | None = None,
        compression_ratio_threshold: float | None = None,
        min_sentence_chars: int = 3,
        min_compression_bytes: int = MIN_COMPRESSION_BYTES,
        max_chars: int = 100_000,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            unique_sentences_threshold: Pass when the ratio is at least this (default: threshold).
            longest_repeated_substring_threshold: Pass when at most this (default: threshold).
            compression_ratio_threshold: Pass when at least this (default: threshold).
            min_sentence_chars: Shorter sentences are left out of the unique-sentence ratio.
            min_compression_bytes: Shorter texts are not judged by their compression (1.0).
            max_chars: Size of the window (the text's end) the repeated substring is sought in.
            **options: ``threshold`` (an operating point's name, or a number for all three
                metrics), ``inline``, ``timeout_s``, ...
        """
        super().__init__(**options)
        self.thresholds: dict[str, float | None] = {
            "unique_sentences": unit_option(
                "looping",
                "unique_sentences_threshold",
                unique_sentences_threshold,
                self.threshold_of(UNIQUE),
            ),
            "longest_repeated_substring": unit_option(
                "looping",
                "longest_repeated_substring_threshold",
                longest_repeated_substring_threshold,
                self.threshold_of(REPEATED),
            ),
            "compression_ratio": unit_option(
                "looping",
                "compression_ratio_threshold",
                compression_ratio_threshold,
                self.threshold_of(COMPRESSION),
            ),
        }
        self.min_sentence_chars = _positive_int(min_sentence_chars, "min_sentence_chars", 0)
        self.min_compression_bytes = _positive_int(
            min_compression_bytes, "min_compression_bytes", 0
        )
        self.max_chars = _positive_int(max_chars, "max_chars", 2)

    def evaluate(self, record: RagRecord) -> list[Score]:
        text = record.response or ""
        return [
            self._unique_sentences(text),
            self._longest_repeated_substring(text),
            self._compression_ratio(text),
        ]

    def _unique_sentences(self, text: str) -> Score:
        sentences = [" ".join(s.split()).casefold() for s in _SENTENCE_END.split(text)]
        counted = Counter(s for s in sentences if len(s) >= self.min_sentence_chars)
        total = sum(counted.values())
        value = len(counted) / total if total else 1.0
        repeated = [
            {"sentence": s[:_EXAMPLE_CHARS], "count": n}
            for s, n in counted.most_common(_EXAMPLES)
            if n > 1
        ]
        return self.score(
            value,
            name=UNIQUE,
            threshold=self.thresholds["unique_sentences"],
            direction="higher_is_better",
            explanation=f"{len(counted)} unique of {total} sentences",
            details={"sentences": total, "unique": len(counted), "repeated": repeated},
        )

    def _longest_repeated_substring(self, text: str) -> Score:
        window = text[-self.max_chars :]
        length, start = longest_repeat(window)
        substring = window[start : start + length] if length else ""
        frequency = window.count(substring) if length else 0
        value = min(1.0, length * frequency / len(window)) if window else 0.0
        return self.score(
            value,
            name=REPEATED,
            threshold=self.thresholds["longest_repeated_substring"],
            direction="lower_is_better",
            explanation=f"{length} characters repeated {frequency} times in {len(window)}",
            details={
                "length": length,
                "frequency": frequency,
                "substring": substring[:_EXAMPLE_CHARS],
                "analysed_chars": len(window),
                "truncated": len(window) < len(text),
            },
        )

    def _compression_ratio(self, text: str) -> Score:
        raw = text.encode("utf-8", "surrogatepass")
        compressed = len(zlib.compress(raw, 9))
        ratio = compressed / len(raw) if raw else 1.0
        expected = expected_compressed_bytes(len(raw))
        judged = len(raw) >= self.min_compression_bytes
        value = min(1.0, compressed / expected) if judged else 1.0
        explanation = (
            f"{len(raw)} bytes compress to {compressed} ({ratio:.2f}), "
            f"{compressed / expected:.2f} of the {expected:.0f} ordinary text of that length "
            "compresses to"
            if judged
            else f"{len(raw)} bytes: too short to judge by compression"
        )
        return self.score(
            value,
            name=COMPRESSION,
            threshold=self.thresholds["compression_ratio"],
            direction="higher_is_better",
            explanation=explanation,
            details={
                "bytes": len(raw),
                "compressed_bytes": compressed,
                "ratio": round(min(1.0, ratio), 4),
                "expected_compressed_bytes": round(expected, 1),
                "judged": judged,
            },
        )


def expected_compressed_bytes(size: int) -> float:
    """What ordinary English text of ``size`` UTF-8 bytes compresses to with zlib (level 9)."""
    return EXPECTED_SLOPE * size + EXPECTED_OFFSET


def longest_repeat(text: str) -> tuple[int, int]:
    """The longest substring occurring at least twice (overlaps allowed).

    Returns:
        ``(length, start of its first occurrence)``; ``(0, 0)`` when no character repeats.
    """
    n = len(text)
    prefix = [0] * (n + 1)
    h = 0
    for i, ch in enumerate(text):
        h = (h * _HASH_BASE + ord(ch)) % _HASH_MOD
        prefix[i + 1] = h
    # Gallop up (cheap: a repeat is usually found early in the scan), then bisect.
    best, start, step = 0, 0, 1
    high = n - 1
    while best + step <= high:
        found = _repeat_of_length(text, prefix, best + step)
        if found is None:
            high = best + step - 1
            break
        best, start = best + step, found
        step *= 2
    while best < high:
        mid = (best + high + 1) // 2
        found = _repeat_of_length(text, prefix, mid)
        if found is None:
            high = mid - 1
        else:
            best, start = mid, found
    return best, start


def _repeat_of_length(text: str, prefix: list[int], length: int) -> int | None:
    """Start of the first occurrence of a repeated ``length``-long substring, if any."""
    power = pow(_HASH_BASE, length, _HASH_MOD)
    first: dict[int, int] = {}
    hashes = ((b - a * power) % _HASH_MOD for a, b in zip(prefix, prefix[length:], strict=False))
    for i, value in enumerate(hashes):
        j = first.setdefault(value, i)
        if j != i and text[j : j + length] == text[i : i + length]:
            return j
    return None


def _positive_int(value: int, option: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"looping: {option} must be an integer >= {minimum}, got {value!r}")
    return value
