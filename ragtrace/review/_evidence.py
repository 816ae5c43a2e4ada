"""What the record page shows beside the raw text: unsupported sentences, per-chunk relevance.

Evaluators say which answer sentences they found unsupported, and how relevant each chunk was,
in their ``Score.details``. These shapes are recognised (any evaluator may use them):

Unsupported parts of the answer:
    - ``unsupported``, ``unsupported_sentences``, ``unsupported_claims``, ``hallucinated``,
      ``hallucinated_sentences``, ``contradicted``: a list of sentences (strings, or objects
      with the text under ``sentence``, ``text``, ``claim`` or ``statement``).
    - ``sentences``, ``claims``, ``statements``, ``verdicts``: a list of objects with the text
      (keys as above) and a verdict: ``supported: false``, ``grounded: false``,
      ``faithful: false``, ``hallucinated: true``, or ``verdict`` one of no / unsupported /
      not supported / contradicted / hallucinated / false.
    - ``spans``, ``hallucination_spans``: character ranges into the answer, as
      ``{"start": s, "end": e}`` or ``[s, e]``.
    - ``least_grounded``: one object with the weakest sentence under ``text``, marked only when
      the score failed (ragtrace's ``groundedness``).

Per-chunk relevance:
    - ``chunks``, ``per_chunk``, ``chunk_scores``, ``contexts``, ``relevance``: a list of numbers
      aligned with the chunks, or of objects with ``score`` / ``relevance`` / ``relevancy`` /
      ``value`` and optionally ``index`` or ``chunk`` (0-based), ``rank`` (1-based) or ``id``
      (the chunk id), as ragtrace's ``context_relevance`` writes them.

A sentence is found in the answer as written, else ignoring case and spacing; one that cannot
be found is listed under the answer instead of highlighted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._model import Chunk
from ragtrace.review._items import StoredScore

SENTENCE_LISTS = (
    "unsupported",
    "unsupported_sentences",
    "unsupported_claims",
    "hallucinated",
    "hallucinated_sentences",
    "contradicted",
)
VERDICT_LISTS = ("sentences", "claims", "statements", "verdicts")
SPAN_LISTS = ("spans", "hallucination_spans")
CHUNK_LISTS = ("chunks", "per_chunk", "chunk_scores", "contexts", "relevance")
TEXT_KEYS = ("sentence", "text", "claim", "statement")
VALUE_KEYS = ("score", "relevance", "relevancy", "value")
WEAKEST = "least_grounded"
NEGATIVE = frozenset(
    {"no", "unsupported", "not supported", "contradicted", "hallucinated", "false"}
)
MAX_SENTENCES = 200


@dataclass(frozen=True)
class Flag:
    """One part of the answer an evaluator found unsupported.

    Attributes:
        evaluator: The score that said so.
        start: Start offset in the answer (None when the sentence was not found in it).
        end: End offset.
        text: The sentence as the evaluator gave it.
    """

    evaluator: str
    start: int | None
    end: int | None
    text: str


def unsupported(response: str | None, scores: Sequence[StoredScore]) -> list[Flag]:
    """The flagged parts of ``response``, in answer order (unfound sentences last)."""
    answer = response or ""
    flags: list[Flag] = []
    for stored in scores:
        details = stored.score.details
        name = stored.score.name
        texts = _sentences(details)
        weakest = _text_of(details.get(WEAKEST))
        if weakest and stored.score.passed is False:
            texts.append(weakest)
        for text in texts[:MAX_SENTENCES]:
            where = _locate(answer, text)
            start, end = (None, None) if where is None else where
            flags.append(Flag(name, start, end, text))
        for start, end in _spans(details, len(answer))[:MAX_SENTENCES]:
            flags.append(Flag(name, start, end, answer[start:end]))
    return sorted(flags, key=lambda f: (f.start is None, f.start or 0, f.end or 0))


def merged_ranges(flags: Sequence[Flag]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Non-overlapping highlight ranges with the evaluators behind each."""
    ranges: list[tuple[int, int, tuple[str, ...]]] = []
    for flag in flags:
        if flag.start is None or flag.end is None or flag.end <= flag.start:
            continue
        if ranges and flag.start < ranges[-1][1]:
            start, end, names = ranges[-1]
            merged = names if flag.evaluator in names else (*names, flag.evaluator)
            ranges[-1] = (start, max(end, flag.end), merged)
        else:
            ranges.append((flag.start, flag.end, (flag.evaluator,)))
    return ranges


def chunk_relevance(
    scores: Sequence[StoredScore], chunks: Sequence[Chunk]
) -> list[tuple[str, list[float | None]]]:
    """Per score that rates chunks: its value for each chunk, in the chunks' order."""
    columns: list[tuple[str, list[float | None]]] = []
    for stored in scores:
        for key in CHUNK_LISTS:
            values = stored.score.details.get(key)
            if isinstance(values, list) and values:
                column = _aligned(values, chunks)
                if any(v is not None for v in column):
                    columns.append((stored.score.name, column))
                    break
    return columns


def _sentences(details: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key in SENTENCE_LISTS:
        for entry in _as_list(details.get(key)):
            text = entry if isinstance(entry, str) else _text_of(entry)
            if text:
                found.append(text)
    for key in VERDICT_LISTS:
        for entry in _as_list(details.get(key)):
            if isinstance(entry, Mapping) and _is_negative(entry):
                text = _text_of(entry)
                if text:
                    found.append(text)
    return found


def _is_negative(entry: Mapping[str, Any]) -> bool:
    for key in ("supported", "grounded", "faithful"):
        if entry.get(key) is False:
            return True
    if entry.get("hallucinated") is True:
        return True
    verdict = entry.get("verdict")
    return isinstance(verdict, str) and verdict.strip().lower() in NEGATIVE


def _text_of(entry: object) -> str | None:
    if not isinstance(entry, Mapping):
        return None
    for key in TEXT_KEYS:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _spans(details: Mapping[str, Any], length: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for key in SPAN_LISTS:
        for entry in _as_list(details.get(key)):
            if isinstance(entry, Mapping):
                pair = [entry.get("start"), entry.get("end")]
            elif isinstance(entry, list) and len(entry) == 2:
                pair = entry
            else:
                continue
            start, end = (v if isinstance(v, int) and _is_int(v) else -1 for v in pair)
            if 0 <= start < end <= length:
                spans.append((start, end))
    return spans


def _locate(answer: str, sentence: str) -> tuple[int, int] | None:
    text = sentence.strip()
    if not text or not answer:
        return None
    at = answer.find(text)
    if at >= 0:
        return at, at + len(text)
    words = text.split()
    if len(words) > 200:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, answer, flags=re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def _aligned(values: list[Any], chunks: Sequence[Chunk]) -> list[float | None]:
    column: list[float | None] = [None] * len(chunks)
    ids = {c.id: i for i, c in enumerate(chunks) if c.id is not None}
    for position, entry in enumerate(values):
        if _is_number(entry):
            index: int | None = position
            value: Any = entry
        elif isinstance(entry, Mapping):
            value = next((entry[k] for k in VALUE_KEYS if _is_number(entry.get(k))), None)
            index = _index_of(entry, ids, position)
        else:
            continue
        if index is not None and 0 <= index < len(column) and _is_number(value):
            column[index] = float(value)
    return column


def _index_of(entry: Mapping[str, Any], ids: Mapping[str, int], position: int) -> int | None:
    for key in ("index", "chunk"):
        if _is_int(entry.get(key)):
            return int(entry[key])
    if _is_int(entry.get("rank")):
        return int(entry["rank"]) - 1
    if entry.get("id") is not None:
        return ids.get(str(entry["id"]))
    return position


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
