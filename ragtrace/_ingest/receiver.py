"""The OTLP/HTTP trace receiver of ``ragtrace ingest``: ``POST /v1/traces``.

Protobuf (``application/x-protobuf``) or JSON (``application/json``) bodies, optionally gzip or
deflate, as the OpenTelemetry Collector's ``otlphttp`` exporter and the SDKs' OTLP/HTTP
exporters send them. Answers follow the OTLP/HTTP specification: 200 with an
``ExportTraceServiceResponse`` (``partial_success`` when spans were dropped), else a
``google.rpc.Status`` body in the request's encoding and

- 400 for a body that does not decode, or that holds a span with an invalid trace, span or
  parent id (all zeros, wrong length, not hex: the export is refused whole and its spans
  counted as ``invalid_id``), 411 without ``Content-Length``,
- 401 without the configured bearer token, 404 for another path, 405 for another method,
- 413 for a body (or its inflated form) over ``max_request_bytes``, 415 for another content type,
- 429 with ``Retry-After`` when ``ingest_max_in_flight`` exports are being decoded and
  assembled already (``ragtrace._ingest.admission``: answered before the body is decoded), or
  the assembly buffer is full, or the evaluation queue has no room for the records the export
  would complete (the Collector retries),
- 503 with ``Retry-After`` while shutting down.

``OtlpReceiver`` only decodes and answers; ``accept(decoded)`` (the ingest service) decides
whether the spans fit and returns an ``Acceptance``. Error bodies may quote the request (a
field's value in a parse error, a span's name, the path): with a redaction policy (``redact``,
the service's ``Redaction.text``) every message sent back goes through it. A connection that
breaks (a client that connects and closes, resets, or times out) is logged in one line, never
with a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragtrace._ingest.admission import Admission
from ragtrace._ingest.decode import (
    JSON,
    PROTOBUF,
    BodyError,
    DecodedSpans,
    decode_traces,
    media_type,
)
from ragtrace._network import authorized
from ragtrace._network.http import QuietHandler, RequestRefused, bind, connect_host, read_body
from ragtrace._redaction import REDACTION_FAILED

TRACES_PATH = "/v1/traces"
_OUTCOMES = {
    HTTPStatus.BAD_REQUEST: "bad_request",
    HTTPStatus.LENGTH_REQUIRED: "bad_request",
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "too_large",
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    HTTPStatus.UNAUTHORIZED: "unauthorized",
    HTTPStatus.TOO_MANY_REQUESTS: "busy",
    HTTPStatus.SERVICE_UNAVAILABLE: "busy",
}
# gRPC status codes carried in the google.rpc.Status body, per HTTP status.
_RPC_CODES = {400: 3, 401: 16, 404: 12, 405: 12, 411: 3, 413: 8, 415: 3, 429: 8, 503: 14}


@dataclass(frozen=True)
class ReceiverOptions:
    """How the receiver listens and what it takes.

    Attributes:
        addr: Address to bind (``0.0.0.0`` to accept from other machines).
        port: Port (4318 is OTLP/HTTP's; 0 picks a free one).
        token: When set, every request must carry ``Authorization: Bearer <token>``.
        max_request_bytes: Largest body accepted, on the wire and once inflated.
        retry_after_s: The ``Retry-After`` given with 429 and 503.
        read_timeout_s: How long a connection may sit idle or send slowly.
    """

    addr: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    max_request_bytes: int = 32 * 1024 * 1024
    retry_after_s: int = 2
    read_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1024:
            raise ValueError(f"max_request_bytes must be >= 1024, got {self.max_request_bytes}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0-65535, got {self.port}")


@dataclass(frozen=True, slots=True)
class Acceptance:
    """The service's answer to one decoded export."""

    accepted: bool
    """False: no room now (429); nothing of the export was kept."""
    rejected_spans: int = 0
    """Spans received but not kept (reported as OTLP ``partial_success``)."""
    message: str = ""


Accept = Callable[[DecodedSpans], Acceptance]
Outcome = Callable[[str, int], None]
Redact = Callable[[str], str]


def redacted(redact: Redact | None, message: str) -> str:
    """``message`` through ``redact`` (None: as it is); a failing policy gives a fixed text."""
    if redact is None or not message:
        return message
    try:
        out = redact(message)
    except Exception:
        return REDACTION_FAILED
    return out if isinstance(out, str) else REDACTION_FAILED


def invalid_ids_message(decoded: DecodedSpans) -> str:
    """Why an export with invalid ids is refused."""
    return (
        f"{decoded.invalid} span(s) with an invalid id ({decoded.invalid_example}): trace ids "
        "are 16 bytes, span ids 8 (32 and 16 hex digits in OTLP/JSON), never all zeros"
    )


class OtlpReceiver:
    """A threaded HTTP server answering OTLP trace exports.

    Args:
        options: Address, token and limits.
        accept: Called with each decoded export; decides 200 or 429.
        on_outcome: Called with ``(outcome, spans)`` for every export (for the metrics).
        redact: Applied to every message sent back (error bodies, ``partial_success``); None:
            sent as is.
        admission: The bound on exports decoded at once, shared with the gRPC receiver; None:
            no bound, refusals not counted.

    Raises:
        OSError: The address cannot be bound, naming ``addr:port``.
    """

    def __init__(
        self,
        options: ReceiverOptions,
        accept: Accept,
        on_outcome: Outcome,
        *,
        redact: Redact | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.options = options
        self.redact = redact
        self.admission = admission if admission is not None else Admission()
        self.closing = False
        handler = type(
            "Handler", (_Handler,), {"receiver": self, "timeout": options.read_timeout_s}
        )
        self._server = bind(
            options.addr,
            options.port,
            handler,
            what="ragtrace ingest (OTLP/HTTP)",
            thread="ragtrace-ingest-http",
            poll_s=0.2,
        )
        self.accept = accept
        self.on_outcome = on_outcome

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def endpoint(self) -> str:
        """``http://addr:port/v1/traces``, for exporters on this machine."""
        return f"http://{connect_host(self.options.addr)}:{self.port}{TRACES_PATH}"

    @property
    def listening(self) -> str:
        """The address and port the socket is bound to (``[::]:4318``, ``127.0.0.1:4318``)."""
        return self._server.listening

    def start(self) -> None:
        self._server.start()

    def close(self) -> None:
        """Answer 503 to new exports, stop listening, release the port (idempotent)."""
        self.closing = True
        self._server.close()


class _Handler(QuietHandler):
    receiver: OtlpReceiver
    protocol_version = "HTTP/1.1"
    server_version = "ragtrace-ingest"
    disable_nagle_algorithm = True  # an answer's head and body go out without waiting for an ACK

    def do_GET(self) -> None:
        self._refuse(HTTPStatus.METHOD_NOT_ALLOWED, f"POST OTLP traces to {TRACES_PATH}")

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self) -> None:
        rx = self.receiver
        path = self.path.split("?", 1)[0]
        if path != TRACES_PATH:
            self._refuse(HTTPStatus.NOT_FOUND, f"unknown path {path!r}: use {TRACES_PATH}")
            return
        if rx.options.token is not None and not authorized(
            self.headers.get("Authorization"), rx.options.token
        ):
            self._refuse(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token")
            return
        try:
            body = read_body(self, rx.options.max_request_bytes, required=True)
        except RequestRefused as refused:
            self._refuse(refused.status, refused.message)
            return
        if rx.closing:
            rx.admission.refused("shutting_down")
            self._refuse(HTTPStatus.SERVICE_UNAVAILABLE, "shutting down", retry=True, read=True)
            return
        if not rx.admission.enter():  # counted; nothing of the export was decoded or kept
            rx.on_outcome("busy", 0)
            message = (
                f"{rx.admission.max_in_flight} exports are being processed already; retry later"
            )
            self._refuse(HTTPStatus.TOO_MANY_REQUESTS, message, retry=True, read=True)
            return
        try:
            self._take(body)
        finally:
            rx.admission.leave()

    def _take(self, body: bytes) -> None:
        """Decode an admitted export, offer it to the service, answer."""
        rx = self.receiver
        try:
            decoded = decode_traces(
                body,
                content_type=self.headers.get("Content-Type"),
                content_encoding=self.headers.get("Content-Encoding"),
                max_bytes=rx.options.max_request_bytes,
            )
        except BodyError as exc:
            self._refuse(exc.status, str(exc), read=True)
            return
        spans = len(decoded.spans) + decoded.invalid
        if decoded.invalid:
            rx.on_outcome("invalid_id", spans)
            message = invalid_ids_message(decoded)
            self._refuse(HTTPStatus.BAD_REQUEST, message, read=True, count=False)
            return
        verdict = rx.accept(decoded)
        if not verdict.accepted:
            rx.on_outcome("busy", spans)
            message = verdict.message or "buffer full"
            self._refuse(HTTPStatus.TOO_MANY_REQUESTS, message, retry=True, read=True)
            return
        rx.on_outcome("accepted", spans)
        self._answer_ok(verdict)

    def _answer_ok(self, verdict: Acceptance) -> None:
        response = ExportTraceServiceResponse()
        message = redacted(self.receiver.redact, verdict.message)
        if verdict.rejected_spans:
            response.partial_success.rejected_spans = verdict.rejected_spans
            response.partial_success.error_message = message
        if self._wants_json():
            body = b"{}"
            if verdict.rejected_spans:
                partial = {"rejectedSpans": str(verdict.rejected_spans)}
                partial["errorMessage"] = message
                body = json.dumps({"partialSuccess": partial}).encode()
            self._send(HTTPStatus.OK, JSON, body)
        else:
            self._send(HTTPStatus.OK, PROTOBUF, response.SerializeToString())

    def _refuse(
        self,
        status: HTTPStatus,
        message: str,
        *,
        retry: bool = False,
        read: bool = False,
        count: bool = True,
    ) -> None:
        """Answer an error; without ``read`` (the body was not read) the connection closes.
        ``count=False``: the caller counted the outcome already."""
        if count and status != HTTPStatus.TOO_MANY_REQUESTS:  # 429: counted with its spans
            self.receiver.on_outcome(_OUTCOMES.get(status, "bad_request"), 0)
        code = _RPC_CODES.get(int(status), 2)
        message = redacted(self.receiver.redact, message)
        if self._wants_json():
            kind, body = JSON, json.dumps({"code": code, "message": message}).encode()
        else:
            kind = PROTOBUF
            body = status_pb2.Status(code=code, message=message).SerializeToString()
        headers = {"Retry-After": str(self.receiver.options.retry_after_s)} if retry else {}
        if not read:
            self.close_connection = True  # an unread body would be taken for the next request
            headers["Connection"] = "close"
        self._send(status, kind, body, headers)

    def _wants_json(self) -> bool:
        return media_type(self.headers.get("Content-Type")) == JSON

    def _send(
        self, status: HTTPStatus, kind: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)
