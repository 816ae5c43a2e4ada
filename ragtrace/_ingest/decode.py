"""OTLP/HTTP trace bodies to ``IngestSpan``: protobuf or JSON, gzip or deflate, bounded.

``decode_traces(body, content_type=..., content_encoding=..., max_bytes=...)`` returns a
``DecodedSpans`` (the spans, and those whose ids are invalid) or raises ``BodyError`` carrying
the HTTP status the receiver answers: 400 for a body that is not an OTLP trace export, 413 for
one that is (or inflates to) more than ``max_bytes``, 415 for another content type.

OTLP/JSON writes trace and span ids as hex (the OTLP specification), unlike protobuf's own JSON
mapping (base64); both are accepted. An id is invalid when it has the wrong length, is all
zeros (trace and span ids; an all-zero parent means "no parent"), or, in JSON, is neither hex
nor base64: such spans are counted in ``DecodedSpans.invalid`` with the first one described in
``invalid_example`` (the receiver refuses the export). The OTLP span flags' "parent is remote"
bits (``0x300``) become ``IngestSpan.parent_remote``. Unknown fields are ignored, as OTLP asks
of receivers.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from ragtrace._ingest.spans import IngestEvent, IngestSpan

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
_ID_KEYS.update({"trace_id": 32, "span_id": 16, "parent_span_id": 16})
_MAX_DEPTH = 32
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200  # SpanFlags: the parent's "is remote" is known, and set
_BAD_ID = base64.b64encode(b"\x00").decode("ascii")  # a one-byte id: invalid whatever the field


class BodyError(ValueError):
    """A request body the receiver refuses, with the HTTP status to answer."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class DecodedSpans:
    """What one export request held."""

    spans: list[IngestSpan]
    invalid: int = 0
    """Spans not decoded because an id was invalid (wrong length, all zeros, not hex)."""
    invalid_example: str = ""
    """What was wrong with the first of them, for the error message."""


def media_type(content_type: str | None) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def decode_traces(
    body: bytes, *, content_type: str | None, content_encoding: str | None, max_bytes: int
) -> DecodedSpans:
    """Decode one ``POST /v1/traces`` body.

    Raises:
        BodyError: 415 for a content type other than protobuf or JSON, 413 when the body
            inflates past ``max_bytes``, 400 for an unknown encoding or a body that does not
            decode as an ``ExportTraceServiceRequest``.
    """
    kind = media_type(content_type)
    if kind not in (PROTOBUF, JSON):
        raise BodyError(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            f"content type {kind or '(none)'!r}: send {PROTOBUF} or {JSON}",
        )
    raw = _inflate(body, (content_encoding or "identity").strip().lower(), max_bytes)
    message = ExportTraceServiceRequest()
    try:
        if kind == PROTOBUF:
            message.ParseFromString(raw)
        else:
            message = _parse_json(raw)
    except (DecodeError, json_format.ParseError, ValueError, RecursionError, TypeError) as exc:
        raise BodyError(HTTPStatus.BAD_REQUEST, f"not an OTLP trace export: {exc}") from None
    return spans_of(message)


def spans_of(message: ExportTraceServiceRequest) -> DecodedSpans:
    """The spans of a decoded export request (the gRPC receiver gets it decoded already)."""
    spans: list[IngestSpan] = []
    invalid = 0
    example = ""
    for span in _spans(message):
        if isinstance(span, str):
            invalid += 1
            example = example or span
        else:
            spans.append(span)
    return DecodedSpans(spans, invalid, example)


def _inflate(body: bytes, encoding: str, max_bytes: int) -> bytes:
    if encoding in ("identity", ""):
        return body
    if encoding not in ("gzip", "deflate", "x-gzip"):
        raise BodyError(HTTPStatus.BAD_REQUEST, f"content encoding {encoding!r}: use gzip")
    # gzip and zlib headers are detected from the data (wbits 32 + 15); raw deflate as a fallback.
    for wbits in (47, -15):
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, max_bytes + 1)
        except zlib.error:
            continue
        if len(out) > max_bytes:
            raise BodyError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body inflates to more than {max_bytes} bytes",
            )
        if not inflater.eof:
            raise BodyError(HTTPStatus.BAD_REQUEST, f"truncated {encoding} body")
        return out
    raise BodyError(HTTPStatus.BAD_REQUEST, f"body is not valid {encoding}")


def _parse_json(raw: bytes) -> ExportTraceServiceRequest:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("JSON body is not UTF-8") from None
    if not isinstance(data, dict):
        raise ValueError("JSON body is not an object")
    message = ExportTraceServiceRequest()
    json_format.ParseDict(_ids_to_base64(data, 0), message, ignore_unknown_fields=True)
    return message


def _ids_to_base64(node: Any, depth: int) -> Any:
    """Hex trace and span ids (OTLP/JSON) rewritten as the base64 protobuf's parser expects."""
    if depth > _MAX_DEPTH:
        raise ValueError("JSON nested too deeply")
    if isinstance(node, list):
        return [_ids_to_base64(item, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        size = _ID_KEYS.get(key)
        converted = value
        if size is not None and isinstance(value, str) and value:
            converted = _id_as_base64(value, size)
        elif isinstance(value, dict | list):
            converted = _ids_to_base64(value, depth + 1)
        out[key] = converted
    return out


def _id_as_base64(value: str, hex_size: int) -> str:
    """A JSON id as protobuf's JSON parser reads bytes: hex (OTLP/JSON) converted, base64 of
    the right length kept, anything else made an invalid one-byte id."""
    if len(value) == hex_size:
        with contextlib.suppress(binascii.Error, ValueError):
            return base64.b64encode(binascii.unhexlify(value)).decode("ascii")
    with contextlib.suppress(binascii.Error, ValueError):
        if len(base64.b64decode(value, validate=True)) == hex_size // 2:
            return value
    return _BAD_ID


def _invalid_ids(span: Any) -> str | None:
    """What is wrong with the span's ids, or None."""
    for name, value, size in (("traceId", span.trace_id, 16), ("spanId", span.span_id, 8)):
        if len(value) != size:
            return f"{name} of {len(value)} bytes (span {span.name[:80]!r}); expected {size}"
        if not any(value):
            return f"{name} is all zeros (span {span.name[:80]!r})"
    if len(span.parent_span_id) not in (0, 8):
        return f"parentSpanId of {len(span.parent_span_id)} bytes (span {span.name[:80]!r})"
    return None


def _spans(message: ExportTraceServiceRequest) -> Iterator[IngestSpan | str]:
    """Each span as an ``IngestSpan``, or what is wrong with its ids."""
    for resource_spans in message.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            for span in scope_spans.spans:
                problem = _invalid_ids(span)
                if problem is not None:
                    yield problem
                    continue
                parent = span.parent_span_id
                flags = int(span.flags)
                yield IngestSpan(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=parent.hex() if any(parent) else None,
                    parent_remote=bool(flags & _HAS_IS_REMOTE and flags & _IS_REMOTE),
                    name=span.name,
                    kind=int(span.kind),
                    start_ns=int(span.start_time_unix_nano),
                    end_ns=int(span.end_time_unix_nano),
                    attributes=_attributes(span.attributes),
                    events=tuple(
                        IngestEvent(e.name, int(e.time_unix_nano), _attributes(e.attributes))
                        for e in span.events
                    ),
                    status_code=int(span.status.code),
                    status_message=span.status.message,
                    resource=resource,
                    scope=scope,
                    size=span.ByteSize(),
                )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value, 0) for kv in pairs if isinstance(kv, KeyValue)}


def _value(value: AnyValue, depth: int) -> Any:
    which = value.WhichOneof("value")
    if which is None or depth > _MAX_DEPTH:
        return None
    if which == "array_value":
        return [_value(v, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which)
