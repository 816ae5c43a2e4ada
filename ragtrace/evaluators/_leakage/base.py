"""``LeakageEvaluator``: findings in, one Score per checked target (answer, context) out.

A subclass says how to find things in a batch of texts (``detect``); this module scans the
record's texts, leaves out allowed values, and builds the Scores, their explanations and their
masked ``details`` (the package doc describes them). The findings of recent chunk texts are
remembered (``RecentFindings``): retrieved passages recur across requests, and a passage seen
again is not scanned again.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace._redaction.findings import Finding, comparable
from ragtrace.evaluators._base import BatchEvaluator
from ragtrace.evaluators._leakage.allow import AllowList
from ragtrace.evaluators._text import clean_text

TARGETS = ("context", "answer")
DEFAULT_MAX_CHARS = 200_000
DEFAULT_MAX_CHUNKS = 100
MAX_FINDINGS_LISTED = 50
_MASK_CHARS = 40
_MIN_SUBSTRING = 4  # shorter values are compared with the context's findings only
_ALNUM = re.compile(r"[^\W_]")
RECENT_TEXTS = 1_024  # chunk texts whose findings are remembered, per evaluator
RECENT_MAX_CHARS = 20_000  # longer chunks are scanned every time (the memory a text holds)


class RecentFindings:
    """The findings of recently scanned texts, so that a text seen again is not scanned again.

    ``detect`` must give a text the same findings whatever texts it is scanned with (it does:
    each is scanned on its own); a text longer than ``max_chars`` is never kept.
    """

    def __init__(self, size: int = RECENT_TEXTS, max_chars: int = RECENT_MAX_CHARS) -> None:
        self._size = size
        self._max_chars = max_chars
        self._kept: OrderedDict[str, tuple[Finding, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, int]:
        """Its sizes only: an evaluator sent to a worker process starts with nothing kept."""
        return {"size": self._size, "max_chars": self._max_chars}

    def __setstate__(self, state: dict[str, int]) -> None:
        self._size, self._max_chars = state["size"], state["max_chars"]
        self._kept = OrderedDict()
        self._lock = threading.Lock()

    def findings(
        self,
        texts: Sequence[str],
        detect: Callable[[Sequence[str]], list[list[Finding]]],
        keep: Sequence[bool],
    ) -> list[list[Finding]]:
        """``detect(texts)``, each text scanned once: the texts found here and repeats within
        ``texts`` are left out of the call; the new findings of the texts whose ``keep`` is true
        are remembered."""
        known: dict[str, tuple[Finding, ...]] = {}
        with self._lock:
            for text in texts:
                kept = self._kept.get(text)
                if kept is not None:
                    self._kept.move_to_end(text)
                    known[text] = kept
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            known.update(zip(missing, map(tuple, detect(missing)), strict=True))
            kept_texts = {t for t, k in zip(texts, keep, strict=True) if k}
            with self._lock:
                for text in missing:
                    if text in kept_texts and len(text) <= self._max_chars:
                        self._kept[text] = known[text]
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        return [list(known[t]) for t in texts]


def mask(value: str) -> str:
    """``value`` with every letter and digit replaced by ``*`` (at most 40 characters shown)."""
    masked = _ALNUM.sub("*", value)
    return masked if len(masked) <= _MASK_CHARS else masked[: _MASK_CHARS - 1] + "…"


class LeakageEvaluator(BatchEvaluator):
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
        self._recent = RecentFindings()

    def detect(self, texts: Sequence[str]) -> list[list[Finding]]:
        """The findings of each text (subclasses implement this, batching any model)."""
        raise NotImplementedError

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        texts: list[str] = []
        is_chunk: list[bool] = []
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
            is_chunk += [False] + [True] * len(chunk_texts)
            cut = [answer_cut] + [c for _, c in chunk_texts]
            plans.append((first, len(chunks), cut))
        found = self._recent.findings(texts, self.detect, is_chunk) if texts else []
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
