"""OTLP over gRPC into ``ragtrace ingest``, a worker fleet behind it, and a results collector that
refuses or stalls: every trace's results arrive once it is back, nothing is lost.

The application side is the OpenTelemetry SDK's real OTLP/gRPC exporter; ``ragtrace ingest``
(in process) admits one export at a time (``ingest_max_in_flight=1``), rebuilds each trace's
record and ships it to a real redis-server; a real ``ragtrace worker`` subprocess evaluates the
records and sends their results as OTLP log records to a real receiver behind a ``Gate``
(``tests/queues/delivery.py``), closed while the records flow. While an export holds the only
slot, the SDK's export is answered ``RESOURCE_EXHAUSTED`` and retried, and its trace arrives
too. Nothing is acknowledged while the collector is away; then every trace's results arrive and
``ragtrace queue stats`` balances. Bounded in time; the worker is stopped by pid.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import APP, IngestOptions, IngestService
from ragtrace._worker.serving import service_config
from tests.components import wait_until
from tests.ingest.test_admission import refused, refused_until_released
from tests.ingest.test_grpc import exporter_provider, one_request
from tests.otlp_receiver import OtlpReceiver
from tests.queues.delivery import Gate, delivered_trace_ids, fleet_exporting, start
from tests.queues.fleet import APP_EVALUATORS, Workers, queue_stats, scrape, state
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration
TRACES = 12
FAILURES = 'ragtrace_queue_delivery_failures_total{sink="otel_logs"}'


@pytest.fixture
def exporting(tmp_path: Path, redis_server: RedisServer) -> Iterator[Workers]:
    """Workers whose results go out as OTLP log records (stopped by pid at the end)."""
    workers = fleet_exporting(tmp_path, redis_server)
    try:
        yield workers
    finally:
        workers.stop_all()


@pytest.fixture
def ingest(exporting: Workers, app_side_names: None) -> Iterator[IngestService]:
    """``ragtrace ingest`` with an OTLP/gRPC receiver, one export admitted at a time, shipping
    to the fleet's stream."""
    config = service_config(
        APP,
        tuple(f"{name}_app" for name in APP_EVALUATORS),
        queue_url=exporting.url,
        ingest_max_in_flight=1,
    )
    service = IngestService(
        IngestOptions(
            config,
            receiver=ReceiverOptions(port=0),
            grpc=ReceiverOptions(port=0, retry_after_s=1),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=10),
            tick_s=0.02,
        ),
        registry=CollectorRegistry(),
    )
    service.start()
    try:
        yield service
    finally:
        service.drain()


@pytest.mark.parametrize("collector", ["refusing", "paused"])
def test_every_grpc_trace_is_evaluated_and_delivered_after_the_collector_is_back(
    exporting: Workers,
    ingest: IngestService,
    gate: tuple[Gate, OtlpReceiver],
    collector: str,
) -> None:
    fleet, (door, receiver) = exporting, gate
    door.hold = collector == "paused"
    _, port = start(fleet, "w1", "--otlp-endpoint", door.endpoint)
    assert ingest.grpc_receiver is not None
    provider = exporter_provider(ingest.grpc_receiver.endpoint)
    sent: list[str] = []
    try:
        # The first trace's export finds the only slot taken: RESOURCE_EXHAUSTED, retried.
        refused_until_released(ingest, lambda: sent.append(one_request(provider)))
        sent += [one_request(provider) for _ in range(TRACES - 1)]
    finally:
        provider.shutdown()
    assert refused(ingest)["in_flight"] >= 1
    assert len(set(sent)) == TRACES
    wait_until("every trace shipped", lambda: state(fleet.url)["submitted"] == TRACES, 30)
    wait_until("every delivery failed once", lambda: scrape(port).get(FAILURES, 0) >= TRACES, 60)
    s = state(fleet.url)
    assert (s["published"], s["pending"], s["backlog"]) == (0, TRACES, TRACES), s
    assert scrape(port).get("ragtrace_queue_acknowledged_total", 0) == 0
    assert receiver.logs == []

    door.open = True
    wait_until("all acknowledged", lambda: state(fleet.url)["published"] == TRACES, 45)
    assert delivered_trace_ids(receiver) == set(sent)  # 0 of TRACES lost
    stats = queue_stats(fleet.url)
    assert (stats["submitted"], stats["published"], stats["dead_lettered"]) == (TRACES, TRACES, 0)
    assert (stats["pending"], stats["backlog"], stats["unaccounted"]) == (0, 0, 0), stats
    assert set(fleet.published()) == set(sent)
