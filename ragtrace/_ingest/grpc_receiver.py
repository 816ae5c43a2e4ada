"""The OTLP/gRPC trace receiver of ``ragtrace ingest`` (``--grpc-listen``; needs ``grpcio``,
the ``ingest`` extra).

It answers ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` as the OTLP
specification says: OK with ``partial_success`` when spans were not kept, ``UNAUTHENTICATED``
without the configured bearer token (``authorization`` metadata), ``INVALID_ARGUMENT`` for an
export holding a span with an invalid id, ``UNAVAILABLE`` when the assembly buffer or the
evaluation queue is full, or the service is closing (exporters retry it with backoff),
``RESOURCE_EXHAUSTED`` with a ``RetryInfo`` when ``ingest_max_in_flight`` exports are being
decoded and assembled already (``ragtrace._ingest.admission``; answered before the message is
decoded), and gRPC's own ``RESOURCE_EXHAUSTED`` without one for a message over
``max_request_bytes`` (counted ``too_large``; retrying it cannot help). gzip is handled by
gRPC. This is what the Collector's ``loadbalancing`` exporter speaks to its backends, so
several ingest replicas can take traces routed by trace id.

Every ``UNAVAILABLE``, and the ``RESOURCE_EXHAUSTED`` of a full admission, carries a
``google.rpc.RetryInfo`` whose ``retry_delay`` is the HTTP receiver's ``Retry-After``
(``retry_after_s``, 2 s by default), as the OTLP specification asks of a throttling server:
in the status details (``grpc-status-details-bin``, read by the Collector and the Go and Java
exporters) and as ``google.rpc.retryinfo-bin`` trailing metadata (read by the Python SDK's
exporter; the Collector retries a ``RESOURCE_EXHAUSTED`` only with it). An over-size message
gets none: retrying it cannot help.

The server runs ``threads`` beyond the admission bound, so that exports past the bound are
answered at once rather than waiting for a thread.

The method is served as a request stream of one message, so that the token (in the call's
metadata, which arrives first) is checked before the message is read at all: a caller without
the token never makes the server decode its body. What gRPC receives of it before the check is
bounded by the HTTP/2 window the server opens to a new call. With a token, the server keeps that
window at its initial size (gRPC's bandwidth-delay probing off), so a flood of unauthenticated
32 MiB calls costs about 1 MiB; with probing on, the window grows with the link, and the same
flood made the server buffer 20-80 MiB (``grpcio`` 1.85, loopback). Probing stays on without a
token (loopback, or an open server by choice), where it carries large exports faster on a slow
link (docs/decisions/grpc-window-before-the-token.md).
"""

from __future__ import annotations

import contextlib
from concurrent import futures
from typing import Any

from ragtrace._ingest.admission import Admission
from ragtrace._ingest.decode import spans_of
from ragtrace._ingest.receiver import (
    Accept,
    Outcome,
    ReceiverOptions,
    Redact,
    invalid_ids_message,
    redacted,
)
from ragtrace._network import authorized
from ragtrace._network.http import connect_host

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
METHOD = "Export"


class OtlpGrpcReceiver:
    """A gRPC server for OTLP trace exports, feeding the same ``accept`` as the HTTP receiver.

    Args:
        options: Address and port (4317 is OTLP/gRPC's), token, size limit.
        accept: Called with each decoded export; decides OK or UNAVAILABLE.
        on_outcome: Called with ``(outcome, spans)`` for every export.
        threads: Requests served at once beyond the admission bound (those answer refusals).
        redact: Applied to every message sent back (a span's name in an invalid-id error,
            ``partial_success``); None: sent as is.
        admission: The bound on exports decoded at once, shared with the HTTP receiver; None:
            no bound, refusals not counted.

    Raises:
        ImportError: ``grpcio`` is not installed (``pip install 'ragtrace[ingest]'``).
        OSError: The address cannot be bound.
    """

    def __init__(
        self,
        options: ReceiverOptions,
        accept: Accept,
        on_outcome: Outcome,
        threads: int = 4,
        *,
        redact: Redact | None = None,
        admission: Admission | None = None,
    ) -> None:
        try:
            import grpc
        except ImportError as exc:
            raise ImportError(
                f"OTLP/gRPC needs grpcio: pip install 'ragtrace[ingest]' ({exc})"
            ) from exc
        self.options = options
        self.redact = redact
        self.admission = admission if admission is not None else Admission()
        self.closing = False
        threads += self.admission.max_in_flight or 0
        server_options = [
            ("grpc.max_receive_message_length", options.max_request_bytes),
            ("grpc.so_reuseport", 0),
        ]
        if options.token is not None:  # a new call's window stays small until its token is read
            server_options.append(("grpc.http2.bdp_probe", 0))
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ragtrace-grpc"),
            options=server_options,
        )
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

        export = _TraceService(self, accept, on_outcome, grpc).Export
        handler = grpc.stream_unary_rpc_method_handler(
            export,
            request_deserializer=pb.ExportTraceServiceRequest.FromString,
            response_serializer=pb.ExportTraceServiceResponse.SerializeToString,
        )
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler}),)
        )
        bound = 0
        with contextlib.suppress(RuntimeError):  # grpcio raises or returns 0, by version
            bound = self._server.add_insecure_port(f"{options.addr}:{options.port}")
        if not bound:
            raise OSError(f"cannot listen on {options.addr}:{options.port} (gRPC)")
        self.port = bound

    @property
    def endpoint(self) -> str:
        """``host:port``, for OTLP/gRPC exporters on this machine."""
        return f"{connect_host(self.options.addr)}:{self.port}"

    @property
    def listening(self) -> str:
        """The address and port the server is bound to."""
        host = self.options.addr
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def start(self) -> None:
        self._server.start()

    def close(self, grace_s: float = 2.0) -> None:
        """Refuse new exports, finish those in flight (up to ``grace_s``), stop (idempotent)."""
        self.closing = True
        self._server.stop(grace_s).wait(grace_s + 1)


class _TraceService:
    """``TraceService/Export``, as a stream of one request (see the module docstring)."""

    def __init__(
        self, receiver: OtlpGrpcReceiver, accept: Accept, on_outcome: Outcome, grpc: Any
    ) -> None:
        self._receiver = receiver
        self._accept = accept
        self._on_outcome = on_outcome
        self._grpc = grpc

    def Export(self, requests: Any, context: Any) -> Any:  # the gRPC method's name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        codes = self._grpc.StatusCode
        token = self._receiver.options.token
        if token is not None:  # before anything of the message is read
            metadata = dict(context.invocation_metadata() or ())
            if not authorized(metadata.get("authorization"), token):
                self._on_outcome("unauthorized", 0)
                context.abort(codes.UNAUTHENTICATED, "missing or wrong bearer token")
        admission = self._receiver.admission
        if self._receiver.closing:
            admission.refused("shutting_down")
            self._on_outcome("busy", 0)
            self._retry_later(context, "shutting down")
        try:
            request = next(requests, None)
        except self._grpc.RpcError:
            request = None
        if request is None:  # gRPC refused it (over max_request_bytes), or the sender gave up
            self._on_outcome("too_large", 0)
            context.abort(codes.RESOURCE_EXHAUSTED, "no message received within the size limit")
            return ExportTraceServiceResponse()  # not reached: abort raises
        if not admission.enter():  # counted; nothing of the export was decoded or kept
            self._on_outcome("busy", 0)
            message = f"{admission.max_in_flight} exports are being processed already"
            self._retry_later(context, f"{message}; retry later", codes.RESOURCE_EXHAUSTED)
        try:
            return self._take(request, context)
        finally:
            admission.leave()

    def _take(self, request: Any, context: Any) -> Any:
        """Decode an admitted export, offer it to the service, answer."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        codes = self._grpc.StatusCode
        decoded = spans_of(request)
        spans = len(decoded.spans) + decoded.invalid
        if decoded.invalid:
            self._on_outcome("invalid_id", spans)
            message = redacted(self._receiver.redact, invalid_ids_message(decoded))
            context.abort(codes.INVALID_ARGUMENT, message)
        verdict = self._accept(decoded)
        if not verdict.accepted:
            self._on_outcome("busy", spans)
            self._retry_later(context, verdict.message or "buffer full; retry later")
        self._on_outcome("accepted", spans)
        response = ExportTraceServiceResponse()
        if verdict.rejected_spans:
            response.partial_success.rejected_spans = verdict.rejected_spans
            response.partial_success.error_message = redacted(
                self._receiver.redact, verdict.message
            )
        return response

    def _retry_later(self, context: Any, message: str, code: Any = None) -> None:
        """Abort with ``code`` (``UNAVAILABLE`` by default) and a ``RetryInfo`` of
        ``retry_after_s`` (raises)."""
        code = code if code is not None else self._grpc.StatusCode.UNAVAILABLE
        message = redacted(self._receiver.redact, message)
        delay_s = self._receiver.options.retry_after_s
        context.set_trailing_metadata(retry_metadata(code.value[0], message, delay_s))
        context.abort(code, message)


def retry_metadata(code: int, message: str, delay_s: float) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata telling an OTLP exporter to retry after ``delay_s``: a
    ``google.rpc.Status`` (``code``, ``message``) whose details hold a ``RetryInfo``, and the
    bare ``RetryInfo`` under the key the Python SDK's exporter reads."""
    from google.protobuf import any_pb2, duration_pb2
    from google.rpc import error_details_pb2, status_pb2

    seconds = int(delay_s)
    delay = duration_pb2.Duration(seconds=seconds, nanos=int((delay_s - seconds) * 1e9))
    info = error_details_pb2.RetryInfo(retry_delay=delay)
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=code, message=message, details=[detail])
    return (
        ("grpc-status-details-bin", status.SerializeToString()),
        ("google.rpc.retryinfo-bin", info.SerializeToString()),
    )
