"""The capture side's families: requests by status, retrieval health, internal errors, drops
(of records, and of spans ragtrace's own exporter could not send).

The request path only summarises a finished request (``summarize``); ``Metrics`` applies the
summary later, in a batch (``ragtrace._metrics.deferred``). Labelled children are made once and
cached.
"""

from __future__ import annotations

from typing import Any, get_args

from prometheus_client import CollectorRegistry

from ragtrace._metrics.families import MAX_CACHED_CHILDREN, Families, LabelCaps
from ragtrace._model import RagRecord, RequestStatus

CHUNK_BUCKETS = (0, 1, 2, 3, 5, 8, 10, 20, 50, 100)
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 21))
REQUEST_STATUSES = get_args(RequestStatus)
SPAN_DROP_REASONS = ("export_failed", "queue_full", "shutdown")

CAPPED_KINDS = ("retriever", "llm")
CAPPED_ATTRIBUTE = "ragtrace.span.attributes_capped"
"""The record attribute capture writes: attributes left off its spans, by span kind."""

RecordSummary = tuple[str, str, int, float | None, tuple[tuple[str, int], ...]]


class RequestMetrics(Families):
    """``ragtrace_requests_total``, ``ragtrace_retrieval_chunks``, ``ragtrace_retrieval_top_score``,
    ``ragtrace_internal_errors_total``, ``ragtrace_dropped_records_total``,
    ``ragtrace_dropped_spans_total``, ``ragtrace_span_attributes_capped_total``,
    ``ragtrace_records_shipped_total`` and ``ragtrace_app_labels_folded``.

    The request families are labelled with each record's own ``app`` (a process that rebuilds
    other services' records, ``ragtrace ingest``, counts each under its service's name), capped
    by ``caps.apps``: past the cap, apps read ``other`` and ``ragtrace_app_labels_folded`` says
    how many distinct ones were folded so.

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
        self.apps_folded = self.gauge(
            "ragtrace_app_labels_folded",
            'Distinct app names past the app label cap (max_app_labels), reported as app="other".',
            multiprocess_mode="max",
        )
        self.apps_folded.set(caps.apps.folded)
        caps.apps.on_fold = self.apps_folded.set
        self._by_app: dict[str, tuple[dict[str, Any], Any, Any]] = {}
        self._children(app)
        self._drop_children: dict[str, Any] = {}
        self._span_drops = {r: self.dropped_spans.labels(r) for r in SPAN_DROP_REASONS}
        self._capped = {k: self.attributes_capped.labels(k) for k in CAPPED_KINDS}

    def _children(self, app: str) -> tuple[dict[str, Any], Any, Any]:
        """The labelled children of one app (its label capped), made once."""
        found = self._by_app.get(app)
        if found is None:
            label = self._caps.apps(app)
            found = (
                {s: self.requests.labels(label, s) for s in REQUEST_STATUSES},
                self.retrieval_chunks.labels(label),
                self.retrieval_top_score.labels(label),
            )
            if len(self._by_app) < MAX_CACHED_CHILDREN:
                self._by_app[app] = found
        return found

    @staticmethod
    def summarize(record: RagRecord) -> RecordSummary:
        """What the request families need of ``record``: (app, status, chunks or -1 when it
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
        return record.app, record.status, counted, top, by_kind

    def observe_summary(
        self,
        app: str,
        status: str,
        chunks: int,
        top_score: float | None,
        capped: tuple[tuple[str, int], ...] = (),
    ) -> None:
        """Count one finished request and its retrieval health (see ``summarize``)."""
        by_status, chunk_counts, top_scores = self._children(app)
        by_status[status].inc()
        for kind, n in capped:
            child = self._capped.get(kind)
            if child is not None and isinstance(n, int) and n > 0:
                child.inc(n)
        if chunks >= 0:
            chunk_counts.observe(chunks)
        if top_score is not None:
            top_scores.observe(top_score)

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
