"""The ``Ragtrace`` object that ``ragtrace.init`` returns, and the process-wide current one.

``init`` wires the parts together: configuration, a tracer, the capture layer the integrations
feed, the Prometheus families, the evaluation pipeline (sampler, evaluators, workers) and its
sinks (OpenTelemetry evaluation spans, Prometheus metrics). Integrations created without an
explicit instance use ``current()``, which initialises one from the environment on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace import evaluators as registry_of_evaluators
from ragtrace.capture import Capture
from ragtrace.config import Config, Redactor
from ragtrace.diagnostics import Diagnostics
from ragtrace.evaluators.base import Evaluator
from ragtrace.exporters.base import ScoreSink
from ragtrace.exporters.metrics import Metrics
from ragtrace.exporters.otel import OtelEvaluationSink, inline_attributes
from ragtrace.exporters.prometheus import MetricsServer, PrometheusSink, start_metrics_server
from ragtrace.judges import usage as judge_usage
from ragtrace.model import RagRecord
from ragtrace.pipeline import EvaluationPipeline, PipelineOptions, RecordSink
from ragtrace.pipeline.queues import WorkQueue
from ragtrace.pipeline.sampling import Sampler

if TYPE_CHECKING:
    from ragtrace.settings import EvaluationSettings

TRACER_NAME = "ragtrace"

_lock = threading.Lock()
_current: Ragtrace | None = None


class Ragtrace:
    """A running ragtrace: capture, metrics and pipeline for one application.

    Create it with ``ragtrace.init``. Attributes ``config``, ``capture``, ``metrics``,
    ``diagnostics`` and ``pipeline`` are public for integrations and tests.
    """

    def __init__(
        self,
        config: Config,
        tracer_provider: trace.TracerProvider | None = None,
        registry: CollectorRegistry | None = None,
        *,
        evaluators: Sequence[Evaluator | str] | None = None,
        sampler: Sampler | None = None,
        pipeline_options: PipelineOptions | None = None,
        score_sinks: Sequence[ScoreSink] = (),
        export_evaluation_spans: bool | None = None,
        queue: WorkQueue | None = None,
    ) -> None:
        settings = _load_settings(config.config_file)
        self.config = config
        self._own_provider = tracer_provider is None and not isinstance(
            trace.get_tracer_provider(), TracerProvider
        )
        self.tracer_provider = tracer_provider or _default_provider(config)
        self.metrics = Metrics(registry if registry is not None else REGISTRY, config.app)
        self.diagnostics = Diagnostics(on_error=self.metrics.count_internal_error)
        tracer = self.tracer_provider.get_tracer(TRACER_NAME)
        if evaluators is None:
            evaluators = settings.evaluators if settings else config.evaluators
        if sampler is None and settings is not None:
            sampler = settings.sampler
        if pipeline_options is None and settings is not None:
            pipeline_options = PipelineOptions(
                queue_size=settings.queue_size,
                workers=settings.workers,
                batch_wait_s=settings.batch_wait_s,
                processes=settings.processes,
                shared_cache_mb=settings.shared_cache_mb,
            )
        if export_evaluation_spans is None:
            export_evaluation_spans = settings.otel if settings is not None else True
        sinks: list[ScoreSink] = [PrometheusSink(self.metrics)]
        if export_evaluation_spans:
            sinks.append(OtelEvaluationSink(tracer))
        sinks.extend(score_sinks)
        self.pipeline = EvaluationPipeline(
            self.diagnostics,
            self.metrics,
            evaluators=[_as_evaluator(e) for e in evaluators],
            sampler=sampler,
            sinks=sinks,
            options=pipeline_options,
            queue=queue,
        )
        has_inline = any(e.inline for e in self.pipeline.evaluators)
        self.capture = Capture(
            tracer,
            config,
            self._emit,
            self.diagnostics,
            inline=self._run_inline if has_inline else None,
        )
        self.metrics_server: MetricsServer | None = None
        port = config.metrics_port
        if port is None and settings is not None:
            port = settings.metrics_port
        if port is not None:
            addr = settings.metrics_addr if settings is not None else config.metrics_addr
            self.start_metrics_server(port, addr)
        self._judge_listener = judge_usage.add_listener(self._on_judge_call)
        self._shut_down = False

    def _on_judge_call(self, call: judge_usage.JudgeCall) -> None:
        """Judge calls made in this process: metrics, and real spend against the budget."""
        self.metrics.record_judge_call(call)
        self.pipeline.sampler.charge(call.cost_usd)

    def _run_inline(self, record: RagRecord) -> dict[str, Any]:
        return inline_attributes(self.pipeline.run_inline(record))

    def start_metrics_server(self, port: int = 9464, addr: str = "127.0.0.1") -> MetricsServer:
        """Serve this instance's metrics at ``http://addr:port/metrics`` (closed at shutdown)."""
        if self.metrics_server is not None and not self.metrics_server.closed:
            self.metrics_server.close()
        self.metrics_server = start_metrics_server(port, addr, self.metrics.registry)
        return self.metrics_server

    def _emit(self, record: RagRecord) -> None:
        try:
            self.metrics.observe_record(record)
        except Exception as exc:
            self.diagnostics.error("metrics.observe_record", exc)
        if not self.pipeline.submit(record):
            self.metrics.count_drop("shutdown")

    def add_record_sink(self, sink: RecordSink) -> RecordSink:
        """Call ``sink(record)`` for every finished request (usable as a decorator).

        The sink runs on the thread that finished the request: keep it quick.
        """
        self.pipeline.add_record_sink(sink)
        return sink

    def remove_record_sink(self, sink: RecordSink) -> None:
        self.pipeline.remove_record_sink(sink)

    def attach_feedback(self, trace_id: str, feedback: object) -> bool:
        """Attach user feedback (a thumbs-down, a rating, a comment) to a recent request.

        The record is looked at again by the sampler with ``attributes["feedback"]`` set, so a
        ``feedback`` rule can send it to evaluators that skipped it; see
        ``EvaluationPipeline.attach_feedback``. Never raises.
        """
        return self.pipeline.attach_feedback(trace_id, feedback)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Hand on everything buffered (records, spans). True if all went within the timeout."""
        ok = self.pipeline.flush(timeout_s)
        force_flush = getattr(self.tracer_provider, "force_flush", None)
        if callable(force_flush):
            ok = bool(force_flush(int(timeout_s * 1000))) and ok
        return ok

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Close open requests, flush, stop. Idempotent; a shut-down instance drops records."""
        global _current
        if self._shut_down:
            return
        self.capture.close_all()
        self.flush(timeout_s)
        self.pipeline.shutdown(timeout_s)
        self._shut_down = True
        judge_usage.remove_listener(self._judge_listener)
        if self.metrics_server is not None:
            self.metrics_server.close()
        if self._own_provider and isinstance(self.tracer_provider, TracerProvider):
            self.tracer_provider.shutdown()
        self.metrics.unregister()
        with _lock:
            if _current is self:
                _current = None

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down


def _default_provider(config: Config) -> trace.TracerProvider:
    """The global SDK provider if the app set one, else a private one (OTLP if configured)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        return provider
    own = TracerProvider(resource=Resource.create({"service.name": config.app}))
    if config.otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ImportError(
                "otlp_endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
            ) from exc
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        endpoint = config.otlp_endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        own.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return own


def init(
    app: str | None = None,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    registry: CollectorRegistry | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    evaluators: Sequence[Evaluator | str] | None = None,
    sampler: Sampler | None = None,
    pipeline_options: PipelineOptions | None = None,
    score_sinks: Sequence[ScoreSink] = (),
    export_evaluation_spans: bool | None = None,
    **options: Any,
) -> Ragtrace:
    """Start ragtrace for an application and make it the current instance.

    Args:
        app: Application name on every span, record and metric (``RAGTRACE_APP``).
        tracer_provider: Where spans go; default: the global SDK provider if one is set, else
            a private provider (exporting OTLP/HTTP when ``otlp_endpoint`` is configured).
        registry: Prometheus registry for ragtrace's metrics (default: the global one).
        capture_content: Put query, chunk text, prompts and answers on spans (default True).
        redact: Applied to every captured text before it leaves the request path.
        evaluators: Evaluators (objects or registered names) run on sampled requests; default:
            the settings file's, else ``Config.evaluators`` (``RAGTRACE_EVALUATORS``).
        sampler: Which requests each evaluator sees (default: every one, no limits).
        pipeline_options: Queue size, workers, batching.
        score_sinks: More places for evaluation results, beside Prometheus and OpenTelemetry.
        export_evaluation_spans: Write results as ``ragtrace.evaluation`` spans (default True).
        **options: Any other ``Config`` field (``max_chunk_chars``, ``config_file``,
            ``metrics_port``, ...).

    Explicit arguments beat ``RAGTRACE_*`` environment variables, which beat defaults; for
    evaluators, sampling and pipeline sizes, code beats the settings file, which beats the
    environment. Calling ``init`` again shuts the previous instance down first.

    Raises:
        TypeError, ValueError: A bad option, naming it.
    """
    global _current
    config = Config.resolve(app=app, capture_content=capture_content, redact=redact, **options)
    with _lock:
        previous = _current
    if previous is not None:
        previous.shutdown()
    instance = Ragtrace(
        config,
        tracer_provider=tracer_provider,
        registry=registry,
        evaluators=evaluators,
        sampler=sampler,
        pipeline_options=pipeline_options,
        score_sinks=score_sinks,
        export_evaluation_spans=export_evaluation_spans,
    )
    with _lock:
        _current = instance
    return instance


def current() -> Ragtrace:
    """The current instance, initialised from the environment if ``init`` was not called."""
    global _current
    instance = _current
    if instance is not None:
        return instance
    with _lock:
        if _current is None:
            _current = Ragtrace(Config.resolve())
        return _current


def get_current() -> Ragtrace | None:
    """The current instance, or None when ``init`` has not been called."""
    return _current


def _as_evaluator(item: Evaluator | str) -> Evaluator:
    if isinstance(item, Evaluator):
        return item
    if isinstance(item, str):
        return registry_of_evaluators.create(item)
    raise TypeError(f"evaluators: expected an Evaluator or a name, got {type(item).__name__}")


def _load_settings(path: str | None) -> EvaluationSettings | None:
    if not path:
        return None
    from ragtrace.settings import load_settings

    return load_settings(path)


def start_metrics_server_for_current(port: int = 9464, addr: str = "127.0.0.1") -> MetricsServer:
    """Serve the current instance's metrics at ``http://addr:port/metrics``."""
    return current().start_metrics_server(port, addr)
