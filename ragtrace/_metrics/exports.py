"""The families of ragtrace's outbound channels beyond spans: evaluation log records its own
OTLP exporter could not send, and annotations posted to (or dropped on the way to) Phoenix.

Every drop has a reason; label values are fixed sets, so the families stay small.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from ragtrace._metrics.families import Families
from ragtrace._metrics.requests import SPAN_DROP_REASONS

LOG_DROP_REASONS = SPAN_DROP_REASONS  # one core sends both (ragtrace._runtime.bounded_export)
SINKS = ("phoenix",)
ANNOTATION_DROP_REASONS = (
    "queue_full",
    "export_failed",
    "rejected",
    "span_not_found",
    "no_span",
    "shutdown",
)
"""Why an annotation was not delivered: the sink's buffer was full; the server stayed
unreachable (or answered 5xx / 429) through every retry; it refused the batch (a 4xx, such as
a bad request or a missing API key); the request's span never reached it within the wait; the
record had no span id; the process shut down with the annotation still buffered."""


class ExportMetrics(Families):
    """``ragtrace_dropped_log_records_total{reason}``, ``ragtrace_annotations_sent_total{sink}``
    and ``ragtrace_dropped_annotations_total{sink,reason}``.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self.dropped_log_records = self.counter(
            "ragtrace_dropped_log_records",
            "Evaluation log records ragtrace's own OTLP exporter did not send, by reason "
            "(export_failed, queue_full, shutdown).",
            ["reason"],
        )
        self.annotations_sent = self.counter(
            "ragtrace_annotations_sent",
            "Scores delivered as annotations to a trace backend (sink: phoenix).",
            ["sink"],
        )
        self.dropped_annotations = self.counter(
            "ragtrace_dropped_annotations",
            "Scores not delivered as annotations, by sink and reason (queue_full, "
            "export_failed, rejected, span_not_found, no_span, shutdown).",
            ["sink", "reason"],
        )
        self._log_drops = {r: self.dropped_log_records.labels(r) for r in LOG_DROP_REASONS}
        # The one sink there is, with every reason, shown at 0 from the start (so a rate()
        # over them is defined before the first drop).
        self._sent = {SINKS[0]: self.annotations_sent.labels(SINKS[0])}
        self._annotation_drops = {
            (SINKS[0], r): self.dropped_annotations.labels(SINKS[0], r)
            for r in ANNOTATION_DROP_REASONS
        }

    def count_dropped_log_records(self, reason: str, n: int = 1) -> None:
        """``n`` log records were not sent, for ``reason`` (one of ``LOG_DROP_REASONS``)."""
        if n > 0:
            self._log_drops[reason if reason in self._log_drops else "export_failed"].inc(n)

    def count_annotations_sent(self, sink: str, n: int) -> None:
        if n > 0:
            child = self._sent.get(sink)
            (child or self.annotations_sent.labels(sink)).inc(n)

    def count_dropped_annotations(self, sink: str, reason: str, n: int = 1) -> None:
        """``n`` annotations were not delivered, for ``reason`` (``ANNOTATION_DROP_REASONS``)."""
        if n > 0:
            known = reason if reason in ANNOTATION_DROP_REASONS else "export_failed"
            child = self._annotation_drops.get((sink, known))
            (child or self.dropped_annotations.labels(sink, known)).inc(n)
