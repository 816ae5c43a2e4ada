"""Build OTLP trace export bodies for the ingest tests: protobuf, OTLP/JSON (hex ids), gzip.

``export_request(spans)`` takes ``SpanSpec`` items and returns an ``ExportTraceServiceRequest``
grouped by service name; ``as_json`` writes it as OTLP/JSON with hex ids, as the specification
and the Collector's ``otlphttp`` exporter with ``encoding: json`` do.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class SpanSpec:
    """One span to put on the wire."""

    trace: int
    span: int
    parent: int | None = None
    name: str = "span"
    attributes: Mapping[str, Any] = field(default_factory=dict)
    service: str = "shop-assistant"
    start_ns: int = 1_700_000_000_000_000_000
    end_ns: int = 1_700_000_000_500_000_000
    scope: str = "tests"
    flags: int = 0
    """OTLP span flags (``0x300``: the parent is remote, as SDKs write behind a gateway)."""

    @property
    def trace_id(self) -> str:
        return f"{self.trace:032x}"

    @property
    def span_id(self) -> str:
        return f"{self.span:016x}"


def _set(value: AnyValue, item: Any) -> None:
    if isinstance(item, bool):
        value.bool_value = item
    elif isinstance(item, int):
        value.int_value = item
    elif isinstance(item, float):
        value.double_value = item
    elif isinstance(item, bytes):
        value.bytes_value = item
    elif isinstance(item, list | tuple):
        for element in item:
            _set(value.array_value.values.add(), element)
    else:
        value.string_value = str(item)


def export_request(spans: Sequence[SpanSpec]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    by_service: dict[str, Any] = {}
    for spec in spans:
        scope_spans = by_service.get(spec.service)
        if scope_spans is None:
            resource_spans = request.resource_spans.add()
            attr = resource_spans.resource.attributes.add()
            attr.key, attr.value.string_value = "service.name", spec.service
            scope_spans = by_service[spec.service] = resource_spans.scope_spans.add()
            scope_spans.scope.name = spec.scope
        span = scope_spans.spans.add()
        span.trace_id = bytes.fromhex(spec.trace_id)
        span.span_id = bytes.fromhex(spec.span_id)
        if spec.parent is not None:
            span.parent_span_id = bytes.fromhex(f"{spec.parent:016x}")
        span.name = spec.name
        span.flags = spec.flags
        span.kind = 1
        span.start_time_unix_nano = spec.start_ns
        span.end_time_unix_nano = spec.end_ns
        for key, item in spec.attributes.items():
            attr = span.attributes.add()
            attr.key = key
            _set(attr.value, item)
    return request


def as_protobuf(spans: Sequence[SpanSpec]) -> bytes:
    return export_request(spans).SerializeToString()


def as_json(spans: Sequence[SpanSpec]) -> bytes:
    """OTLP/JSON: lowerCamelCase keys, hex trace and span ids."""
    return json.dumps(hex_ids(json_format.MessageToDict(export_request(spans)))).encode()


def hex_ids(node: Any) -> Any:
    """Protobuf's JSON mapping (base64 ids) rewritten as OTLP/JSON (hex trace and span ids)."""
    if isinstance(node, list):
        return [hex_ids(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: base64.b64decode(value).hex()
        if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str)
        else hex_ids(value)
        for key, value in node.items()
    }
