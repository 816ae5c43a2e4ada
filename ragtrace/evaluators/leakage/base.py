"""What the leakage evaluators (PII, sensitive data) share: findings, masking, answer/context.

A ``LeakageEvaluator`` subclass says how to find things in a batch of texts
(``detect(texts) -> list[list[Finding]]``); this module turns the findings into one Score per
checked target, after H2O Eval Studio's PII and sensitive-data leakage evaluators:

- ``<name>.answer``: the response (the catalogue's generation leakages);
- ``<name>.context``: the retrieved chunks together (its retrieval leakages), emitted only when
  the record has chunks.

Each value is 1.0 when nothing was found and 0.0 when something was: higher is better, default
threshold 0.5, so ``passed`` is the catalogue's "no leakage" boolean and the mean over records
is its pass rate (the primary metric); one minus it is the leakage rate. A target whose
threshold is None (an evaluator's operating point may say so: ``pii_leakage.context``) is
information, not an alarm: ``passed`` is None and the label ``found`` or ``none``.

Found values are never echoed: labels and explanations name types and counts only, and each
finding in ``details["findings"]`` carries its type, offsets, detector, chunk index (context)
and a ``masked`` preview in which every letter and digit is replaced by ``*`` (separators kept,
so ``a.b@c.com`` reads ``*.*@*.***``). An answer finding also says whether the same value
occurs in the retrieved context (letters and digits compared case-insensitively, among the
context's findings or, for values of 4+ such characters, anywhere in its text): ``in_context``
true means the answer repeated what retrieval handed it, false that the model produced it.

Bad input is tolerated: None becomes empty text, bytes are decoded as UTF-8 with replacement,
other objects go through ``str()``, lone surrogates become ``?`` (offsets unchanged). Each text
is scanned up to ``max_chars`` characters; ``details["truncated"]`` says when a text was cut.
At most ``max_chunks`` chunks are scanned (``details["chunks_skipped"]`` counts the rest) and
``MAX_FINDINGS_LISTED`` (50) findings listed; ``counts`` covers them all.

``allow=`` names values that are not leaks for this application: its product names (which a
small NER model reads as people: "Aurora" is a PERSON to spaCy's small English model), its
public support address, the example key of its documentation. An entry matches a finding whose
text is the same once case, spacing and punctuation are ignored and a leading "the"/"a"/"an"
is dropped; an entry starting with ``REGEXP:`` must match the whole finding text, with or
without that article (case-insensitive). Allowed findings are left out of the value but counted in
``details["allowed"]``, so nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ragtrace.evaluators.base import Evaluator
from ragtrace.model import RagRecord, Score

TARGETS = ("context", "answer")
DEFAULT_MAX_CHARS = 200_000
DEFAULT_MAX_CHUNKS = 100
MAX_FINDINGS_LISTED = 50
_MASK_CHARS = 40
_MIN_SUBSTRING = 4  # shorter values are compared with the context's findings only
_ALNUM = re.compile(r"[^\W_]")
_NOT_ALNUM = re.compile(r"[\W_]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ARTICLE = re.compile(r"(?i)^(?:the|an?)\s+")
REGEXP_PREFIX = "REGEXP:"


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


def clean_text(value: object, max_chars: int) -> tuple[str, bool]:
    """``value`` as scannable text (see the module doc) and whether it was cut at ``max_chars``."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray):
        text = bytes(value).decode("utf-8", "replace")
    else:
        text = str(value)
    truncated = len(text) > max_chars
    if truncated:
        text = text[:max_chars]
    if not text.isascii():
        text = _SURROGATE.sub("?", text)  # lone surrogates: not encodable, same length
    return text, truncated


def mask(value: str) -> str:
    """``value`` with every letter and digit replaced by ``*`` (at most 40 characters shown)."""
    masked = _ALNUM.sub("*", value)
    return masked if len(masked) <= _MASK_CHARS else masked[: _MASK_CHARS - 1] + "…"


def resolve_overlaps(findings: Iterable[Finding], rank: Callable[[Finding], int]) -> list[Finding]:
    """Drop findings overlapping a better one (lower ``rank`` first, then longer), by offset."""
    kept: list[Finding] = []
    for f in sorted(findings, key=lambda f: (rank(f), f.start - f.end, f.start)):
        if all(f.end <= k.start or f.start >= k.end for k in kept):
            kept.append(f)
    return sorted(kept, key=lambda f: (f.start, f.end))


def comparable(value: str) -> str:
    """A value's letters and digits, case-folded: how answer and context values are compared."""
    return _NOT_ALNUM.sub("", value).casefold()


class AllowList:
    """Values that are not leaks (see the module doc): exact (normalised) and ``REGEXP:``."""

    def __init__(self, entries: Iterable[str] | None, owner: str) -> None:
        if isinstance(entries, str):
            raise ValueError(f"{owner}: allow must be a list of values, got a string {entries!r}")
        self.values: set[str] = set()
        self.patterns: list[re.Pattern[str]] = []
        for entry in entries or ():
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError(f"{owner}: allow entries must be non-empty strings, got {entry!r}")
            if entry.startswith(REGEXP_PREFIX):
                try:
                    self.patterns.append(re.compile(entry[len(REGEXP_PREFIX) :], re.IGNORECASE))
                except re.error as exc:
                    raise ValueError(f"{owner}: bad allow pattern {entry!r}: {exc}") from None
            elif normal := _normalised(entry):
                self.values.add(normal)

    def __bool__(self) -> bool:
        return bool(self.values or self.patterns)

    def allows(self, value: str) -> bool:
        """Whether the finding text ``value`` is an allowed value."""
        if _normalised(value) in self.values:
            return True
        stripped = value.strip()
        bare = _ARTICLE.sub("", stripped)
        return any(p.fullmatch(stripped) or p.fullmatch(bare) for p in self.patterns)


def _normalised(value: str) -> str:
    return comparable(_ARTICLE.sub("", value.strip()))


class LeakageEvaluator(Evaluator):
    """Base of the regex-suite leakage evaluators: answer and context Scores from findings."""

    requires: ClassVar[frozenset[str]] = frozenset({"response"})
    direction = "higher_is_better"
    threshold: float | None = 0.5
    what: ClassVar[str] = "item"  # "PII entity", "secret": used in explanations

    def __init__(
        self,
        *,
        targets: Sequence[str] = TARGETS,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_chunks: int = DEFAULT_MAX_CHUNKS,
        allow: Iterable[str] | None = None,
        **options: Any,
    ) -> None:
        self.allow = AllowList(allow, self.name)
        if isinstance(targets, str) or not targets or set(targets) - set(TARGETS):
            raise ValueError(
                f"{self.name}: targets must be a non-empty list of {list(TARGETS)}, got {targets!r}"
            )
        self.targets = tuple(t for t in TARGETS if t in targets)
        if "answer" not in self.targets:
            self.requires = frozenset({"chunks"})  # type: ignore[misc]
        super().__init__(**options)
        for option, value in (("max_chars", max_chars), ("max_chunks", max_chunks)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{self.name}: {option} must be a positive integer")
        self.max_chars = max_chars
        self.max_chunks = max_chunks

    def detect(self, texts: Sequence[str]) -> list[list[Finding]]:
        """The findings of each text (subclasses implement this, batching any model)."""
        raise NotImplementedError

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        texts: list[str] = []
        plans = []
        for record in records:
            answer, answer_cut = clean_text(record.response, self.max_chars)
            chunks = list(record.chunks or ())
            chunk_texts = [
                clean_text(getattr(c, "text", c), self.max_chars) for c in chunks[: self.max_chunks]
            ]
            first = len(texts)
            texts.append(answer)
            texts.extend(t for t, _ in chunk_texts)
            cut = [answer_cut] + [c for _, c in chunk_texts]
            plans.append((first, len(chunks), cut))
        found = self.detect(texts) if texts else []
        allowed = [0] * len(texts)
        if self.allow:
            for i, (text, findings) in enumerate(zip(texts, found, strict=True)):
                kept = [f for f in findings if not self.allow.allows(text[f.start : f.end])]
                allowed[i] = len(findings) - len(kept)
                found[i] = kept
        out = []
        for first, n_chunks, cut in plans:
            n_scanned = len(cut) - 1
            answer, answer_found = texts[first], found[first]
            ctx = texts[first + 1 : first + 1 + n_scanned]
            ctx_found = found[first + 1 : first + 1 + n_scanned]
            scores = []
            if "context" in self.targets and n_chunks:
                dropped = n_chunks - n_scanned
                ctx_allowed = sum(allowed[first + 1 : first + 1 + n_scanned])
                scores.append(
                    self._context_score(ctx, ctx_found, any(cut[1:]), dropped, ctx_allowed)
                )
            if "answer" in self.targets:
                scores.append(
                    self._answer_score(answer, answer_found, cut[0], ctx, ctx_found, allowed[first])
                )
            out.append(scores)
        return out

    def _answer_score(
        self,
        text: str,
        findings: list[Finding],
        truncated: bool,
        ctx: list[str],
        ctx_found: list[list[Finding]],
        allowed: int,
    ) -> Score:
        ctx_values = {
            comparable(t[f.start : f.end]) for t, fs in zip(ctx, ctx_found, strict=True) for f in fs
        }
        ctx_text = comparable(" ".join(ctx))
        listed = []
        for f in findings:
            value = comparable(text[f.start : f.end])
            item = _describe(f, text)
            item["in_context"] = value in ctx_values or (
                len(value) >= _MIN_SUBSTRING and value in ctx_text
            )
            listed.append(item)
        from_context = sum(1 for item in listed if item["in_context"])
        extra = f"; {from_context} also in the retrieved context" if findings else ""
        return self._score("answer", findings, listed, truncated, extra, {"allowed": allowed})

    def _context_score(
        self,
        ctx: list[str],
        ctx_found: list[list[Finding]],
        truncated: bool,
        dropped: int,
        allowed: int,
    ) -> Score:
        listed = []
        for index, (text, findings) in enumerate(zip(ctx, ctx_found, strict=True)):
            for f in findings:
                listed.append({**_describe(f, text), "chunk": index})
        all_found = [f for fs in ctx_found for f in fs]
        chunks_hit = sorted({item["chunk"] for item in listed})
        extra = f" in {len(chunks_hit)} of {len(ctx)} chunks" if all_found else ""
        more = {"chunks": chunks_hit, "chunks_skipped": dropped, "allowed": allowed}
        return self._score("context", all_found, listed, truncated or dropped > 0, extra, more)

    def _score(
        self,
        target: str,
        findings: list[Finding],
        listed: list[dict[str, Any]],
        truncated: bool,
        extra: str,
        more: dict[str, Any],
    ) -> Score:
        counts = Counter(f.entity_type for f in findings)
        if findings:
            kinds = ", ".join(f"{t} x{n}" for t, n in sorted(counts.items()))
            explanation = f"{target}: {len(findings)} {self.what}(s) found ({kinds}){extra}"
        else:
            explanation = f"{target}: no {self.what} found"
        details = {
            "counts": dict(sorted(counts.items())),
            "findings": listed[:MAX_FINDINGS_LISTED],
            "findings_listed": min(len(listed), MAX_FINDINGS_LISTED),
            "truncated": truncated,
            **more,
        }
        name = f"{self.name}.{target}"
        threshold = self.threshold_of(name)
        score = self.score(
            0.0 if findings else 1.0,
            name=name,
            explanation=explanation,
            details=details,
            threshold=threshold,
        )
        if threshold is None:  # information, not an alarm: no verdict
            score = replace(
                score, threshold=None, passed=None, label="found" if findings else "none"
            )
        return score


def _describe(f: Finding, text: str) -> dict[str, Any]:
    return {
        "type": f.entity_type,
        "start": f.start,
        "end": f.end,
        "detector": f.detector,
        "score": round(f.score, 3),
        "masked": mask(text[f.start : f.end]),
    }
