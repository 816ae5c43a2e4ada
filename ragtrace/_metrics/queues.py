"""Prometheus families for operating a fleet of ``ragtrace worker`` processes on a Redis queue.

Gauges read from Redis by the worker (each worker reports the same stream-wide values; take
``max`` across workers): ``ragtrace_queue_backlog`` (entries in the stream: unread or
unacknowledged), ``ragtrace_queue_pending`` (delivered, not yet acknowledged),
``ragtrace_queue_lag`` (never delivered to the group), ``ragtrace_queue_dead_letters`` (entries
in the dead-letter stream). Counters per worker: ``ragtrace_queue_acknowledged_total``,
``ragtrace_queue_reclaimed_total``, ``ragtrace_queue_dead_lettered_total{reason}``
(``max_deliveries``, ``undecodable``), ``ragtrace_queue_duplicates_total{reason}`` (records not
published again: ``published`` already, or ``reclaimed`` by another worker meanwhile),
``ragtrace_queue_delivery_failures_total{sink}`` (entries evaluated and published whose results
a sink did not confirm delivered: left pending, delivered again; ``otel_logs``, ``otel_spans``,
``phoenix``, ``review``, ``other``),
``ragtrace_queue_ack_lost_total`` (published, but no longer this worker's to acknowledge),
``ragtrace_queue_claims_renewed_total`` (the heartbeat),
``ragtrace_queue_group_recreated_total`` (the group was gone: Redis lost its data),
``ragtrace_queue_resets_total{reason}`` (the stream or the group was found lost or rewound,
counted by the process that recorded it first: ``stream_reset``, ``group_reset``),
``ragtrace_queue_data_lost_total{reason}`` (records added and not yet published when that
happened, as estimated: the fleet's sum is the estimate ``ragtrace queue stats`` shows),
``ragtrace_queue_consumers_removed_total`` (idle consumers with nothing pending) and
``ragtrace_queue_deleted_pending_total``. Histograms: ``ragtrace_worker_batch_duration_seconds``
(from reading a batch to acknowledging it) and ``ragtrace_evaluation_delay_seconds`` (from the
request's end to its scores being published). ``ragtrace_worker_last_ack_timestamp_seconds`` is
the wall time of this worker's last acknowledgement.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry

from ragtrace._metrics.families import Families
from ragtrace._metrics.labels import LabelCap, one_of

DEAD_LETTER_REASONS = ("max_deliveries", "undecodable")
DUPLICATE_REASONS = ("published", "reclaimed")
DELIVERY_SINKS = {
    "OtelEvaluationLogSink": "otel_logs",
    "OtelEvaluationSink": "otel_spans",
    "PhoenixAnnotationSink": "phoenix",
    "ReviewSink": "review",
}
"""The sink label of ``delivery_failures_total`` by sink type (any other: ``other``)."""
LOSS_REASONS = ("stream_reset", "group_reset")
"""Mirrors ``ragtrace._pipeline.queues.redis_losses.REASONS`` (exporters import no queue code)."""
BATCH_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
DELAY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


class QueueMetrics(Families):
    """The fleet's families, registered in the injected registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry)
        self._reasons = LabelCap(len(DEAD_LETTER_REASONS) + 4)
        self.backlog = self.gauge(
            "ragtrace_queue_backlog", "Entries in the stream (unread or unacknowledged)."
        )
        self.pending = self.gauge(
            "ragtrace_queue_pending", "Entries delivered to a worker and not acknowledged."
        )
        self.lag = self.gauge("ragtrace_queue_lag", "Entries not yet delivered to the group.")
        self.dead_letters = self.gauge(
            "ragtrace_queue_dead_letters", "Entries in the dead-letter stream."
        )
        self.acknowledged = self.counter(
            "ragtrace_queue_acknowledged", "Entries this worker published and acknowledged.", []
        )
        self.reclaimed = self.counter(
            "ragtrace_queue_reclaimed", "Entries taken over from an idle consumer.", []
        )
        self.dead_lettered = self.counter(
            "ragtrace_queue_dead_lettered",
            "Entries moved to the dead-letter stream, by reason.",
            ["reason"],
        )
        self.duplicates = self.counter(
            "ragtrace_queue_duplicates",
            "Entries evaluated but not published again, by reason (published already; "
            "reclaimed by another worker meanwhile).",
            ["reason"],
        )
        self.ack_lost = self.counter(
            "ragtrace_queue_ack_lost",
            "Entries published whose acknowledgement found them no longer this worker's.",
            [],
        )
        self.renewed = self.counter(
            "ragtrace_queue_claims_renewed",
            "Claims on entries being evaluated renewed by the heartbeat.",
            [],
        )
        self.group_recreated = self.counter(
            "ragtrace_queue_group_recreated",
            "Times the consumer group was gone (Redis lost its data) and was created again.",
            [],
        )
        self.resets = self.counter(
            "ragtrace_queue_resets",
            "Times the stream or the consumer group was found lost or rewound, by reason.",
            ["reason"],
        )
        self.data_lost = self.counter(
            "ragtrace_queue_data_lost",
            "Records added and not yet published when the stream or the group was lost or "
            "rewound (an estimate), by reason.",
            ["reason"],
        )
        self.consumers_removed = self.counter(
            "ragtrace_queue_consumers_removed",
            "Idle consumers with nothing pending removed from the group.",
            [],
        )
        self.deleted_pending = self.counter(
            "ragtrace_queue_deleted_pending",
            "Pending entries found deleted from the stream (trimmed by hand).",
            [],
        )
        self.batch_duration = self.histogram(
            "ragtrace_worker_batch_duration_seconds",
            "From reading a batch to acknowledging it.",
            [],
            BATCH_BUCKETS,
        )
        self.delay = self.histogram(
            "ragtrace_evaluation_delay_seconds",
            "From the end of a request to its scores being published.",
            [],
            DELAY_BUCKETS,
        )
        self.last_ack = self.gauge(
            "ragtrace_worker_last_ack_timestamp_seconds",
            "Unix time of this worker's last acknowledgement.",
        )
        self.delivery_failures = self.counter(
            "ragtrace_queue_delivery_failures",
            "Entries whose results a sink did not confirm delivered (left pending, delivered "
            "again).",
            ["sink"],
        )
        for sink in (*DELIVERY_SINKS.values(), "other"):
            self.delivery_failures.labels(sink)
        for reason in DEAD_LETTER_REASONS:
            self.dead_lettered.labels(reason)
        for reason in DUPLICATE_REASONS:
            self.duplicates.labels(reason)
        for reason in LOSS_REASONS:
            self.resets.labels(reason)
            self.data_lost.labels(reason)
        self._counters = {
            "acknowledged": self.acknowledged,
            "reclaimed": self.reclaimed,
            "deleted_pending": self.deleted_pending,
            "ack_lost": self.ack_lost,
            "renewed": self.renewed,
            "group_recreated": self.group_recreated,
            "consumers_removed": self.consumers_removed,
        }

    def count_event(self, name: str, n: int) -> None:
        """What a ``RedisConsumer`` reports through ``on_event``."""
        if n <= 0:
            return
        counter = self._counters.get(name)
        if counter is not None:
            counter.inc(n)
            if name == "acknowledged":
                self.last_ack.set(time.time())
        elif name.startswith("dead_lettered:"):
            reason = name.partition(":")[2]
            self.dead_lettered.labels(self._reasons(reason)).inc(n)
        elif name.startswith("duplicate:"):
            reason = name.partition(":")[2]
            self.duplicates.labels(one_of(reason, DUPLICATE_REASONS)).inc(n)
        elif name.startswith("queue_reset:"):
            self.resets.labels(one_of(name.partition(":")[2], LOSS_REASONS)).inc(n)
        elif name.startswith("delivery_failed:"):
            sink = DELIVERY_SINKS.get(name.partition(":")[2], "other")
            self.delivery_failures.labels(sink).inc(n)
        elif name.startswith("data_lost:"):
            self.data_lost.labels(one_of(name.partition(":")[2], LOSS_REASONS)).inc(n)

    def observe_batch(self, seconds: float) -> None:
        self.batch_duration.observe(max(0.0, seconds))

    def observe_delay(self, end_ns: int) -> None:
        """The delay of a record that ended at ``end_ns`` (skipped when the time is unknown)."""
        if end_ns > 0:
            self.delay.observe(max(0.0, (time.time_ns() - end_ns) / 1e9))

    def set_stream_state(self, backlog: int, pending: int, lag: int | None, dead: int) -> None:
        self.backlog.set(backlog)
        self.pending.set(pending)
        if lag is not None:
            self.lag.set(lag)
        self.dead_letters.set(dead)
