"""What every mapper shares: the contract, and the record it builds from what it found.

A mapper reads one assembled trace (``TraceView``) written by one instrumentation convention
and returns one ``MappedRecord`` per RAG request it finds (a trace may hold none, or several
top-level requests). It never guesses: a field the spans do not carry stays None (or the
chunks stay empty) and is named in ``missing`` so the service can count it::

    class MyMapper:
        convention = "mine"
        def detects(self, view: TraceView) -> bool: ...
        def map(self, view: TraceView) -> list[MappedRecord]: ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ragtrace._ingest.spans import STATUS_ERROR, IngestSpan, TraceView
from ragtrace._model import Chunk, Conversation, RagRecord, RequestStatus, ToolCall

# Fields a record may lack because the instrumentation did not capture them.
MISSING_FIELDS = ("query", "chunks", "chunk_text", "response")
DEFAULT_APP = "unknown_service"


@dataclass(frozen=True, slots=True)
class MappedRecord:
    """One request rebuilt from spans.

    Attributes:
        record: The record handed to the pipeline.
        convention: Which mapper built it (``openinference``, ``genai``, ``openllmetry``,
            ``ragtrace``).
        missing: Fields the spans did not carry (from ``MISSING_FIELDS``); evaluators that
            need them skip the record and count it as skipped.
        root_lost: The request's own span never arrived: the record was rebuilt from its
            parts and is marked ``incomplete``.
    """

    record: RagRecord
    convention: str
    missing: tuple[str, ...] = ()
    root_lost: bool = False


class RequestsFailed(Exception):
    """Some requests of a trace could not be mapped: ``records`` holds the ones that could,
    ``errors`` why the others could not (the service hands on the first, counts the second)."""

    def __init__(self, records: list[MappedRecord], errors: list[BaseException]) -> None:
        super().__init__(f"{len(errors)} request(s) could not be mapped: {errors[0]!r}")
        self.records = records
        self.errors = errors


class Mapper(Protocol):
    """Turns one convention's spans into records."""

    convention: str

    def detects(self, view: TraceView) -> bool:
        """True if the trace carries this convention's spans."""
        ...

    def map(self, view: TraceView) -> list[MappedRecord]:
        """One record per RAG request in the trace (may be empty)."""
        ...


def parse_json(text: str | None) -> Any:
    """``text`` parsed as JSON, or None when it is absent or not JSON."""
    if not text or text[0] not in '[{"':
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def build_record(
    *,
    view: TraceView,
    root: IngestSpan,
    convention: str,
    query: str | None,
    chunks: Sequence[Chunk] | None,
    response: str | None,
    model: str | None = None,
    retrieved: bool = False,
    attributes: Mapping[str, Any] | None = None,
    app: str | None = None,
    status: RequestStatus | None = None,
    conversation: Conversation | None = None,
    tool_calls: Sequence[ToolCall] = (),
    llm_calls: int = 0,
) -> MappedRecord:
    """A ``MappedRecord`` for the request under ``root``: ids, times, app and status from the
    root span, the rest as found. ``retrieved``: a retrieval span was seen, so no ``chunks``
    means their text was not captured (``chunk_text`` missing). ``status`` (``abandoned``,
    ``incomplete``) is used when the root span did not end in error. An agent's turn also
    carries its ``conversation``, ``tool_calls`` and ``llm_calls``."""
    missing = [
        name
        for name, absent in (
            ("query", query is None),
            ("chunks", not chunks),
            ("chunk_text", retrieved and not chunks),
            ("response", response is None),
        )
        if absent
    ]
    error = None
    if root.status_code == STATUS_ERROR:
        error = root.status_message or exception_text(root) or "error"
    record = RagRecord(
        trace_id=root.trace_id,
        span_id=root.span_id,
        query=query,
        chunks=tuple(chunks or ()),
        response=response,
        app=app or root.service_name or _any_service(view) or DEFAULT_APP,
        model=model,
        start_ns=root.start_ns,
        end_ns=root.end_ns,
        error=error,
        status="error" if error else (status or "ok"),
        attributes=dict(attributes or {}),
        conversation=conversation,
        tool_calls=tuple(tool_calls),
        llm_calls=llm_calls,
    )
    return MappedRecord(record, convention, tuple(missing))


def exception_text(span: IngestSpan) -> str | None:
    """``Type: message`` of the span's first ``exception`` event, or None."""
    for event in span.events:
        if event.name == "exception":
            kind = event.attributes.get("exception.type")
            message = event.attributes.get("exception.message")
            parts = [str(p) for p in (kind, message) if p]
            if parts:
                return ": ".join(parts)
    return None


def _any_service(view: TraceView) -> str | None:
    for span in view.spans:
        if span.service_name:
            return span.service_name
    return None
