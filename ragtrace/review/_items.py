"""What the review queue holds: items (a flagged request with its scores), labels, filters.

``ReviewItem`` is one request that the rules sent to people, with everything needed to judge it
(query, chunks in rank order, answer, every score with its details, trace and span ids, app,
model, time; the conversation it belongs to and the tools an agent called) and why it was queued
(``reasons``, ``priority``). ``Label`` is what a person says
about it. ``QueueFilter`` selects items for the queue page, ``ragtrace review list`` and the
export. All are frozen dataclasses with a JSON form, so both stores keep them the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from ragtrace._model import Chunk, Conversation, Score, ToolCall
from ragtrace._text import jsonable

VERDICTS = ("good", "bad", "unsure")
FAILURE_TYPES = (
    "hallucination",
    "irrelevant_retrieval",
    "missing_context",
    "unsafe",
    "pii",
    "other",
)
LabelledState = Literal["no", "yes", "all"]
"""Which items a queue filter keeps by label: ``no`` (not labelled yet), ``yes`` (labelled)
or ``all``."""
MIN_SEARCH_CHARS = 3
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Reason:
    """Why an item is in the queue.

    Attributes:
        name: The rule (``secret``, ``pii``, ``toxicity``, ``disagreement``, ``score_failed``,
            ``random_sample``).
        priority: How urgent (higher first).
        evaluator: The score the rule looked at, when there is one.
        detail: A short human-readable why.
    """

    name: str
    priority: int
    evaluator: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "priority": self.priority,
            "evaluator": self.evaluator,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reason:
        return cls(
            name=str(data.get("name", "")),
            priority=int(data.get("priority", 0)),
            evaluator=_opt_str(data.get("evaluator")),
            detail=str(data.get("detail") or ""),
        )


@dataclass(frozen=True, slots=True)
class StoredScore:
    """A Score as kept by the queue, with the name of the evaluator that made it."""

    evaluator: str
    score: Score

    def to_json(self) -> dict[str, Any]:
        s = self.score
        value = s.value if s.value is not None and math.isfinite(s.value) else None
        return {
            "evaluator": self.evaluator,
            "name": s.name,
            "value": value,
            "label": s.label,
            "explanation": s.explanation,
            "direction": s.direction,
            "threshold": s.threshold,
            "passed": s.passed,
            "error": s.error,
            "kind": s.evaluator_kind,
            "model": s.model,
            "details": jsonable(dict(s.details)),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StoredScore:
        value = data.get("value")
        threshold = data.get("threshold")
        details = data.get("details")
        passed = data.get("passed")
        score = Score(
            name=str(data.get("name", "")),
            value=float(value) if isinstance(value, int | float) else None,
            label=_opt_str(data.get("label")),
            explanation=_opt_str(data.get("explanation")),
            direction=(
                "lower_is_better"
                if data.get("direction") == "lower_is_better"
                else "higher_is_better"
            ),
            threshold=float(threshold) if isinstance(threshold, int | float) else None,
            passed=passed if isinstance(passed, bool) else None,
            error=_opt_str(data.get("error")),
            evaluator_kind=_kind(data.get("kind")),
            model=_opt_str(data.get("model")),
            details=details if isinstance(details, Mapping) else {},
        )
        return cls(str(data.get("evaluator") or score.name), score)


@dataclass(frozen=True, slots=True)
class Label:
    """A person's verdict on one item.

    Attributes:
        verdict: ``good``, ``bad`` or ``unsure``.
        failure_type: What went wrong (one of ``FAILURE_TYPES``), for a bad answer.
        notes: Free text.
        corrected_answer: What the answer should have been (exported as ``reference``).
        reviewer: Who labelled it.

    Raises:
        ValueError: An unknown verdict or failure type, naming the allowed ones.
    """

    verdict: str
    failure_type: str | None = None
    notes: str | None = None
    corrected_answer: str | None = None
    reviewer: str | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {self.verdict!r}")
        if self.failure_type is not None and self.failure_type not in FAILURE_TYPES:
            raise ValueError(
                f"failure type must be one of {', '.join(FAILURE_TYPES)}; got {self.failure_type!r}"
            )
        for name in ("notes", "corrected_answer", "reviewer"):
            value = getattr(self, name)
            if value is not None and not value.strip():
                object.__setattr__(self, name, None)


@dataclass(frozen=True, slots=True)
class StoredLabel:
    """A label as stored: the label, its id, the item it belongs to and when it was given."""

    id: int
    item_id: int
    created_ns: int
    label: Label


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One queued request.

    Attributes:
        id: The store's id (0 before it is stored).
        trace_id: Trace of the request ("" when unknown).
        span_id: RAG root span of the request ("" when unknown).
        app: Application name.
        model: Model that answered, when known.
        request_ns: When the request ended (UTC ns since the epoch; queue time if unknown).
        queued_ns: When the item entered the queue.
        query: The question (redacted and cut as the sink's limits say).
        response: The answer.
        reference: A reference answer the record carried, if any.
        chunks: Retrieved chunks, in rank order.
        scores: Every score the evaluators gave, with details.
        reasons: Why it was queued.
        priority: Queue order (higher first).
        status: The request's status (ok, error, ...).
        error: The request's error, if any.
        attributes: Other captured attributes (JSON-safe).
        verdict: The latest label's verdict, or None while unlabelled.
        failure_type: The latest label's failure type.
        labelled_ns: When the latest label was given.
        conversation: The conversation the request is a turn of (session and user ids, turn
            number, earlier turns, standalone question), when the app has one.
        tool_calls: The tools an agent called while answering, in the order they started.
        llm_calls: How many LLM calls the request made.
    """

    trace_id: str
    span_id: str
    app: str
    query: str | None
    response: str | None
    chunks: tuple[Chunk, ...] = ()
    scores: tuple[StoredScore, ...] = ()
    reasons: tuple[Reason, ...] = ()
    priority: int = 0
    model: str | None = None
    request_ns: int = 0
    queued_ns: int = 0
    reference: str | None = None
    status: str = "ok"
    error: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    id: int = 0
    verdict: str | None = None
    failure_type: str | None = None
    labelled_ns: int | None = None
    conversation: Conversation | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    llm_calls: int = 0

    @property
    def session_id(self) -> str | None:
        """The conversation's session id, when there is one."""
        return None if self.conversation is None else self.conversation.session_id

    @property
    def primary_reason(self) -> str:
        """The name of the most urgent reason ("" when there is none)."""
        if not self.reasons:
            return ""
        return max(self.reasons, key=lambda r: r.priority).name

    def score_named(self, name: str) -> StoredScore | None:
        """The first stored score called ``name``."""
        return next((s for s in self.scores if s.score.name == name), None)


def chunk_to_json(chunk: Chunk) -> dict[str, Any]:
    """A chunk as a JSON object (``text``, ``id``, ``score``, ``metadata``, ``source``, and
    ``used`` when it is known whether the answer's model call saw it)."""
    score = chunk.score if chunk.score is not None and math.isfinite(chunk.score) else None
    found = {
        "text": chunk.text,
        "id": chunk.id,
        "score": score,
        "metadata": jsonable(dict(chunk.metadata)),
        "source": chunk.source,
    }
    if chunk.used is not None:
        found["used"] = chunk.used
    return found


def chunk_from_json(data: object) -> Chunk:
    """The inverse of ``chunk_to_json``; a bare string is a chunk's text."""
    if isinstance(data, str):
        return Chunk(data)
    if not isinstance(data, Mapping):
        return Chunk(str(data))
    score = data.get("score")
    metadata = data.get("metadata")
    return Chunk(
        text=str(data.get("text") or ""),
        id=_opt_str(data.get("id")),
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        metadata=metadata if isinstance(metadata, Mapping) else {},
        source=_opt_str(data.get("source")),
        used=used if isinstance(used := data.get("used"), bool) else None,
    )


@dataclass(frozen=True, slots=True)
class QueueFilter:
    """Which items to show.

    Attributes:
        reason: Only items queued for this reason.
        evaluator: Only items with a score of this name (or from this evaluator); with
            ``min_score`` / ``max_score``, that score must lie in the range.
        min_score: Lowest score value (inclusive); applies to any score without ``evaluator``.
        max_score: Highest score value (inclusive).
        app: Only this application.
        since_ns: Requests that ended at or after this time (UTC ns).
        until_ns: Requests that ended before this time.
        labelled: ``no`` (the queue: still unlabelled), ``yes`` or ``all``.
        verdict: Only items whose latest label has this verdict.
        search: Case-insensitive text the question must contain (at least
            ``MIN_SEARCH_CHARS``: the trigram index answers from three).
        session: Only the turns of this conversation (its session id, exactly).
    """

    reason: str | None = None
    evaluator: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    app: str | None = None
    since_ns: int | None = None
    until_ns: int | None = None
    labelled: LabelledState = "no"
    verdict: str | None = None
    search: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, str) and not value.strip():
                object.__setattr__(self, f.name, None if f.name != "labelled" else "no")
        if self.labelled not in ("no", "yes", "all"):
            raise ValueError(f"labelled must be no, yes or all; got {self.labelled!r}")
        for name in ("min_score", "max_score"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int | float) or math.isnan(value)):
                raise ValueError(f"{name} must be a number, got {value!r}")
        if self.search is not None and len(self.search.strip()) < MIN_SEARCH_CHARS:
            raise ValueError(
                f"the question search needs at least {MIN_SEARCH_CHARS} characters, "
                f"got {self.search!r}"
            )
        for name in ("since_ns", "until_ns"):
            value = getattr(self, name)
            if value is not None and not -(2**63) <= value < 2**63:
                raise ValueError(f"{name} is out of range: {value!r}")


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _kind(value: object) -> Any:
    return value if value in ("lexical", "model", "judge", "human") else "lexical"
