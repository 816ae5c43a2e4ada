"""The operations dashboard's "Worker fleet" row: a Redis Streams queue and its ragtrace workers.

Stream-wide gauges are reported by every worker alike, so they are aggregated with ``max``;
per-worker counters with ``sum by (instance)``. The families are those of
``ragtrace/_metrics/queues.py`` and, for what the applications ship,
``ragtrace_records_shipped_total``.
"""

from __future__ import annotations

from grafana.operating_points import alert_bound
from grafana.panels import Json, above_is_bad, row, target, timeseries

RATE = "[$__rate_interval]"
BATCH = "ragtrace_worker_batch_duration_seconds_bucket"
DELAY = "ragtrace_evaluation_delay_seconds_bucket"
BACKLOG_BOUND = alert_bound("RagtraceQueueBacklogGrowing")


def _quantile(q: float, bucket: str) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({bucket}{RATE})))"


def fleet_panels() -> list[Json]:
    """Backlog, throughput, recovery and latency of the worker fleet."""
    return [
        row("Worker fleet (Redis Streams)"),
        above_is_bad(
            timeseries(
                "Queue backlog",
                "Entries in the stream (unread or unacknowledged) per worker deployment (job), "
                "delivered but unacknowledged (pending), never delivered (lag) and dead letters. "
                "RagtraceQueueBacklogGrowing fires when a deployment's backlog is above "
                f"{BACKLOG_BOUND:g} (the dashed line) and kept growing for 15 minutes: add "
                "workers.",
                [
                    target("max by (job) (ragtrace_queue_backlog)", "backlog {{job}}"),
                    target("max(ragtrace_queue_pending)", "pending"),
                    target("max(ragtrace_queue_lag)", "lag"),
                    target("max(ragtrace_queue_dead_letters)", "dead letters"),
                ],
                width=8,
            ),
            BACKLOG_BOUND,
        ),
        timeseries(
            "Shipped and acknowledged per second",
            "Records the applications ship to the stream, and records each worker published "
            "and acknowledged.",
            [
                target(f"sum(rate(ragtrace_records_shipped_total{RATE}))", "shipped"),
                target(
                    f"sum by (instance) (rate(ragtrace_queue_acknowledged_total{RATE}))",
                    "acknowledged {{instance}}",
                ),
            ],
            unit="ops",
            width=8,
        ),
        timeseries(
            "Reclaimed and dead-lettered per minute",
            "Entries taken over from a worker that stopped (reclaimed), and entries moved to "
            "the dead-letter stream by reason (max_deliveries: a record that kept failing; "
            "undecodable: an entry that could not be read).",
            [
                target(f"60 * sum(rate(ragtrace_queue_reclaimed_total{RATE}))", "reclaimed"),
                target(
                    f"60 * sum by (reason) (rate(ragtrace_queue_dead_lettered_total{RATE}))",
                    "dead-lettered {{reason}}",
                ),
            ],
            width=8,
        ),
        timeseries(
            "Request end to published score",
            "Median and 99th percentile of the delay from the end of a request to its scores "
            "being published by a worker: what a user of the dashboards waits.",
            [target(_quantile(0.5, DELAY), "p50"), target(_quantile(0.99, DELAY), "p99")],
            unit="s",
            width=12,
        ),
        timeseries(
            "Worker batch duration",
            "Median and 99th percentile of a batch, from reading it to acknowledging it.",
            [target(_quantile(0.5, BATCH), "p50"), target(_quantile(0.99, BATCH), "p99")],
            unit="s",
            width=12,
        ),
    ]
