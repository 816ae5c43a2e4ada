"""Backpressure end to end: at ingest's saturation point nothing accepted is lost.

Senders push RAG traces over OTLP/HTTP as fast as they can, retrying each export answered 429
as a Collector does, while a deliberately slow evaluator drains a small evaluation queue. The
books must balance exactly: every span sent is acknowledged once (200) after any number of
refusals (429, each counted by ingest too), and every record rebuilt from an acknowledged export
is published; the counted drops are zero.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import Evaluation, RagRecord
from tests.components import wait_until
from tests.ingest.load import send_traces

TRACES = 1500


class Published:
    """A score sink that counts the records whose scores were published."""

    def __init__(self) -> None:
        self.trace_ids: list[str] = []

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        self.trace_ids.append(record.trace_id)

    def shutdown(self) -> None:
        """Nothing to release."""


@pytest.fixture
def slow_evaluator() -> Iterator[str]:
    from ragtrace.evaluators import evaluator, register, unregister

    @evaluator(name="slow_check", requires={"query"})
    def slow_check(record: RagRecord) -> float:
        time.sleep(0.004)  # about 250 records a second: slower than the senders
        return 1.0

    register("slow_check", lambda **_: slow_check, replace=True)
    yield "slow_check"
    unregister("slow_check")


def counters(service: IngestService) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in service.registry.collect():
        for s in family.samples:
            if s.name.endswith("_total") and s.name.startswith(
                ("ragtrace_ingest", "ragtrace_dropped")
            ):
                key = s.name + "".join(f"{{{v}}}" for v in s.labels.values())
                out[key] = out.get(key, 0.0) + s.value
    return out


def test_at_saturation_every_acknowledged_record_is_published(
    tmp_path: Path, slow_evaluator: str
) -> None:
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text("pipeline: {queue_size: 100, workers: 1, batch_wait_s: 0.01}\n")
    published = Published()
    service = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0, retry_after_s=1),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=30.0),
            config_file=str(settings),
            evaluators=(slow_evaluator,),
            tick_s=0.02,
        ),
        registry=CollectorRegistry(),
        score_sinks=[published],
    )
    service.start()
    try:
        tally = send_traces(service.receiver.port, TRACES, per_export=10, senders=4)
        wait_until(
            "every acknowledged record published",
            lambda: len(published.trace_ids) >= TRACES,
            timeout_s=60,
        )
        assert service.runtime is not None
        service.runtime.flush(10)
        seen = counters(service)
    finally:
        service.drain()
    # The senders' books: every span delivered, once; every refusal retried.
    assert tally.other == [] and tally.undelivered == 0
    assert tally.acknowledged == tally.sent == TRACES * 4
    assert tally.refused > 0, "the load never reached the saturation point"
    # ... and ingest's: the same spans accepted and refused.
    assert seen["ragtrace_ingest_spans_total"] == tally.acknowledged
    assert seen["ragtrace_ingest_spans_refused_total"] == tally.refused
    assert seen["ragtrace_ingest_requests_total{busy}"] == tally.exports_refused
    # Records: acknowledged = published + counted drops, and the drops are none.
    records = seen["ragtrace_ingest_records_total{openinference}"]
    drops = sum(v for k, v in seen.items() if "dropped_records" in k or "records_dropped" in k)
    assert records == TRACES
    assert drops == 0
    assert sorted(published.trace_ids) == sorted({f"{0x10000 + t:032x}" for t in range(TRACES)})
    assert seen["ragtrace_ingest_traces_total{complete}"] == TRACES
