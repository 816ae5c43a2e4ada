"""The operations dashboard's "OTLP ingest" row: ``ragtrace ingest`` receiving other apps' spans.

The families are those of ``ragtrace/_metrics/ingest.py``: exports by answer, spans
kept, refused and dropped by reason, traces completed by reason, records by convention and the
fields their instrumentation did not capture, the assembly buffer and the completion delay.
Each replica reports its own counters, so rates are summed across instances.
"""

from __future__ import annotations

from grafana.panels import Json, row, target, timeseries

RATE = "[$__rate_interval]"
DELAY = "ragtrace_ingest_completion_delay_seconds_bucket"


def ingest_panels() -> list[Json]:
    """What arrives, what is kept, how long traces wait, what the mappers could read."""
    return [
        row("OTLP ingest"),
        timeseries(
            "Spans per second",
            "Spans received in accepted exports, spans in exports refused with 429 because "
            "the buffer was full (the sender retries them), and spans dropped by reason "
            "(late_span: arrived after its trace was handed on, raise --quiet-s; "
            "spans_per_trace; invalid_id; duplicate_span; evaluation_span: ragtrace's own "
            "results coming back through the Collector).",
            [
                target(f"sum(rate(ragtrace_ingest_spans_total{RATE}))", "received"),
                target(f"sum(rate(ragtrace_ingest_spans_refused_total{RATE}))", "refused (429)"),
                target(
                    f"sum by (reason) (rate(ragtrace_ingest_dropped_spans_total{RATE}))",
                    "dropped {{reason}}",
                ),
            ],
            unit="ops",
            width=8,
        ),
        timeseries(
            "Exports by answer",
            "OTLP exports per second by the receiver's answer: accepted, busy (429/503), "
            "bad_request, too_large, unsupported_media_type, unauthorized. Anything but "
            "accepted and an occasional busy means a sender is misconfigured.",
            [
                target(
                    f"sum by (outcome) (rate(ragtrace_ingest_requests_total{RATE}))",
                    "{{outcome}}",
                )
            ],
            unit="reqps",
            width=8,
        ),
        timeseries(
            "Traces and records per second",
            "Traces handed on by why they were complete (complete: root and quiet period; "
            "max_age: no root in time, a split or upstream trace; shutdown), records rebuilt "
            "by convention, and traces that gave no record.",
            [
                target(
                    f"sum by (reason) (rate(ragtrace_ingest_traces_total{RATE}))",
                    "traces {{reason}}",
                ),
                target(
                    f"sum by (convention) (rate(ragtrace_ingest_records_total{RATE}))",
                    "records {{convention}}",
                ),
                target(
                    f"sum by (reason) (rate(ragtrace_ingest_traces_unmapped_total{RATE}))",
                    "no record {{reason}}",
                ),
            ],
            unit="ops",
            width=8,
        ),
        timeseries(
            "Assembly buffer",
            "Traces being assembled and the encoded bytes they hold, per replica; bounded by "
            "--max-open-traces and --max-buffer-bytes.",
            [
                target("sum by (instance) (ragtrace_ingest_open_traces)", "open {{instance}}"),
                target(
                    "sum by (instance) (ragtrace_ingest_buffer_bytes) / 1048576",
                    "MiB {{instance}}",
                ),
            ],
            width=8,
        ),
        timeseries(
            "Last span to record",
            "Median and 99th percentile from a trace's last span arriving to its record being "
            "handed to the evaluators: the quiet period plus the assembly loop's tick.",
            [
                target(f"histogram_quantile(0.5, sum by (le) (rate({DELAY}{RATE})))", "p50"),
                target(f"histogram_quantile(0.99, sum by (le) (rate({DELAY}{RATE})))", "p99"),
            ],
            unit="s",
            width=8,
        ),
        timeseries(
            "Fields the instrumentation did not capture",
            "Rebuilt records per second lacking a field, by convention: GenAI instrumentations "
            "record no message content unless told to, so evaluators that need it skip.",
            [
                target(
                    "sum by (convention, field) "
                    f"(rate(ragtrace_ingest_missing_fields_total{RATE}))",
                    "{{convention}} {{field}}",
                )
            ],
            unit="ops",
            width=8,
        ),
    ]
