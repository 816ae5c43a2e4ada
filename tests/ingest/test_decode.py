"""OTLP/HTTP bodies to spans: protobuf, JSON with hex ids, gzip and deflate, and bad bodies."""

from __future__ import annotations

import gzip
import json
import zlib
from http import HTTPStatus

import pytest

from ragtrace._ingest.decode import BodyError, decode_traces
from tests.ingest.otlp_bodies import SpanSpec, as_json, as_protobuf

PB = "application/x-protobuf"
SPANS = [
    SpanSpec(1, 10, name="chain", attributes={"input.value": "Where is my refund?"}),
    SpanSpec(
        1,
        11,
        parent=10,
        name="retrieve",
        attributes={"retrieval.documents.0.document.score": 0.75, "n": 3, "ok": True},
    ),
    SpanSpec(2, 20, name="other", service="billing-bot", attributes={"tags": ["a", "b"]}),
]


def _decode(body: bytes, kind: str = PB, encoding: str | None = None, limit: int = 1 << 20):
    return decode_traces(body, content_type=kind, content_encoding=encoding, max_bytes=limit)


@pytest.mark.parametrize("kind", [PB, "application/json"])
@pytest.mark.parametrize("encoding", [None, "gzip", "deflate"])
def test_protobuf_and_json_give_the_same_spans(kind: str, encoding: str | None) -> None:
    body = as_protobuf(SPANS) if kind == PB else as_json(SPANS)
    if encoding == "gzip":
        body = gzip.compress(body)
    elif encoding == "deflate":
        body = zlib.compress(body)
    spans = _decode(body, kind + "; charset=utf-8", encoding).spans
    assert [(s.trace_id, s.span_id, s.parent_span_id) for s in spans] == [
        (f"{1:032x}", f"{10:016x}", None),
        (f"{1:032x}", f"{11:016x}", f"{10:016x}"),
        (f"{2:032x}", f"{20:016x}", None),
    ]
    assert spans[0].attributes == {"input.value": "Where is my refund?"}
    assert spans[1].attributes == {
        "retrieval.documents.0.document.score": 0.75,
        "n": 3,
        "ok": True,
    }
    assert spans[2].attributes == {"tags": ["a", "b"]}
    assert [s.service_name for s in spans] == ["shop-assistant", "shop-assistant", "billing-bot"]
    assert all(s.size > 0 for s in spans)


def test_json_ids_in_protobufs_own_base64_mapping_are_accepted_too() -> None:
    from google.protobuf import json_format

    from tests.ingest.otlp_bodies import export_request

    body = json_format.MessageToJson(export_request(SPANS[:1])).encode()
    assert _decode(body, "application/json").spans[0].span_id == f"{10:016x}"


def test_spans_with_bad_ids_are_counted_not_kept() -> None:
    from tests.ingest.otlp_bodies import export_request

    request = export_request(SPANS)
    request.resource_spans[0].scope_spans[0].spans[0].trace_id = b"\x01\x02"
    decoded = _decode(request.SerializeToString())
    assert decoded.invalid == 1
    assert len(decoded.spans) == 2


@pytest.mark.parametrize(
    ("body", "kind", "encoding", "status"),
    [
        (b"\x0a\xff\xff\xff\xff\x0f", PB, None, HTTPStatus.BAD_REQUEST),  # malformed protobuf
        (as_protobuf(SPANS)[:-7], PB, None, HTTPStatus.BAD_REQUEST),  # truncated
        (gzip.compress(as_protobuf(SPANS))[:-12], PB, "gzip", HTTPStatus.BAD_REQUEST),
        (b"not gzip at all", PB, "gzip", HTTPStatus.BAD_REQUEST),
        (as_protobuf(SPANS), PB, "br", HTTPStatus.BAD_REQUEST),
        (b"{not json", "application/json", None, HTTPStatus.BAD_REQUEST),
        (b"\xff\xfe{}", "application/json", None, HTTPStatus.BAD_REQUEST),  # not UTF-8
        (b"[1, 2]", "application/json", None, HTTPStatus.BAD_REQUEST),
        (json.dumps({"resourceSpans": 5}).encode(), "application/json", None, 400),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", None, HTTPStatus.BAD_REQUEST),
        (as_protobuf(SPANS), "text/plain", None, HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
        (as_protobuf(SPANS), None, None, HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    ],
)
def test_bad_bodies_name_their_http_status(
    body: bytes, kind: str | None, encoding: str | None, status: int
) -> None:
    with pytest.raises(BodyError) as caught:
        decode_traces(body, content_type=kind, content_encoding=encoding, max_bytes=1 << 20)
    assert caught.value.status == status
    assert str(caught.value)


def test_a_small_gzip_that_inflates_past_the_limit_is_too_large() -> None:
    bomb = gzip.compress(b"\x00" * (8 << 20))
    assert len(bomb) < 20_000
    with pytest.raises(BodyError) as caught:
        _decode(bomb, PB, "gzip", limit=1 << 20)
    assert caught.value.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE


def test_binary_and_odd_attribute_values_decode_to_plain_values() -> None:
    spans = [SpanSpec(3, 30, attributes={"blob": b"\x00\xff", "empty": "", "nested": [[1], [2]]})]
    (span,) = _decode(as_protobuf(spans)).spans
    assert span.attributes == {"blob": "00ff", "empty": "", "nested": [[1], [2]]}
