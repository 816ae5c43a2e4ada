"""The capture side's families: requests by status, retrieval health, internal errors, drops
(of records, and of spans ragtrace's own exporter could not send).

The request path only summarises a finished request (``summarize``); ``Metrics`` applies the
summary later, in a batch (``ragtrace.exporters.deferred``). Labelled children are made once and
cached.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from ragtrace.exporters.families import MAX_CACHED_CHILDREN, Families, LabelCaps
from ragtrace.model import RagRecord

CHUNK_BUCKETS = (0, 1, 2, 3, 5, 8, 10, 20, 50, 100)
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 21))
REQUEST_STATUSES = ("ok", "error", "abandoned", "incomplete")
SPAN_DROP_REASONS = ("export_failed", "queue_full", "shutdown")

CAPPED_KINDS = ("retriever", "llm")
CAPPED_ATTRIBUTE = "ragtrace.span.attributes_capped"
"""The record attribute capture writes: attributes left off its spans, by span kind."""

RecordSummary = tuple[str, int, float | None, tuple[tuple[str, int], ...]]


class RequestMetrics(Families):
    """``ragtrace_requests_total``, ``ragtrace_retrieval_chunks``, ``ragtrace_retrieval_top_score``,
    ``ragtrace_internal_errors_total``, ``ragtrace_dropped_records_total``,
    ``ragtrace_dropped_spans_total``, ``ragtrace_span_attributes_capped_total`` and
    ``ragtrace_records_shipped_total``.

    Args:
        registry: Where the families register.
        app: The application's label value (already capped).
        caps: The shared label caps.
    """

    def __init__(self, registry: CollectorRegistry, app: str, caps: LabelCaps) -> None:
        super().__init__(registry)
        self._caps = caps
        self.requests = self.counter(
            "ragtrace_requests",
            "Finished RAG requests by status (ok, error, abandoned, incomplete).",
            ["app", "status"],
        )
        self.retrieval_chunks = self.histogram(
            "ragtrace_retrieval_chunks", "Chunks retrieved per request.", ["app"], CHUNK_BUCKETS
        )
        self.retrieval_top_score = self.histogram(
            "ragtrace_retrieval_top_score",
            "Score of the best retrieved chunk per request.",
            ["app"],
            SCORE_BUCKETS,
        )
        self.internal_errors = self.counter(
            "ragtrace_internal_errors",
            "Errors inside ragtrace, by the place they happened.",
            ["site"],
        )
        self.dropped_records = self.counter(
            "ragtrace_dropped_records", "Records not handed on, by reason.", ["reason"]
        )
        self.dropped_spans = self.counter(
            "ragtrace_dropped_spans",
            "Spans ragtrace's own OTLP exporter did not send, by reason (export_failed, "
            "queue_full, shutdown).",
            ["reason"],
        )
        self.attributes_capped = self.counter(
            "ragtrace_span_attributes_capped",
            "Span attributes left off retriever and LLM spans (low-ranked chunks, middle prompt "
            "messages) so the span stays within the tracer provider's attribute count limit; "
            "the record keeps them all.",
            ["kind"],
        )
        self.records_shipped = self.counter(
            "ragtrace_records_shipped",
            "Records shipped to a remote queue, to be evaluated by ragtrace workers.",
            [],
        )
        self._by_status = {s: self.requests.labels(app, s) for s in REQUEST_STATUSES}
        self._chunks = self.retrieval_chunks.labels(app)
        self._top_score = self.retrieval_top_score.labels(app)
        self._drop_children: dict[str, Any] = {}
        self._span_drops = {r: self.dropped_spans.labels(r) for r in SPAN_DROP_REASONS}
        self._capped = {k: self.attributes_capped.labels(k) for k in CAPPED_KINDS}

    @staticmethod
    def summarize(record: RagRecord) -> RecordSummary:
        """What the request families need of ``record``: (status, chunks or -1 when it
        retrieved nothing and had no query, best chunk score or None, span attributes capped
        by kind)."""
        chunks = record.chunks
        top: float | None = None
        for chunk in chunks:
            score = chunk.score
            if score is not None and (top is None or score > top):
                top = score
        counted = len(chunks) if chunks or record.query is not None else -1
        capped = record.attributes.get(CAPPED_ATTRIBUTE) if record.attributes else None
        by_kind = tuple(capped.items()) if isinstance(capped, dict) else ()
        return record.status, counted, top, by_kind

    def observe_summary(
        self,
        status: str,
        chunks: int,
        top_score: float | None,
        capped: tuple[tuple[str, int], ...] = (),
    ) -> None:
        """Count one finished request and its retrieval health (see ``summarize``)."""
        self._by_status[status].inc()
        for kind, n in capped:
            child = self._capped.get(kind)
            if child is not None and isinstance(n, int) and n > 0:
                child.inc(n)
        if chunks >= 0:
            self._chunks.observe(chunks)
        if top_score is not None:
            self._top_score.observe(top_score)

    def observe_record(self, record: RagRecord) -> None:
        """Count one finished request and its retrieval health, now."""
        self.observe_summary(*self.summarize(record))

    def count_internal_error(self, site: str) -> None:
        self.internal_errors.labels(self._caps.sites(site)).inc()

    def count_drop(self, reason: str) -> None:
        child = self._drop_children.get(reason)
        if child is None:
            child = self.dropped_records.labels(self._caps.reasons(reason))
            if len(self._drop_children) < MAX_CACHED_CHILDREN:
                self._drop_children[reason] = child
        child.inc()

    def count_dropped_spans(self, reason: str, n: int = 1) -> None:
        """``n`` spans were not sent: ``reason`` is one of ``SPAN_DROP_REASONS``."""
        if n > 0:
            self._span_drops[reason if reason in self._span_drops else "export_failed"].inc(n)

    def count_shipped(self, n: int) -> None:
        """``n`` records reached the remote queue (a shipping application)."""
        if n > 0:
            self.records_shipped.inc(n)
