"""``ragtrace ingest``: evaluate any OpenTelemetry-instrumented RAG app from its spans.

An OTLP/HTTP receiver takes the spans a Collector (or an SDK exporter) sends; the assembler
buffers them per trace until the trace is complete; a mapper per convention (OpenInference,
OpenLLMetry, OTel GenAI, ragtrace's own) rebuilds one ``RagRecord`` per request; the record
goes through the same sampler, queue and evaluators as a captured one. Scores go out as
Prometheus metrics labelled ``app=<service.name>``, as ``gen_ai.evaluation.result`` log events
on the original trace and span (to ``otlp_endpoint``) and, with ``phoenix_endpoint``, as Phoenix
span annotations on the request's root span. With ``queue_url`` the records are shipped to a
Redis stream for ``ragtrace worker`` processes instead of being evaluated here::

    service = IngestService(IngestOptions(config_file="ragtrace.yaml", metrics_port=9464))
    service.start()
    service.wait()         # until stop() (SIGTERM in the CLI)
    service.drain()

Spans of ragtrace's own evaluation results that come back through the Collector are dropped
(``evaluation_span``), so scores are never scored again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace.capture import semconv as sc
from ragtrace.config import Config
from ragtrace.exporters.base import ScoreSink
from ragtrace.exporters.ingest_metrics import IngestMetrics
from ragtrace.exporters.prometheus import MetricsServer, start_metrics_server
from ragtrace.ingest.assembly import AssemblyLimits, CompletedTrace, TraceAssembler
from ragtrace.ingest.decode import DecodedSpans
from ragtrace.ingest.grpc_receiver import OtlpGrpcReceiver
from ragtrace.ingest.mappers import RequestsFailed, select
from ragtrace.ingest.receiver import Acceptance, OtlpReceiver, ReceiverOptions
from ragtrace.ingest.spans import IngestSpan, TraceView
from ragtrace.runtime.instance import Ragtrace
from ragtrace.runtime.tracing import TRACER_NAME

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestOptions:
    """How ``ragtrace ingest`` runs.

    Attributes:
        receiver: Where the OTLP/HTTP receiver listens, its token and size limit.
        grpc: Also serve OTLP/gRPC here (None: HTTP only); needs ``grpcio``.
        limits: When a trace is complete, and the buffer's bounds.
        config_file: Settings file (evaluators, sampling, pipeline sizes, queue).
        evaluators: Evaluator names instead of the settings file's.
        app: Name on ragtrace's own telemetry (records carry their service's name).
        queue_url: Ship records to this Redis stream instead of evaluating them here.
        metrics_port: Serve ``/metrics`` and ``/healthz`` here (None: none; 0: a free port).
        metrics_addr: Address of that endpoint.
        otlp_endpoint: Export evaluation results there (typically back to the Collector):
            ``gen_ai.evaluation.result`` log events on each request's own trace and span.
        phoenix_endpoint: Also post every score as a Phoenix span annotation there.
        tick_s: How often complete traces are looked for.
        drain_timeout_s: On stop, how long to wait for records being evaluated.
    """

    receiver: ReceiverOptions = field(default_factory=ReceiverOptions)
    grpc: ReceiverOptions | None = None
    limits: AssemblyLimits = field(default_factory=AssemblyLimits)
    config_file: str | None = None
    evaluators: tuple[str, ...] | None = None
    app: str = "ragtrace-ingest"
    queue_url: str | None = None
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    otlp_endpoint: str | None = None
    phoenix_endpoint: str | None = None
    tick_s: float = 0.25
    drain_timeout_s: float = 20.0


class IngestService:
    """Receiver, assembler, mappers and a ``Ragtrace`` runtime, wired together.

    Args:
        options: How to run.
        registry: Prometheus registry (default: the global one).
        score_sinks: More sinks for the scores (a ``ReviewSink``, a test's collector).

    Raises:
        ValueError: A bad option or settings file.
        OSError: The receiver's address cannot be bound.
    """

    def __init__(
        self,
        options: IngestOptions | None = None,
        *,
        registry: CollectorRegistry | None = None,
        score_sinks: Sequence[ScoreSink] = (),
    ) -> None:
        self.options = options = options or IngestOptions()
        self.registry = registry if registry is not None else REGISTRY
        config = Config.resolve(
            app=options.app,
            config_file=options.config_file,
            otlp_endpoint=options.otlp_endpoint,
            phoenix_endpoint=options.phoenix_endpoint,
            queue_url=options.queue_url,
            metrics_port=None,
        )
        self.metrics = IngestMetrics(self.registry)
        self.runtime: Ragtrace | None = None
        try:
            self.runtime = Ragtrace(
                config,
                registry=self.registry,
                score_sinks=score_sinks,
                evaluators=list(options.evaluators) if options.evaluators is not None else None,
            )
            self.assembler = TraceAssembler(options.limits, on_drop=self.metrics.count_dropped)
            self.receiver = OtlpReceiver(options.receiver, self._accept, self.metrics.count_request)
            self.grpc_receiver: OtlpGrpcReceiver | None = None
            if options.grpc is not None:
                self.grpc_receiver = OtlpGrpcReceiver(
                    options.grpc, self._accept, self.metrics.count_request
                )
        except BaseException:
            receiver = getattr(self, "receiver", None)
            if receiver is not None:
                receiver.close()
            if self.runtime is not None:
                self.runtime.shutdown(timeout_s=1.0)
            self.metrics.unregister()
            raise
        self.server: MetricsServer | None = None
        self._stopped = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="ragtrace-ingest-assembly")
        self._last_tick = time.monotonic()

    @property
    def endpoint(self) -> str:
        """The receiver's ``http://host:port/v1/traces``."""
        return self.receiver.endpoint

    def start(self) -> None:
        """Serve metrics and health, start the pipeline, accept spans."""
        assert self.runtime is not None
        if self.options.metrics_port is not None:
            self.server = start_metrics_server(
                self.options.metrics_port,
                self.options.metrics_addr,
                self.registry,
                health=self.health,
            )
        self.runtime.pipeline.start()
        self._ticker.start()
        self.receiver.start()
        if self.grpc_receiver is not None:
            self.grpc_receiver.start()
        _log.info("ragtrace ingest: OTLP/HTTP on %s", self.endpoint)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until ``stop()`` (True) or ``timeout_s`` (False)."""
        return self._stopped.wait(timeout_s)

    def stop(self) -> None:
        """Ask ``wait`` to return (safe from a signal handler)."""
        self._stopped.set()

    def drain(self) -> bool:
        """Stop receiving (503 to late senders), hand on every open trace, finish evaluating,
        shut down. True if the pipeline finished within ``drain_timeout_s``."""
        self.receiver.close()
        if self.grpc_receiver is not None:
            self.grpc_receiver.close()
        self._stopped.set()
        if self._ticker.is_alive():
            self._ticker.join()
        self.process(self.assembler.drain())
        finished = True
        if self.runtime is not None:
            finished = self.runtime.flush(self.options.drain_timeout_s)
            self.runtime.shutdown(timeout_s=min(5.0, self.options.drain_timeout_s))
        if self.server is not None:
            self.server.close()
        self.metrics.unregister()
        return finished

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``/healthz``: receiving, and the assembly loop running."""
        age = time.monotonic() - self._last_tick
        problems = []
        if self.receiver.closing:
            problems.append("receiver closed")
        if age > max(5.0, 20 * self.options.tick_s):
            problems.append(f"assembly loop last ran {age:.1f}s ago")
        details = {
            "healthy": not problems,
            "problems": problems,
            "open_traces": self.assembler.open_traces,
            "buffer_bytes": self.assembler.buffered_bytes,
        }
        return not problems, details

    def process(self, traces: Sequence[CompletedTrace]) -> int:
        """Map completed traces to records and hand them to the pipeline; the records handed."""
        handed = 0
        now = time.monotonic()
        for trace in traces:
            self.metrics.count_trace(trace.reason, now - trace.last_span_at)
            handed += self._map(trace)
        self.metrics.observe_buffer(self.assembler.open_traces, self.assembler.buffered_bytes)
        return handed

    def _map(self, trace: CompletedTrace) -> int:
        assert self.runtime is not None
        view = TraceView(trace.spans)
        mapper = select(view)
        if mapper is None:
            self.metrics.count_unmapped("no_convention")
            return 0
        try:
            mapped = mapper.map(view)
        except RequestsFailed as failed:  # some requests of the trace: the rest go on
            for exc in failed.errors:
                self.runtime.diagnostics.error("ingest.map", exc)
                self.metrics.count_unmapped("mapper_error")
            mapped = failed.records
        except Exception as exc:  # a mapper bug must not stop the loop
            self.runtime.diagnostics.error("ingest.map", exc)
            self.metrics.count_unmapped("mapper_error")
            return 0
        if not mapped:
            self.metrics.count_unmapped("no_request")
        for item in mapped:
            self.metrics.count_record(item.convention, item.missing)
            self.runtime.submit_record(item.record)
        return len(mapped)

    def _accept(self, decoded: DecodedSpans) -> Acceptance:
        spans = [s for s in decoded.spans if not _own_evaluation(s)]
        own = len(decoded.spans) - len(spans)
        added = self.assembler.add(spans)
        if not added.accepted:
            return Acceptance(False, message="assembly buffer full; retry later")
        self.metrics.count_dropped("evaluation_span", own)
        self.metrics.count_dropped("invalid_id", decoded.invalid)
        rejected = decoded.invalid + added.dropped
        message = (
            f"{rejected} spans not kept (invalid ids, late or over limits)" if rejected else ""
        )
        return Acceptance(True, rejected_spans=rejected, message=message)

    def _tick(self) -> None:
        while not self._stopped.wait(self.options.tick_s):
            self._last_tick = time.monotonic()
            try:
                self.process(self.assembler.due())
            except Exception as exc:  # keep assembling whatever one trace did
                if self.runtime is not None:
                    self.runtime.diagnostics.error("ingest.assembly", exc)


def _own_evaluation(span: IngestSpan) -> bool:
    """A ragtrace evaluation span (``evaluate <evaluator>``, or ``ragtrace.evaluation`` from
    older versions): ragtrace's scores coming back through the Collector."""
    named = span.name == sc.SPAN_NAME_EVALUATION or span.name.startswith(
        sc.evaluation_span_name("")
    )
    return named and (
        span.scope == TRACER_NAME
        or sc.GEN_AI_EVALUATION_NAME in span.attributes
        or sc.RAGTRACE_EVALUATION_TRACE_ID in span.attributes
    )
