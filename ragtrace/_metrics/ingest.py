"""Prometheus families of ``ragtrace ingest``: what arrived, what was kept, what was dropped.

- ``ragtrace_ingest_requests_total{outcome}``: OTLP exports by answer (``accepted``,
  ``bad_request``, ``invalid_id``, ``too_large``, ``unsupported_media_type``,
  ``unauthorized``, ``busy``: refused for now, 429 or 503, the sender retries).
- ``ragtrace_ingest_requests_refused_total{reason}``: the ``busy`` exports by why
  (``in_flight``: ``ingest_max_in_flight`` exports were being processed already, answered before
  decoding; ``buffer_full``: the assembly buffer; ``queue_full``: the evaluation queue;
  ``shutting_down``).
- ``ragtrace_ingest_spans_total``: spans received in accepted exports.
- ``ragtrace_ingest_spans_refused_total``: spans in exports answered 429 after decoding (the
  sender retries); an export refused ``in_flight`` is not decoded, so its spans are not known.
- ``ragtrace_ingest_dropped_spans_total{reason}``: spans not kept (``invalid_id``: the spans of
  an export refused with 400 for an invalid id; ``spans_per_trace``, ``late_span``,
  ``duplicate_span``, ``evaluation_span``: ragtrace's own evaluation results coming back
  through the Collector).
- ``ragtrace_ingest_traces_total{reason}``: traces completed (``complete``, ``remote_parent``,
  ``max_age``, ``shutdown``).
- ``ragtrace_ingest_traces_unmapped_total{reason}``: completed traces that gave no record
  (``no_convention``: no span of a known convention; ``no_request``; ``mapper_error``).
- ``ragtrace_ingest_records_total{convention}``: records rebuilt (each of an accepted export).
- ``ragtrace_ingest_records_incomplete_total{convention}``: records rebuilt from the parts of a
  request whose own span never arrived (status ``incomplete``).
- ``ragtrace_ingest_records_dropped_total{reason}``: records rebuilt that never reached the
  evaluation queue (``shutdown``: still waiting for room when the drain ran out of time).
- ``ragtrace_ingest_records_waiting``: records rebuilt and waiting for room in the queue.
- ``ragtrace_ingest_missing_fields_total{convention,field}``: records that lacked ``query``,
  ``chunks``, ``chunk_text`` or ``response`` because the instrumentation did not capture it.
- ``ragtrace_ingest_open_traces`` and ``ragtrace_ingest_buffer_bytes``: the assembly buffer.
- ``ragtrace_ingest_completion_delay_seconds``: from a trace's last span to its record.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from ragtrace._metrics.families import Families
from ragtrace._metrics.labels import LabelCap, one_of

REQUEST_OUTCOMES = (
    "accepted",
    "bad_request",
    "invalid_id",
    "too_large",
    "unsupported_media_type",
    "unauthorized",
    "busy",
)
REFUSAL_REASONS = ("in_flight", "buffer_full", "queue_full", "shutting_down")
DELAY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120, 300)


class IngestMetrics(Families):
    """The ingest families, registered in the injected registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self._labels = LabelCap(64)
        self.requests = self.counter(
            "ragtrace_ingest_requests", "OTLP trace exports received, by answer.", ["outcome"]
        )
        self.refused = self.counter(
            "ragtrace_ingest_requests_refused",
            "OTLP trace exports refused for now (429, 503, RESOURCE_EXHAUSTED, UNAVAILABLE; the "
            "sender retries), by reason.",
            ["reason"],
        )
        for reason in REFUSAL_REASONS:
            self.refused.labels(reason)
        self.spans = self.counter("ragtrace_ingest_spans", "Spans in accepted exports.", [])
        self.spans_refused = self.counter(
            "ragtrace_ingest_spans_refused",
            "Spans in exports refused with 429 because the buffer was full (retried by senders).",
            [],
        )
        self.dropped_spans = self.counter(
            "ragtrace_ingest_dropped_spans", "Spans received and not kept, by reason.", ["reason"]
        )
        self.traces = self.counter(
            "ragtrace_ingest_traces", "Traces completed, by why they were complete.", ["reason"]
        )
        self.unmapped = self.counter(
            "ragtrace_ingest_traces_unmapped",
            "Completed traces that gave no record, by reason.",
            ["reason"],
        )
        self.records = self.counter(
            "ragtrace_ingest_records",
            "Records rebuilt from spans and handed to the pipeline, by convention.",
            ["convention"],
        )
        self.incomplete = self.counter(
            "ragtrace_ingest_records_incomplete",
            "Records rebuilt from the parts of a request whose own span never arrived.",
            ["convention"],
        )
        self.records_dropped = self.counter(
            "ragtrace_ingest_records_dropped",
            "Records rebuilt from accepted exports that never reached the evaluation queue, "
            "by reason.",
            ["reason"],
        )
        self.records_dropped.labels("shutdown")
        self.waiting = self.gauge(
            "ragtrace_ingest_records_waiting",
            "Records rebuilt and waiting for room in the evaluation queue.",
        )
        self.missing = self.counter(
            "ragtrace_ingest_missing_fields",
            "Rebuilt records lacking a field the instrumentation did not capture.",
            ["convention", "field"],
        )
        self.open_traces = self.gauge("ragtrace_ingest_open_traces", "Traces being assembled.")
        self.buffer_bytes = self.gauge(
            "ragtrace_ingest_buffer_bytes", "Encoded bytes of the spans being assembled."
        )
        self.completion_delay = self.histogram(
            "ragtrace_ingest_completion_delay_seconds",
            "From a trace's last span arriving to its record being handed on.",
            [],
            DELAY_BUCKETS,
        )

    def count_request(self, outcome: str, spans: int = 0) -> None:
        self.requests.labels(one_of(outcome, REQUEST_OUTCOMES)).inc()
        if outcome == "accepted":
            self.spans.inc(spans)
        elif outcome == "busy":
            self.spans_refused.inc(spans)
        elif outcome == "invalid_id":
            self.count_dropped("invalid_id", spans)

    def count_refused(self, reason: str) -> None:
        self.refused.labels(one_of(reason, REFUSAL_REASONS)).inc()

    def count_dropped(self, reason: str, count: int = 1) -> None:
        if count:
            self.dropped_spans.labels(self._labels(reason)).inc(count)

    def count_trace(self, reason: str, delay_s: float) -> None:
        self.traces.labels(self._labels(reason)).inc()
        self.completion_delay.observe(max(0.0, delay_s))

    def count_unmapped(self, reason: str) -> None:
        self.unmapped.labels(self._labels(reason)).inc()

    def count_record(
        self, convention: str, missing: tuple[str, ...], incomplete: bool = False
    ) -> None:
        label = self._labels(convention)
        self.records.labels(label).inc()
        if incomplete:
            self.incomplete.labels(label).inc()
        for name in missing:
            self.missing.labels(label, self._labels(name)).inc()

    def count_record_dropped(self, reason: str, count: int = 1) -> None:
        if count:
            self.records_dropped.labels(self._labels(reason)).inc(count)

    def observe_buffer(self, open_traces: int, buffered_bytes: int, waiting: int = 0) -> None:
        self.open_traces.set(open_traces)
        self.buffer_bytes.set(buffered_bytes)
        self.waiting.set(waiting)
