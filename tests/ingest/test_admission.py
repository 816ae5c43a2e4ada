"""Admission: an ingest with every slot taken refuses exports at once, and nothing is lost.

Real services on loopback: concurrent senders past a bound of one export in flight get 429 with
``Retry-After`` quickly while the admitted exports proceed, and every accepted trace reaches
the pipeline; the OpenTelemetry SDK's OTLP/HTTP and OTLP/gRPC exporters, refused while the
only slot is taken, retry and deliver every span.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.admission import Admission
from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.receiver import ReceiverOptions
from ragtrace._ingest.service import APP, IngestOptions, IngestService
from ragtrace._model import RagRecord
from ragtrace._worker.serving import service_config
from tests.components import wait_until
from tests.ingest.otlp_bodies import as_protobuf
from tests.ingest.test_grpc import one_request
from tests.ingest.test_service import rag_trace

PB = "application/x-protobuf"
Served = tuple[IngestService, list[RagRecord]]


def serve(max_in_flight: int, *, grpc_too: bool = False) -> Served:
    svc = IngestService(
        IngestOptions(
            service_config(APP, (), ingest_max_in_flight=max_in_flight),
            receiver=ReceiverOptions(port=0, retry_after_s=1),
            grpc=ReceiverOptions(port=0, retry_after_s=1) if grpc_too else None,
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=10),
            tick_s=0.02,
        ),
        registry=CollectorRegistry(),
    )
    records: list[RagRecord] = []
    assert svc.runtime is not None
    svc.runtime.add_record_sink(records.append)
    svc.start()
    return svc, records


@pytest.fixture
def one_slot() -> Iterator[Served]:
    svc, records = serve(1, grpc_too=True)
    yield svc, records
    svc.drain()


def samples(svc: IngestService, name: str, label: str) -> dict[str, float]:
    return {
        s.labels[label]: s.value
        for m in svc.registry.collect()
        for s in m.samples
        if s.name == name
    }


def refused(svc: IngestService) -> dict[str, float]:
    return samples(svc, "ragtrace_ingest_requests_refused_total", "reason")


@dataclass
class Answers:
    """Every answer the senders got: status, seconds to the answer, ``Retry-After``."""

    seen: list[tuple[int, float, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int, elapsed_s: float, retry_after: str | None) -> None:
        with self.lock:
            self.seen.append((status, elapsed_s, retry_after))


def send_until_accepted(port: int, bodies: list[bytes], answers: Answers, start: Any) -> None:
    """Post each body until it is answered 200 (a 429 is sent again soon), for 30 s at most."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    start.wait(5)
    deadline = time.monotonic() + 30
    try:
        for body in bodies:
            while time.monotonic() < deadline:
                began = time.monotonic()
                conn.request("POST", "/v1/traces", body, {"Content-Type": PB})
                response = conn.getresponse()
                response.read()
                answers.add(
                    response.status, time.monotonic() - began, response.getheader("Retry-After")
                )
                if response.status == 200:
                    break
                time.sleep(0.01)
    finally:
        conn.close()


def test_past_the_bound_exports_are_refused_at_once_and_every_accepted_one_is_kept(
    one_slot: Served,
) -> None:
    svc, records = one_slot
    senders, exports_each, per_export = 12, 4, 25
    bodies = [
        [
            as_protobuf(
                [
                    span
                    for t in range(per_export)
                    for span in rag_trace(0x20000 + (s * exports_each + e) * per_export + t)
                ]
            )
            for e in range(exports_each)
        ]
        for s in range(senders)
    ]
    answers = Answers()
    start = threading.Barrier(senders)
    threads = [
        threading.Thread(target=send_until_accepted, args=(svc.receiver.port, mine, answers, start))
        for mine in bodies
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    traces = senders * exports_each * per_export
    statuses = [status for status, _, _ in answers.seen]
    refusals = [(elapsed, retry) for status, elapsed, retry in answers.seen if status == 429]
    assert set(statuses) <= {200, 429}
    assert statuses.count(200) == senders * exports_each, "every export was accepted in the end"
    assert refusals, "one slot and 12 concurrent senders: some exports must be refused"
    assert {retry for _, retry in refusals} == {"1"}
    assert max(elapsed for elapsed, _ in refusals) < 1.0, "a refusal is answered at once"
    # Ingest counted every refusal, with its reason, and took every accepted trace.
    assert refused(svc)["in_flight"] == len(refusals)
    outcomes = samples(svc, "ragtrace_ingest_requests_total", "outcome")
    assert outcomes["busy"] == len(refusals)
    assert outcomes["accepted"] == senders * exports_each
    wait_until("every accepted trace's record", lambda: len(records) >= traces, timeout_s=30)
    assert sorted(r.trace_id for r in records) == [f"{0x20000 + t:032x}" for t in range(traces)]
    assert svc.admission.in_flight == 0


def refused_until_released(svc: IngestService, deliver: Any) -> None:
    """Take the only slot, run ``deliver`` in a thread, give the slot back once ingest has
    refused an export; ``deliver`` must then finish."""
    assert svc.admission.enter()  # the one export ingest takes at once is "in flight"
    worker = threading.Thread(target=deliver)
    worker.start()
    try:
        wait_until("a refusal", lambda: refused(svc)["in_flight"] >= 1, timeout_s=10)
    finally:
        svc.admission.leave()
    worker.join(30)
    assert not worker.is_alive()


def test_the_sdk_http_exporter_retries_a_refusal_and_delivers_every_span(
    one_slot: Served,
) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    svc, records = one_slot
    provider = TracerProvider(resource=Resource.create({"service.name": "http-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(svc.endpoint, timeout=20)))
    sent: list[str] = []
    refused_until_released(svc, lambda: sent.append(one_request(provider)))
    provider.shutdown()
    wait_until("the record", lambda: records, timeout_s=10)
    assert [r.trace_id for r in records] == sent
    assert records[0].query == "Where is my parcel?"
    spans = [
        s.value
        for m in svc.registry.collect()
        for s in m.samples
        if s.name == "ragtrace_ingest_spans_total"
    ]
    assert spans == [2.0], "both spans arrived, each once"
    assert refused(svc)["in_flight"] >= 1


def test_a_refused_grpc_export_gets_resource_exhausted_with_a_retry_delay(
    one_slot: Served,
) -> None:
    from google.rpc import error_details_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

    from ragtrace._ingest.grpc_receiver import METHOD, SERVICE

    svc, _ = one_slot
    assert svc.grpc_receiver is not None
    assert svc.admission.enter()
    try:
        with grpc.insecure_channel(svc.grpc_receiver.endpoint) as channel:
            export = channel.unary_unary(
                f"/{SERVICE}/{METHOD}",
                request_serializer=pb.ExportTraceServiceRequest.SerializeToString,
                response_deserializer=pb.ExportTraceServiceResponse.FromString,
            )
            body = pb.ExportTraceServiceRequest.FromString(as_protobuf(rag_trace(0x30000)))
            began = time.monotonic()
            with pytest.raises(grpc.RpcError) as caught:
                export(body, timeout=10)
            elapsed = time.monotonic() - began
    finally:
        svc.admission.leave()
    error: Any = caught.value
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert elapsed < 1.0
    trailing = dict(error.trailing_metadata())
    info = error_details_pb2.RetryInfo.FromString(trailing["google.rpc.retryinfo-bin"])
    assert info.retry_delay.seconds == 1
    assert refused(svc)["in_flight"] == 1
    assert svc.admission.in_flight == 0


def test_the_sdk_grpc_exporter_retries_a_refusal_and_delivers_every_span(
    one_slot: Served,
) -> None:
    from tests.ingest.test_grpc import exporter_provider

    svc, records = one_slot
    assert svc.grpc_receiver is not None
    provider = exporter_provider(svc.grpc_receiver.endpoint)
    sent: list[str] = []
    refused_until_released(svc, lambda: sent.append(one_request(provider)))
    provider.shutdown()
    wait_until("the record", lambda: records, timeout_s=10)
    assert [r.trace_id for r in records] == sent


def test_the_bound_is_checked() -> None:
    with pytest.raises(ValueError, match="max_in_flight must be >= 1, got 0"):
        Admission(0)
    with pytest.raises(ValueError, match="ingest_max_in_flight"):
        service_config(APP, (), ingest_max_in_flight=0)
