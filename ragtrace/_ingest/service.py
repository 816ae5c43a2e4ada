"""``ragtrace ingest``: evaluate any OpenTelemetry-instrumented RAG app from its spans.

An OTLP/HTTP receiver takes the spans a Collector (or an SDK exporter) sends; the assembler
buffers them per trace until the trace is complete; a mapper per convention (OpenInference,
OpenLLMetry, OTel GenAI, ragtrace's own) rebuilds one ``RagRecord`` per request; the record
goes through the same sampler, queue and evaluators as a captured one. Scores go out as
Prometheus metrics labelled ``app=<service.name>``, as ``gen_ai.evaluation.result`` log events
on the original trace and span (to ``otlp_endpoint``) and, with ``phoenix_endpoint``, as Phoenix
span annotations on the request's root span. With ``queue_url`` the records are shipped to a
Redis stream for ``ragtrace worker`` processes instead of being evaluated here.

Admission comes first: at most ``ingest_max_in_flight`` exports are decoded and assembled at
once (HTTP and gRPC together, ``ragtrace._ingest.admission``); one more is answered 429
(``RESOURCE_EXHAUSTED`` over gRPC) at once, so an ingest short of CPU refuses work instead of
answering every export later.

Backpressure runs end to end: an export is accepted (200) only while the evaluation queue (in
process, or the Redis shipper's buffer, which holds what a full stream refuses) has room for a
record from every open trace, and no rebuilt record waits for room (``ragtrace._ingest.handoff``);
otherwise it is answered 429 (``UNAVAILABLE`` over gRPC) before anything of it is taken, and
the open traces its spans belong to wait for the retry. What is still lost after a 200 is
counted: records at shutdown (``ragtrace_ingest_records_dropped_total``), the pipeline's own
drops (``ragtrace_dropped_records_total``), evaluation log records
(``ragtrace_dropped_log_records_total``) and Phoenix annotations
(``ragtrace_dropped_annotations_total``).

Listening beyond loopback without a token is refused unless ``allow_unauthenticated`` says it
is meant (``check_receivers``; the metrics endpoint has its own token and flag, ``Config``'s
``metrics_token`` and ``metrics_allow_unauthenticated``)::

    config = service_config(APP, config_file="ragtrace.yaml", metrics_port=9464)
    service = IngestService(IngestOptions(config))
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
from functools import partial
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.base import ScoreSink
from ragtrace._ingest.admission import Admission
from ragtrace._ingest.assembly import AssemblyLimits, CompletedTrace, TraceAssembler
from ragtrace._ingest.decode import DecodedSpans
from ragtrace._ingest.grpc_receiver import OtlpGrpcReceiver
from ragtrace._ingest.handoff import HandOff
from ragtrace._ingest.mappers import RequestsFailed, select
from ragtrace._ingest.receiver import Acceptance, OtlpReceiver, ReceiverOptions
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._metrics.endpoint import MetricsServer, serve_configured_metrics
from ragtrace._metrics.ingest import IngestMetrics
from ragtrace._model import RagRecord
from ragtrace._network import auth_state, check_exposure
from ragtrace._pipeline.queues import MemoryQueue
from ragtrace._runtime.instance import FleetRuntime, Ragtrace
from ragtrace._runtime.tracing import TRACER_NAME
from ragtrace._worker.serving import ServiceOptions, evaluating_share, service_config

_log = logging.getLogger(__name__)
APP = "ragtrace-ingest"
"""The service's name on its own telemetry."""


@dataclass(frozen=True)
class IngestOptions(ServiceOptions):
    """How ``ragtrace ingest`` runs: ``ServiceOptions`` (default ``config``:
    ``service_config(APP)``; with its ``queue_url`` the records are shipped to that Redis stream
    instead of being evaluated here) and these.

    Attributes:
        receiver: Where the OTLP/HTTP receiver listens, its token and size limit.
        grpc: Also serve OTLP/gRPC here (None: HTTP only); needs ``grpcio``.
        limits: When a trace is complete, and the buffer's bounds.
        tick_s: How often complete traces are looked for.
        allow_unauthenticated: Listen beyond loopback without a token (else refused).
    """

    config: Config = field(default_factory=partial(service_config, APP))
    receiver: ReceiverOptions = field(default_factory=ReceiverOptions)
    grpc: ReceiverOptions | None = None
    limits: AssemblyLimits = field(default_factory=AssemblyLimits)
    tick_s: float = 0.25
    allow_unauthenticated: bool = False


def check_receivers(
    http: ReceiverOptions, grpc: ReceiverOptions | None, allow_unauthenticated: bool
) -> None:
    """Refuse to listen beyond loopback without a token, unless that is said to be meant.

    Raises:
        ValueError: A receiver binds an address other machines reach, with no token and
            without ``allow_unauthenticated``; the message says both ways out.
    """
    for what, receiver in (("OTLP/HTTP", http), ("OTLP/gRPC", grpc)):
        if receiver is None:
            continue
        check_exposure(
            f"the ingest {what} receiver",
            receiver.addr,
            receiver.port,
            token=receiver.token,
            allowed=allow_unauthenticated,
            token_hint="--token, or RAGTRACE_INGEST_TOKEN, and give it to your Collector",
            allow_hint="--allow-unauthenticated",
        )


class IngestService:
    """Receiver, assembler, mappers and a ``Ragtrace`` runtime, wired together.

    Args:
        options: How to run.
        registry: Prometheus registry (default: the global one).
        score_sinks: More sinks for the scores (a ``ReviewSink``, a test's collector).

    Raises:
        ValueError: A receiver refused (``check_receivers``), or a bad option.
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
        check_receivers(options.receiver, options.grpc, options.allow_unauthenticated)
        self.registry = registry if registry is not None else REGISTRY
        self.config = config = options.config
        self.metrics = IngestMetrics(self.registry)
        self.runtime: Ragtrace | None = None
        try:
            # The queue's room is what the service admits exports by (see the module docstring).
            local = None if config.queue_url else MemoryQueue(config.queue_size)
            self.runtime = FleetRuntime(  # the service serves /metrics itself, with /healthz
                config.replace(metrics_port=None, model_cpu_share=evaluating_share(config)),
                registry=self.registry,
                score_sinks=score_sinks,
                queue=local,
            )
            self._shipper = self.runtime.pipeline.shipper
            if self._shipper is not None:
                self._shipper.hold_when_full()  # 429s to the senders, never drops
            self._room = local.room if local is not None else self._shipper_room
            self.handoff = HandOff(
                self.runtime.submit_record, self._room, self.metrics.count_record_dropped
            )
            self.assembler = TraceAssembler(options.limits, on_drop=self.metrics.count_dropped)
            policy = self.runtime.redaction
            redact = policy.text if policy.active else None  # error bodies quote what was sent
            self.admission = Admission(config.ingest_max_in_flight, self.metrics.count_refused)
            self.receiver = OtlpReceiver(
                options.receiver,
                self._accept,
                self.metrics.count_request,
                redact=redact,
                admission=self.admission,
            )
            self.grpc_receiver: OtlpGrpcReceiver | None = None
            if options.grpc is not None:
                self.grpc_receiver = OtlpGrpcReceiver(
                    options.grpc,
                    self._accept,
                    self.metrics.count_request,
                    redact=redact,
                    admission=self.admission,
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

    def _shipper_room(self) -> int:
        return self._shipper.room() if self._shipper is not None else 0

    @property
    def endpoint(self) -> str:
        """The receiver's ``http://host:port/v1/traces``."""
        return self.receiver.endpoint

    def describe(self, token_source: str | None = None) -> list[str]:
        """Where the receivers listen (the bound addresses) and whether they ask for a token
        (from ``token_source``, a flag or variable name; never the token)."""
        lines = []
        for what, rx in (("OTLP/HTTP", self.receiver), ("OTLP/gRPC", self.grpc_receiver)):
            if rx is None:
                continue
            auth = auth_state(rx.options.addr, rx.options.token, token_source)
            lines.append(f"{what} listening on {rx.listening} ({rx.endpoint} here); {auth}")
        return lines

    def start(self) -> None:
        """Serve metrics and health, start the pipeline, accept spans."""
        assert self.runtime is not None
        self.server = serve_configured_metrics(self.config, self.registry, self.live, self.health)
        self.runtime.pipeline.start()
        self._ticker.start()
        self.receiver.start()
        if self.grpc_receiver is not None:
            self.grpc_receiver.start()
        for line in self.describe():
            _log.info("ragtrace ingest: %s", line)

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
        started = time.monotonic()
        self.process(self.assembler.drain())
        dropped = self.handoff.drain(self.options.drain_timeout_s)
        if dropped:
            _log.warning(
                "ragtrace ingest: %d records of accepted exports still waited for room in the "
                "evaluation queue and were dropped at shutdown "
                '(ragtrace_ingest_records_dropped_total{reason="shutdown"}); raise '
                "--drain-timeout-s",
                dropped,
            )
        finished = not dropped
        if self.runtime is not None:
            left = max(0.0, self.options.drain_timeout_s - (time.monotonic() - started))
            finished = self.runtime.flush(left) and finished
            self.runtime.shutdown(timeout_s=min(5.0, self.options.drain_timeout_s))
        if self.server is not None:
            self.server.close()
        self.metrics.unregister()
        return finished

    def live(self) -> tuple[bool, dict[str, Any]]:
        """``/livez``: the assembly loop runs (a full queue or Redis down leaves it alive)."""
        age = time.monotonic() - self._last_tick
        problems = []
        if age > max(5.0, 20 * self.options.tick_s) and not self._stopped.is_set():
            problems.append(f"assembly loop last ran {age:.1f}s ago")
        return not problems, {"alive": not problems, "problems": problems}

    def health(self) -> tuple[bool, dict[str, Any]]:
        """``/readyz`` and ``/healthz``: receiving, the assembly loop running, and the Redis
        queue (if any) reachable. A full queue is not a problem here: exports get 429."""
        problems: list[str] = list(self.live()[1]["problems"])
        if self.receiver.closing:
            problems.append("receiver closed")
        shipper = self._shipper
        if shipper is not None and not shipper.connected and shipper.depth():
            problems.append("the Redis queue is unreachable (records wait in the buffer)")
        details = {
            "healthy": not problems,
            "problems": problems,
            "open_traces": self.assembler.open_traces,
            "buffer_bytes": self.assembler.buffered_bytes,
            "records_waiting": self.handoff.waiting,
            "queue_room": self._room(),
            "exports_in_flight": self.admission.in_flight,
        }
        return not problems, details

    def process(self, traces: Sequence[CompletedTrace]) -> int:
        """Map completed traces to records and hand them to the pipeline as its queue has
        room (the others wait, in order); the records handed now."""
        records: list[RagRecord] = []
        now = time.monotonic()
        for trace in traces:
            self.metrics.count_trace(trace.reason, now - trace.last_span_at)
            records.extend(self._map(trace))
        handed = self.handoff.offer(records)
        self.metrics.observe_buffer(
            self.assembler.open_traces, self.assembler.buffered_bytes, self.handoff.waiting
        )
        return handed

    def _map(self, trace: CompletedTrace) -> list[RagRecord]:
        assert self.runtime is not None
        view = TraceView(trace.spans)
        mapper = select(view)
        if mapper is None:
            self.metrics.count_unmapped("no_convention")
            return []
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
            return []
        if not mapped:
            self.metrics.count_unmapped("no_request")
        for item in mapped:
            self.metrics.count_record(item.convention, item.missing, item.root_lost)
        return [item.record for item in mapped]

    def _accept(self, decoded: DecodedSpans) -> Acceptance:
        """Keep an export's spans if the buffer and the evaluation queue have room for every
        trace it opens; else refuse it whole (429) and let its open traces wait for the retry."""
        spans = [s for s in decoded.spans if not _own_evaluation(s)]
        own = len(decoded.spans) - len(spans)
        waiting = self.handoff.blocked
        room = self.handoff.room_for_traces()
        added = self.assembler.add(spans, max_open=room) if not waiting else None
        if added is None or not added.accepted:
            self.assembler.touch({s.trace_id for s in spans})
            open_traces = self.assembler.open_traces
            short = room < self.options.limits.max_open_traces and open_traces >= room
            self.metrics.count_refused("queue_full" if waiting or short else "buffer_full")
            if waiting:
                why = f"the evaluation queue is full ({waiting} records wait for room)"
            else:
                why = (
                    f"no room: {self.assembler.open_traces} traces open, room for "
                    f"{min(room, self.options.limits.max_open_traces)}; "
                    f"{self.assembler.buffered_bytes} of "
                    f"{self.options.limits.max_buffer_bytes} bytes buffered"
                )
            return Acceptance(False, message=f"{why}; retry later")
        self.metrics.count_dropped("evaluation_span", own)
        rejected = added.dropped
        message = f"{rejected} spans not kept (late or over limits)" if rejected else ""
        return Acceptance(True, rejected_spans=rejected, message=message)

    def _tick(self) -> None:
        while not self._stopped.wait(self.options.tick_s):
            self._last_tick = time.monotonic()
            try:
                self.handoff.hand_on()
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
