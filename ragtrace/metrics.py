"""Prometheus metric families of ragtrace, registered on an injected registry.

Nothing registers at import. ``Metrics(registry)`` creates the families; ``unregister()``
removes them again (so ``ragtrace.init`` can be called twice in one process). Label values are
bounded: the app label is fixed per instance, sites and reasons are names from the code.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Histogram

from ragtrace.model import RagRecord

CHUNK_BUCKETS = (0, 1, 2, 3, 5, 8, 10, 20, 50, 100)
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 21))


class Metrics:
    """The capture-side metric families (requests, retrieval health, errors, drops)."""

    def __init__(self, registry: CollectorRegistry, app: str) -> None:
        self.registry = registry
        self.app = app
        self.requests = Counter(
            "ragtrace_requests",
            "Finished RAG requests by status (ok, error, abandoned, incomplete).",
            ["app", "status"],
            registry=registry,
        )
        self.retrieval_chunks = Histogram(
            "ragtrace_retrieval_chunks",
            "Chunks retrieved per request.",
            ["app"],
            buckets=CHUNK_BUCKETS,
            registry=registry,
        )
        self.retrieval_top_score = Histogram(
            "ragtrace_retrieval_top_score",
            "Score of the best retrieved chunk per request.",
            ["app"],
            buckets=SCORE_BUCKETS,
            registry=registry,
        )
        self.internal_errors = Counter(
            "ragtrace_internal_errors",
            "Errors inside ragtrace, by the place they happened.",
            ["site"],
            registry=registry,
        )
        self.dropped_records = Counter(
            "ragtrace_dropped_records",
            "Records not handed on, by reason.",
            ["reason"],
            registry=registry,
        )
        self._collectors = [
            self.requests,
            self.retrieval_chunks,
            self.retrieval_top_score,
            self.internal_errors,
            self.dropped_records,
        ]
        self._requests_by_status = {
            status: self.requests.labels(app, status)
            for status in ("ok", "error", "abandoned", "incomplete")
        }
        self._chunks = self.retrieval_chunks.labels(app)
        self._top_score = self.retrieval_top_score.labels(app)

    def observe_record(self, record: RagRecord) -> None:
        """Count one finished request and its retrieval health."""
        self._requests_by_status[record.status].inc()
        if record.chunks or record.query is not None:
            self._chunks.observe(len(record.chunks))
        scores = [c.score for c in record.chunks if c.score is not None]
        if scores:
            self._top_score.observe(max(scores))

    def count_internal_error(self, site: str) -> None:
        self.internal_errors.labels(site).inc()

    def count_drop(self, reason: str) -> None:
        self.dropped_records.labels(reason).inc()

    def unregister(self) -> None:
        """Remove the families from the registry (idempotent)."""
        for collector in self._collectors:
            with contextlib.suppress(KeyError):
                self.registry.unregister(collector)
