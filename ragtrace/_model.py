"""Core records: what ragtrace captures from a request and what evaluators say about it.

Plain frozen dataclasses with no dependencies, so every part of ragtrace (integrations,
pipeline, evaluators, sinks) and every user can build and read them cheaply::

    record = RagRecord(trace_id="...", span_id="...", query="Who wrote it?",
                       chunks=(Chunk("It was written by Ada.", id="doc-1", score=0.82),),
                       response="Ada wrote it.")
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Direction = Literal["higher_is_better", "lower_is_better"]
EvaluatorKind = Literal["lexical", "model", "judge", "human"]
RequestStatus = Literal["ok", "error", "abandoned", "incomplete"]
ToolStatus = Literal["ok", "error"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrieved chunk, as the retriever returned it (records keep them in rank order).

    Attributes:
        text: The chunk's content (possibly truncated or redacted by the capture settings).
        id: The document or node id, when the framework or the metadata carries one.
        score: The retriever's similarity or relevance score, when known.
        metadata: The chunk's metadata, made JSON-safe.
        source: Which retriever returned it (the retriever's name; inside an agent's tool,
            ``tool/retriever``).
        query: The query this chunk was retrieved for, when it is not the user's own (an
            agent's tool call, a sub-question, a rewritten follow-up).
        step: The index of the retrieval step that returned it (0 for the first), when a
            request retrieved more than once.
    """

    text: str
    id: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=_empty)
    source: str | None = None
    query: str | None = None
    step: int | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of a conversation, as the record keeps it.

    Attributes:
        role: ``user`` or ``assistant``.
        content: The message's text (cut and redacted like the query).
    """

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """The conversation a request (one user turn) belongs to.

    Attributes:
        session_id: The conversation's id (LangGraph's ``thread_id``, a chat history's
            session, ``ragtrace.session(...)``), when the app has one.
        user_id: The user's id, when the app gives one.
        turn: How many user turns came before this one in the conversation, when known.
        history: The earlier turns the app had when it answered (oldest first, at most
            ``Config.max_history_turns`` of them).
        standalone_query: The question as the app rewrote it to stand on its own (a
            follow-up such as "and the other one?" made explicit), when it did.
    """

    session_id: str | None = None
    user_id: str | None = None
    turn: int | None = None
    history: tuple[Turn, ...] = ()
    standalone_query: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool an agent called while answering.

    Attributes:
        name: The tool's name.
        arguments: Its arguments as the model gave them (JSON or text, cut and redacted).
        status: ``ok``, or ``error`` when the tool raised or reported an error.
        error: What went wrong (type and message), for a failed call.
        duration_s: Wall time of the call in seconds.
        call_id: The model's id for the call, when it gave one.
    """

    name: str
    arguments: str | None = None
    status: ToolStatus = "ok"
    error: str | None = None
    duration_s: float = 0.0
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class RagRecord:
    """One finished request of a RAG application.

    Attributes:
        trace_id: 32 lowercase hex digits of the OpenTelemetry trace.
        span_id: 16 lowercase hex digits of the RAG root span.
        query: The user's question.
        chunks: Every retrieved chunk, in rank order (several retrievers: in the order they ran).
        response: The final answer (joined from the chunks of a streamed answer).
        reference: A ground-truth answer; only offline or when a label exists.
        app: The application name given to `ragtrace.init`.
        model: The model that produced the answer, when known.
        start_ns: Start time, UTC nanoseconds since the epoch.
        end_ns: End time, UTC nanoseconds since the epoch.
        error: The error that ended the request (type and message), if any.
        status: ``ok``, ``error``, ``abandoned`` (a stream the consumer stopped reading) or
            ``incomplete`` (the framework never reported the end; evicted after a timeout).
        attributes: Anything else worth keeping (route, tenant, token usage, truncation marks).
        conversation: The conversation this turn belongs to, when the app has one.
        tool_calls: The tools an agent called while answering, in the order they started.
        llm_calls: How many LLM calls the request made (an agent's steps).
    """

    trace_id: str
    span_id: str
    query: str | None
    chunks: tuple[Chunk, ...] = ()
    response: str | None = None
    reference: str | None = None
    app: str = "default"
    model: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    error: str | None = None
    status: RequestStatus = "ok"
    attributes: Mapping[str, Any] = field(default_factory=_empty)
    conversation: Conversation | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    llm_calls: int = 0

    @property
    def duration_s(self) -> float:
        """Wall time of the request in seconds (0 when the times are unknown)."""
        return max(0, self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True, slots=True)
class Score:
    """One evaluator result about one record.

    Attributes:
        name: The metric, e.g. ``groundedness``.
        value: Normalised to [0, 1] where the metric allows; None when the evaluation failed.
        label: A short verdict (``pass``, ``fail``, ``toxic``, ...).
        explanation: Why, in words a reviewer can read.
        direction: Whether a higher value is better.
        threshold: The pass/fail boundary the value was compared with.
        passed: The outcome of that comparison, when there was a threshold.
        error: Set when the evaluator failed (raised, timed out, returned a bad value).
        evaluator_kind: lexical, model, judge or human.
        model: The model that produced the score, if any.
        details: Per-item verdicts and anything else (JSON-safe).
    """

    name: str
    value: float | None
    label: str | None = None
    explanation: str | None = None
    direction: Direction = "higher_is_better"
    threshold: float | None = None
    passed: bool | None = None
    error: str | None = None
    evaluator_kind: EvaluatorKind = "lexical"
    model: str | None = None
    details: Mapping[str, Any] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        if self.value is not None and (
            not isinstance(self.value, int | float) or math.isnan(self.value)
        ):
            raise ValueError(f"Score {self.name!r}: value must be a real number or None")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluator's run over one record.

    Attributes:
        evaluator: The evaluator's name.
        scores: What it said (one error Score when it raised, hung or returned a bad value).
        start_ns: When the call started, UTC nanoseconds.
        end_ns: When it returned (or was given up on), UTC nanoseconds.
    """

    evaluator: str
    scores: tuple[Score, ...]
    start_ns: int
    end_ns: int

    @property
    def duration_s(self) -> float:
        return max(0, self.end_ns - self.start_ns) / 1e9
