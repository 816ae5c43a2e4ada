"""The capture side's families: requests by status, retrieval health, internal errors, drops.

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


class RequestMetrics(Families):
    """``ragtrace_requests_total``, ``ragtrace_retrieval_chunks``, ``ragtrace_retrieval_top_score``,
    ``ragtrace_internal_errors_total``, ``ragtrace_dropped_records_total`` and
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
        self.records_shipped = self.counter(
            "ragtrace_records_shipped",
            "Records shipped to a remote queue, to be evaluated by ragtrace workers.",
            [],
        )
        self._by_status = {s: self.requests.labels(app, s) for s in REQUEST_STATUSES}
        self._chunks = self.retrieval_chunks.labels(app)
        self._top_score = self.retrieval_top_score.labels(app)
        self._drop_children: dict[str, Any] = {}

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

    def count_shipped(self, n: int) -> None:
        """``n`` records reached the remote queue (a shipping application)."""
        if n > 0:
            self.records_shipped.inc(n)
