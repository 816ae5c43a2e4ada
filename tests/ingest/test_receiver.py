"""The OTLP/HTTP receiver on loopback: answers, errors and limits, with the real SDK exporter."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
from collections import Counter
from collections.abc import Iterator

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragtrace._ingest.decode import DecodedSpans
from ragtrace._ingest.receiver import Acceptance, OtlpReceiver, ReceiverOptions
from tests.ingest.otlp_bodies import SpanSpec, as_json, as_protobuf

PB = "application/x-protobuf"
BOMB = gzip.compress(b"\x00" * (4 << 20))  # 4 KB that inflate to 4 MB
BODY = as_protobuf([SpanSpec(1, 10, name="chain"), SpanSpec(1, 11, parent=10)])


class Sink:
    def __init__(self) -> None:
        self.exports: list[DecodedSpans] = []
        self.verdict = Acceptance(True)
        self.outcomes: Counter[str] = Counter()

    def accept(self, decoded: DecodedSpans) -> Acceptance:
        self.exports.append(decoded)
        return self.verdict

    def outcome(self, outcome: str, spans: int) -> None:
        self.outcomes[outcome] += 1


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
def receiver(sink: Sink) -> Iterator[OtlpReceiver]:
    rx = OtlpReceiver(
        ReceiverOptions(port=0, token="s3cret", max_request_bytes=1 << 20),
        sink.accept,
        sink.outcome,
    )
    rx.start()
    yield rx
    rx.close()


def post(
    rx: OtlpReceiver,
    body: bytes,
    kind: str | None = PB,
    *,
    token: str | None = "s3cret",
    path: str = "/v1/traces",
    extra: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=10)
    headers = {"Content-Type": kind} if kind else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    conn.request("POST", path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def test_protobuf_export_is_accepted_and_handed_on(receiver: OtlpReceiver, sink: Sink) -> None:
    status, headers, data = post(receiver, BODY)
    assert status == 200
    assert headers["Content-Type"] == PB
    ExportTraceServiceResponse().ParseFromString(data)
    assert [s.span_id for s in sink.exports[0].spans] == [f"{10:016x}", f"{11:016x}"]
    assert sink.outcomes == {"accepted": 1}


def test_json_and_gzip_exports_are_accepted(receiver: OtlpReceiver, sink: Sink) -> None:
    status, headers, data = post(receiver, as_json([SpanSpec(2, 20)]), "application/json")
    assert (status, headers["Content-Type"], json.loads(data)) == (200, "application/json", {})
    status, _, _ = post(receiver, gzip.compress(BODY), extra={"Content-Encoding": "gzip"})
    assert status == 200
    assert len(sink.exports) == 2


def test_dropped_spans_are_reported_as_partial_success(receiver: OtlpReceiver, sink: Sink) -> None:
    sink.verdict = Acceptance(True, rejected_spans=2, message="2 spans late")
    _, _, data = post(receiver, BODY)
    response = ExportTraceServiceResponse()
    response.ParseFromString(data)
    assert response.partial_success.rejected_spans == 2
    _, _, data = post(receiver, as_json([SpanSpec(2, 20)]), "application/json")
    assert json.loads(data)["partialSuccess"] == {
        "rejectedSpans": "2",
        "errorMessage": "2 spans late",
    }


def test_a_full_buffer_answers_429_with_retry_after(receiver: OtlpReceiver, sink: Sink) -> None:
    sink.verdict = Acceptance(False, message="buffer full")
    status, headers, data = post(receiver, BODY)
    assert status == 429
    assert headers["Retry-After"] == "2"
    assert status_pb2.Status.FromString(data).message == "buffer full"
    assert sink.outcomes == {"busy": 1}


@pytest.mark.parametrize(
    ("kwargs", "status", "outcome"),
    [
        ({"token": None}, 401, "unauthorized"),
        ({"token": "wrong"}, 401, "unauthorized"),
        ({"path": "/v1/metrics"}, 404, "bad_request"),
        ({"kind": "text/plain"}, 415, "unsupported_media_type"),
        ({"kind": None}, 415, "unsupported_media_type"),
        ({"body": b"\x0a\xff\xff\xff\xff\x0f"}, 400, "bad_request"),
        ({"body": BODY[:-5]}, 400, "bad_request"),
        ({"body": BOMB, "extra": {"Content-Encoding": "gzip"}}, 413, "too_large"),
    ],
)  # fmt: skip
def test_bad_requests_get_clear_errors(
    receiver: OtlpReceiver, sink: Sink, kwargs: dict, status: int, outcome: str
) -> None:
    body = kwargs.pop("body", BODY)
    got, headers, data = post(receiver, body, **kwargs)
    assert got == status
    assert status_pb2.Status.FromString(data).message if headers["Content-Type"] == PB else data
    assert sink.exports == []
    assert sink.outcomes == {outcome: 1}
    assert post(receiver, BODY)[0] == 200  # the receiver is still serving


def test_json_errors_are_json(receiver: OtlpReceiver) -> None:
    status, headers, data = post(receiver, b"{broken", "application/json")
    assert (status, headers["Content-Type"]) == (400, "application/json")
    assert "not an OTLP trace export" in json.loads(data)["message"]


def _raw(rx: OtlpReceiver, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", rx.port), timeout=10) as sock:
        sock.sendall(head)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_50_mb_body_is_refused_before_it_is_read(receiver: OtlpReceiver, sink: Sink) -> None:
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Authorization: Bearer s3cret\r\nContent-Length: 52428800\r\n\r\n"
    )
    answer = _raw(receiver, head)
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"over the limit of 1048576" in answer
    assert sink.outcomes == {"too_large": 1}
    # Sending all 50 MB anyway: the answer is 413 or the connection is cut, never a crash.
    try:
        status = post(receiver, b"\x00" * (50 << 20))[0]
    except (ConnectionError, http.client.HTTPException):
        status = 413
    assert status == 413
    assert sink.exports == []
    assert post(receiver, BODY)[0] == 200


def test_no_content_length_is_411(receiver: OtlpReceiver) -> None:
    head = (
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        b"Authorization: Bearer s3cret\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    assert _raw(receiver, head).startswith(b"HTTP/1.1 411")


def test_other_methods_are_405(receiver: OtlpReceiver) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    conn.request("GET", "/v1/traces")
    assert conn.getresponse().status == 405
    conn.close()


def test_keep_alive_connections_carry_several_exports(receiver: OtlpReceiver, sink: Sink) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    for _ in range(3):
        conn.request(
            "POST", "/v1/traces", BODY, {"Content-Type": PB, "Authorization": "Bearer s3cret"}
        )
        response = conn.getresponse()
        response.read()
        assert response.status == 200
    conn.close()
    assert len(sink.exports) == 3


def test_while_closing_exports_get_503(receiver: OtlpReceiver, sink: Sink) -> None:
    receiver.closing = True
    status, headers, _ = post(receiver, BODY)
    assert (status, headers["Retry-After"]) == (503, "2")
    assert sink.exports == []


def test_the_sdk_otlp_exporter_delivers_to_the_receiver(sink: Sink) -> None:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    rx = OtlpReceiver(ReceiverOptions(port=0), sink.accept, sink.outcome)
    rx.start()
    try:
        provider = TracerProvider(resource=Resource.create({"service.name": "faq-bot"}))
        exporter = OTLPSpanExporter(endpoint=rx.endpoint, compression=Compression.Gzip)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        with provider.get_tracer("t").start_as_current_span("rag") as root:
            root.set_attribute("input.value", "What is the refund window?")
        provider.shutdown()
    finally:
        rx.close()
    (span,) = sink.exports[0].spans
    assert (span.name, span.service_name, span.parent_span_id) == ("rag", "faq-bot", None)
    assert span.attributes["input.value"] == "What is the refund window?"


def test_a_port_in_use_is_a_clear_error(receiver: OtlpReceiver, sink: Sink) -> None:
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{receiver.port}"):
        OtlpReceiver(ReceiverOptions(port=receiver.port), sink.accept, sink.outcome)
