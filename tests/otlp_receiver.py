"""A small OTLP/HTTP trace and log receiver for tests: what an exporter really put on the wire.

``OtlpReceiver`` is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) that accepts
``POST /v1/traces`` with an ``application/x-protobuf`` body (optionally gzip or deflate
``Content-Encoding``), decodes it as an ``ExportTraceServiceRequest`` and keeps every span as a
plain ``ReceivedSpan``; ``POST /v1/logs`` likewise keeps every log record as a ``ReceivedLog``
(``wait_for_logs``)::

    with OtlpReceiver() as rx:
        exporter = OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")
        ...
        spans = rx.wait_for_spans(3, timeout_s=5)

It answers an empty ``ExportTraceServiceResponse`` (200). Other paths get 404, other methods 405,
another content type 415, a body that cannot be decompressed or parsed 400 (counted in
``decode_errors``).
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
PROTOBUF = "application/x-protobuf"
_MAX_BODY = 64 * 1024 * 1024
_KIND_PREFIX = "SPAN_KIND_"
_STATUS_PREFIX = "STATUS_CODE_"


@dataclass(frozen=True)
class ReceivedEvent:
    """One span event as it arrived."""

    name: str
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as it arrived, with protobuf values turned into Python values.

    Attributes:
        trace_id: 32 lowercase hex digits.
        span_id: 16 lowercase hex digits.
        parent_span_id: 16 lowercase hex digits, or None for a root span.
        kind: ``INTERNAL``, ``SERVER``, ``CLIENT``, ``PRODUCER``, ``CONSUMER`` or
            ``UNSPECIFIED`` (the names of ``opentelemetry.trace.SpanKind``).
        status_code: ``UNSET``, ``OK`` or ``ERROR`` (the names of ``StatusCode``).
        attributes: str, int, float, bool, bytes, list (arrays) or dict (key-value lists).
        resource: The attributes of the resource the span was exported under.
    """

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str | None
    kind: str
    status_code: str
    status_message: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict[str, Any]
    events: list[ReceivedEvent] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """(trace id, span id, attributes) of each span link."""


@dataclass(frozen=True)
class ReceivedLog:
    """One log record as it arrived (ids as hex, ``""`` when the record has none)."""

    event_name: str
    trace_id: str
    span_id: str
    time_unix_nano: int
    severity_number: int
    severity_text: str
    body: Any
    attributes: dict[str, Any]
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""


def decode_logs(body: bytes) -> list[ReceivedLog]:
    """Every log record of a serialized ``ExportLogsServiceRequest``."""
    request = ExportLogsServiceRequest()
    request.ParseFromString(body)
    out: list[ReceivedLog] = []
    for resource_logs in request.resource_logs:
        resource = key_values(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for r in scope_logs.log_records:
                out.append(
                    ReceivedLog(
                        event_name=r.event_name,
                        trace_id=r.trace_id.hex(),
                        span_id=r.span_id.hex(),
                        time_unix_nano=r.time_unix_nano,
                        severity_number=r.severity_number,
                        severity_text=r.severity_text,
                        body=any_value(r.body),
                        attributes=key_values(r.attributes),
                        resource=dict(resource),
                        scope_name=scope_logs.scope.name,
                    )
                )
    return out


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP ``AnyValue`` (None when no value is set)."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return key_values(value.kvlist_value.values)
    return getattr(value, which)


def key_values(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP ``KeyValue`` pairs as a dict (a repeated key keeps its last value)."""
    return {kv.key: any_value(kv.value) for kv in pairs}


def _enum_name(enum_type: Any, number: int, prefix: str) -> str:
    try:
        name: str = enum_type.Name(number)
    except ValueError:
        return str(number)
    return name.removeprefix(prefix)


def _convert_span(span: Span, resource: dict[str, Any], scope: tuple[str, str]) -> ReceivedSpan:
    return ReceivedSpan(
        name=span.name,
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() or None,
        kind=_enum_name(Span.SpanKind, span.kind, _KIND_PREFIX),
        status_code=_enum_name(Status.StatusCode, span.status.code, _STATUS_PREFIX),
        status_message=span.status.message,
        start_time_unix_nano=span.start_time_unix_nano,
        end_time_unix_nano=span.end_time_unix_nano,
        attributes=key_values(span.attributes),
        events=[
            ReceivedEvent(e.name, e.time_unix_nano, key_values(e.attributes)) for e in span.events
        ],
        resource=dict(resource),
        scope_name=scope[0],
        scope_version=scope[1],
        links=[(k.trace_id.hex(), k.span_id.hex(), key_values(k.attributes)) for k in span.links],
    )


def decode_request(body: bytes) -> list[ReceivedSpan]:
    """Every span of a serialized ``ExportTraceServiceRequest``.

    Raises:
        google.protobuf.message.DecodeError: The body is not such a request.
    """
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = key_values(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = (scope_spans.scope.name, scope_spans.scope.version)
            spans.extend(_convert_span(s, resource, scope) for s in scope_spans.spans)
    return spans


def _decompress(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity", "none"):
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: OtlpReceiver


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 30  # an idle keep-alive connection is dropped after this many seconds

    def setup(self) -> None:
        super().setup()
        self.server.receiver._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.receiver._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:  # quiet in test output
        pass

    def _reply(
        self, status: HTTPStatus, body: bytes = b"", content_type: str = "text/plain"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if not 0 <= length <= _MAX_BODY:
            self.close_connection = True
            self._reply(HTTPStatus.LENGTH_REQUIRED, b"a Content-Length is required")
            return None
        return self.rfile.read(length)

    def do_POST(self) -> None:
        receiver = self.server.receiver
        receiver._count_request()
        path = self.path.split("?", 1)[0]
        if path not in (TRACES_PATH, LOGS_PATH):
            if self._read_body() is None:
                return
            self._reply(HTTPStatus.NOT_FOUND, b"unknown path")
            return
        body = self._read_body()
        if body is None:
            return
        content_type = self.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if content_type != PROTOBUF:
            receiver._count_rejected()
            self._reply(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, b"expected application/x-protobuf")
            return
        encoding = self.headers.get("Content-Encoding", "").strip().lower()
        try:
            raw = _decompress(body, encoding)
            if path == LOGS_PATH:
                logs = decode_logs(raw)
            else:
                spans = decode_request(raw)
        except (DecodeError, ValueError, OSError, EOFError, zlib.error) as exc:
            receiver._count_decode_error(f"{type(exc).__name__}: {exc}")
            self._reply(HTTPStatus.BAD_REQUEST, f"cannot decode: {exc}".encode())
            return
        if path == LOGS_PATH:
            receiver._store_logs(logs)
            self._reply(HTTPStatus.OK, ExportLogsServiceResponse().SerializeToString(), PROTOBUF)
            return
        receiver._store(spans, encoding)
        self._reply(HTTPStatus.OK, ExportTraceServiceResponse().SerializeToString(), PROTOBUF)

    def do_GET(self) -> None:
        self.server.receiver._count_request()
        if self.path.split("?", 1)[0] == TRACES_PATH:
            self._reply(HTTPStatus.METHOD_NOT_ALLOWED, b"POST only")
        else:
            self._reply(HTTPStatus.NOT_FOUND, b"unknown path")


class OtlpReceiver:
    """An OTLP/HTTP trace endpoint on loopback that keeps what it receives.

    Use it as a context manager: the server runs in a daemon thread between ``__enter__`` and
    ``__exit__``. Everything here is thread-safe.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._logs: list[ReceivedLog] = []
        self._connections: set[socket.socket] = set()
        self.requests = 0
        """HTTP requests handled (any path or outcome)."""
        self.exports = 0
        """Export requests accepted (200)."""
        self.rejected = 0
        """Export requests refused for their content type."""
        self.decode_errors = 0
        """Export requests whose body could not be decompressed or decoded (400)."""
        self.errors: list[str] = []
        """What went wrong with each of those bodies."""
        self.encodings: list[str] = []
        """The Content-Encoding of each accepted export (``""`` when none)."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> OtlpReceiver:
        if self._server is not None:
            raise RuntimeError("OtlpReceiver already started")
        server = _Server(("127.0.0.1", 0), _Handler)
        server.receiver = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"otlp-receiver-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and drop open connections (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._cond:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("OtlpReceiver is not running")
        port: int = self._server.server_address[1]
        return port

    @property
    def endpoint(self) -> str:
        """Base URL, ``http://127.0.0.1:PORT`` (traces go to ``endpoint + "/v1/traces"``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        return self.endpoint + TRACES_PATH

    # -- what arrived ---------------------------------------------------------------------------

    @property
    def spans(self) -> list[ReceivedSpan]:
        """A copy of every span received so far, in arrival order."""
        with self._cond:
            return list(self._spans)

    @property
    def logs(self) -> list[ReceivedLog]:
        """A copy of every log record received so far, in arrival order."""
        with self._cond:
            return list(self._logs)

    def wait_for_logs(self, n: int, timeout_s: float = 5.0) -> list[ReceivedLog]:
        """Wait until at least ``n`` log records have arrived and return them all.

        Raises:
            AssertionError: Fewer than ``n`` arrived within ``timeout_s``.
        """
        with self._cond:
            if self._cond.wait_for(lambda: len(self._logs) >= n, timeout=timeout_s):
                return list(self._logs)
            got = len(self._logs)
        raise AssertionError(f"expected {n} log record(s) within {timeout_s:g} s, got {got}")

    def spans_of(self, trace_id: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.trace_id == trace_id]

    def traces(self) -> dict[str, list[ReceivedSpan]]:
        """Spans grouped by trace id."""
        grouped: dict[str, list[ReceivedSpan]] = {}
        for span in self.spans:
            grouped.setdefault(span.trace_id, []).append(span)
        return grouped

    def clear(self) -> None:
        with self._cond:
            self._spans.clear()

    def wait_for_spans(self, n: int, timeout_s: float = 5.0) -> list[ReceivedSpan]:
        """Wait until at least ``n`` spans have arrived and return them all.

        Raises:
            AssertionError: Fewer than ``n`` arrived within ``timeout_s``.
        """
        with self._cond:
            if self._cond.wait_for(lambda: len(self._spans) >= n, timeout=timeout_s):
                return list(self._spans)
            got = len(self._spans)
            errors = list(self.errors)
        raise AssertionError(
            f"expected {n} span(s) within {timeout_s:g} s, got {got} "
            f"({self.requests} request(s), {self.exports} export(s), "
            f"{self.decode_errors} decode error(s) {errors}, {self.rejected} rejected)"
        )

    # -- called by the handler ------------------------------------------------------------------

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _count_request(self) -> None:
        with self._cond:
            self.requests += 1

    def _count_rejected(self) -> None:
        with self._cond:
            self.rejected += 1

    def _count_decode_error(self, error: str) -> None:
        with self._cond:
            self.decode_errors += 1
            self.errors.append(error)

    def _store_logs(self, logs: list[ReceivedLog]) -> None:
        with self._cond:
            self._logs.extend(logs)
            self._cond.notify_all()

    def _store(self, spans: list[ReceivedSpan], encoding: str) -> None:
        with self._cond:
            self._spans.extend(spans)
            self.exports += 1
            self.encodings.append(encoding)
            self._cond.notify_all()


def attributes_with_prefix(attributes: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The attributes whose key starts with ``prefix``."""
    return {k: v for k, v in attributes.items() if k.startswith(prefix)}
