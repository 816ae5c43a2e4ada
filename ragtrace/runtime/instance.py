"""The ``Ragtrace`` object that ``ragtrace.init`` returns.

It wires the parts together: configuration, a tracer, the capture layer the integrations
feed, the Prometheus families, the evaluation pipeline (sampler, evaluators, workers) and its
sinks (OpenTelemetry evaluation spans, Prometheus metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace import evaluators as registry_of_evaluators
from ragtrace.capture import Capture
from ragtrace.config import Config
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
from ragtrace.runtime.tracing import TRACER_NAME, default_provider

if TYPE_CHECKING:
    from ragtrace.settings import EvaluationSettings


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
        self.tracer_provider = tracer_provider or default_provider(config)
        self.metrics = Metrics(registry if registry is not None else REGISTRY, config.app)
        self.diagnostics = Diagnostics(on_error=self.metrics.count_internal_error)
        tracer = self.tracer_provider.get_tracer(TRACER_NAME)
        if evaluators is None:
            evaluators = settings.evaluators if settings else config.evaluators
        if sampler is None and settings is not None:
            sampler = settings.sampler
        if pipeline_options is None and settings is not None:
            pipeline_options = settings.pipeline_options()
        if export_evaluation_spans is None:
            export_evaluation_spans = settings.otel if settings is not None else True
        sinks: list[ScoreSink] = [PrometheusSink(self.metrics)]
        if export_evaluation_spans:
            sinks.append(OtelEvaluationSink(tracer))
        sinks.extend(score_sinks)
        queue_url = config.queue_url or (settings.queue_url if settings is not None else None)
        if queue is None and queue_url:
            from ragtrace.runtime.queues import shipping_queue  # only apps that ship load it

            queue = shipping_queue(queue_url, self.metrics, self.diagnostics)
        self.pipeline = EvaluationPipeline(
            self.diagnostics,
            self.metrics,
            evaluators=[_as_evaluator(e) for e in evaluators],
            sampler=sampler,
            sinks=sinks,
            options=pipeline_options,
            queue=queue,
        )
        self._has_inline = any(e.inline for e in self.pipeline.evaluators)
        self.capture = Capture(
            tracer,
            config,
            self._capture_done,
            self.diagnostics,
            inline=self._run_inline if self._has_inline else None,
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
        self._on_shutdown: list[Callable[[Ragtrace], None]] = []

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

    def _capture_done(self, record: RagRecord) -> None:
        self._emit(record)

    def _emit(self, record: RagRecord) -> bool:
        try:
            self.metrics.observe_record(record)
        except Exception as exc:
            self.diagnostics.error("metrics.observe_record", exc)
        if not self.pipeline.submit(record):
            self.metrics.count_drop("shutdown")
            return False
        return True

    def submit_record(self, record: RagRecord) -> bool:
        """Hand on a record built outside this process's capture (rebuilt from ingested spans,
        say) exactly as a captured one: request metrics, inline evaluators (published with the
        background ones, since the request's span has long ended), sampling, the queue.

        Never raises; False if the record was dropped.
        """
        if self._has_inline:
            self.pipeline.run_inline(record)
        return self._emit(record)

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
        for callback in self._on_shutdown:
            callback(self)

    def on_shutdown(self, callback: Callable[[Ragtrace], None]) -> None:
        """Call ``callback(self)`` once this instance has shut down."""
        self._on_shutdown.append(callback)

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down


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
