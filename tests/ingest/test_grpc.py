"""OTLP/gRPC into ``ragtrace ingest``: the SDK's real gRPC exporter, gzip, the token, a full
buffer answered UNAVAILABLE (retried by the exporter), and the records it rebuilds."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from ragtrace._ingest.assembly import AssemblyLimits
from ragtrace._ingest.decode import DecodedSpans
from ragtrace._ingest.receiver import Acceptance, ReceiverOptions
from ragtrace._ingest.service import IngestOptions, IngestService
from ragtrace._model import RagRecord
from tests.components import wait_until

Served = tuple[IngestService, list[RagRecord]]


def exporter_provider(endpoint: str, headers: dict[str, str] | None = None) -> Any:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "grpc-bot"}))
    exporter = OTLPSpanExporter(
        endpoint=endpoint, insecure=True, compression=grpc.Compression.Gzip, headers=headers,
        timeout=5,
    )  # fmt: skip
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def one_request(provider: Any) -> str:
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("chain") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "Where is my parcel?")
        root.set_attribute("output.value", "It ships tomorrow.")
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("retrieval.documents.0.document.id", "kb-9")
            retriever.set_attribute("retrieval.documents.0.document.content", "Parcels ship daily.")
        return format(root.get_span_context().trace_id, "032x")


@pytest.fixture
def service() -> Iterator[Served]:
    svc = IngestService(
        IngestOptions(
            receiver=ReceiverOptions(port=0),
            grpc=ReceiverOptions(port=0, token="g-token"),
            limits=AssemblyLimits(quiet_s=0.2, max_age_s=5),
            evaluators=(),
            tick_s=0.05,
        ),
        registry=CollectorRegistry(),
    )
    records: list[RagRecord] = []
    assert svc.runtime is not None
    svc.runtime.add_record_sink(records.append)
    svc.start()
    yield svc, records
    svc.drain()


def test_the_sdk_grpc_exporter_delivers_a_request(service: Served) -> None:
    svc, records = service
    assert svc.grpc_receiver is not None
    provider = exporter_provider(svc.grpc_receiver.endpoint, {"authorization": "Bearer g-token"})
    trace_id = one_request(provider)
    provider.shutdown()
    wait_until("the record", lambda: records, timeout_s=10)
    (record,) = records
    assert (record.trace_id, record.app, record.query) == (
        trace_id,
        "grpc-bot",
        "Where is my parcel?",
    )
    assert [(c.id, c.text) for c in record.chunks] == [("kb-9", "Parcels ship daily.")]


def test_a_wrong_token_is_unauthenticated(service: Served) -> None:
    svc, records = service
    assert svc.grpc_receiver is not None
    provider = exporter_provider(svc.grpc_receiver.endpoint, {"authorization": "Bearer nope"})
    one_request(provider)
    provider.shutdown()
    outcomes = {
        s.labels["outcome"]: s.value
        for m in svc.registry.collect()
        for s in m.samples
        if s.name == "ragtrace_ingest_requests_total"
    }
    assert outcomes == {"unauthorized": 2.0}  # one export per span (SimpleSpanProcessor)
    assert records == []


def test_a_full_buffer_answers_unavailable_and_the_exporter_retries() -> None:
    from ragtrace._ingest.grpc_receiver import OtlpGrpcReceiver

    answers = itertools.chain(
        [Acceptance(False, message="full")], itertools.repeat(Acceptance(True))
    )
    seen: list[DecodedSpans] = []
    outcomes: Counter[str] = Counter()

    def accept(decoded: DecodedSpans) -> Acceptance:
        seen.append(decoded)
        return next(answers)

    rx = OtlpGrpcReceiver(ReceiverOptions(port=0), accept, lambda o, n: outcomes.update([o]))
    rx.start()
    try:
        provider = exporter_provider(rx.endpoint)
        one_request(provider)
        provider.shutdown()
    finally:
        rx.close()
    assert outcomes == {"busy": 1, "accepted": 2}  # two spans, one export each
    assert seen[0].spans == seen[1].spans  # the refused export came again after UNAVAILABLE


def test_a_port_in_use_is_a_clear_error(service: Served) -> None:
    from ragtrace._ingest.grpc_receiver import OtlpGrpcReceiver

    svc, _ = service
    assert svc.grpc_receiver is not None
    with pytest.raises(OSError, match="cannot listen"):
        OtlpGrpcReceiver(
            ReceiverOptions(port=svc.grpc_receiver.port), lambda d: Acceptance(True), print
        )


@pytest.mark.parametrize("closing", [False, True], ids=["buffer-full", "shutting-down"])
def test_a_refusal_carries_the_retry_delay_of_the_http_receiver(closing: bool) -> None:
    from google.rpc import error_details_pb2, status_pb2
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

    from ragtrace._ingest.grpc_receiver import METHOD, SERVICE, OtlpGrpcReceiver

    options = ReceiverOptions(port=0, retry_after_s=7)
    rx = OtlpGrpcReceiver(options, lambda d: Acceptance(False, message="full"), print)
    rx.start()
    rx.closing = closing
    try:
        with grpc.insecure_channel(rx.endpoint) as channel:
            export = channel.unary_unary(
                f"/{SERVICE}/{METHOD}",
                request_serializer=pb.ExportTraceServiceRequest.SerializeToString,
                response_deserializer=pb.ExportTraceServiceResponse.FromString,
            )
            with pytest.raises(grpc.RpcError) as refused:
                export(pb.ExportTraceServiceRequest(), timeout=5)
    finally:
        rx.close()
    error: Any = refused.value
    assert error.code() == grpc.StatusCode.UNAVAILABLE
    trailing = dict(error.trailing_metadata())
    status = status_pb2.Status.FromString(trailing["grpc-status-details-bin"])
    assert (status.code, status.message) == (14, error.details())
    (detail,) = status.details
    info = error_details_pb2.RetryInfo()
    assert detail.Unpack(info)
    assert (info.retry_delay.seconds, info.retry_delay.nanos) == (7, 0)
    assert error_details_pb2.RetryInfo.FromString(trailing["google.rpc.retryinfo-bin"]) == info
