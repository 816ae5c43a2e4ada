"""The capture side's families: requests by status, retrieval health, internal errors, drops
(of records, and of spans ragtrace's own exporter could not send).

These are updated on the application's request path, so labelled children are made once and
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


class RequestMetrics(Families):
    """``ragtrace_requests_total``, ``ragtrace_retrieval_chunks``, ``ragtrace_retrieval_top_score``,
    ``ragtrace_internal_errors_total``, ``ragtrace_dropped_records_total``,
    ``ragtrace_dropped_spans_total`` and ``ragtrace_records_shipped_total``.

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

    def observe_record(self, record: RagRecord) -> None:
        """Count one finished request and its retrieval health."""
        self._by_status[record.status].inc()
        if record.chunks or record.query is not None:
            self._chunks.observe(len(record.chunks))
        scores = [c.score for c in record.chunks if c.score is not None]
        if scores:
            self._top_score.observe(max(scores))

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
