"""Where evaluation results leave the process, beside Prometheus: OpenTelemetry log events,
evaluation spans, Phoenix span annotations.

``ResultChannels`` picks them from the configuration and builds their sinks:

- ``Config.evaluation_results`` (``logs`` by default, ``spans``, ``both``, ``none``; the
  settings file's ``sinks.otel`` takes the same words, or ``false`` for ``none`` and ``true``
  for ``logs``): ``logs`` emits a ``gen_ai.evaluation.result`` log event per score
  (``exporters.otel_logs``) through the logger provider ``runtime.logs`` resolves; ``spans``
  writes evaluation spans in traces of their own, linked to the request's span
  (``exporters.otel``);
- ``Config.phoenix_endpoint`` (``sinks.phoenix`` in the settings file): Phoenix span
  annotations (``exporters.phoenix``).

``flush`` and ``close`` keep a deadline whatever the endpoints do; the Phoenix sink is closed
with the pipeline's other sinks, within the pipeline's share of the shutdown budget.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.base import ConfirmsDelivery, ScoreSink
from ragtrace._exporters.otel import OtelEvaluationSink
from ragtrace._exporters.otel_logs import OtelEvaluationLogSink
from ragtrace._exporters.phoenix import PhoenixAnnotationSink, PhoenixOptions
from ragtrace._metrics.collection import Metrics
from ragtrace._pipeline.lifecycle import Deadline, run_bounded
from ragtrace._runtime.bounded_export import flush_provider
from ragtrace._runtime.logs import LOGGER_NAME, BoundedLogProcessor, resolve_logger_provider
from ragtrace._runtime.tracing import TRACER_NAME

logger = logging.getLogger("ragtrace")

PHOENIX_SHUTDOWN_SHARE = 0.3
"""Share of the shutdown budget the Phoenix sink may use to post what it still holds."""


def results_mode(config: Config, export_evaluation_spans: bool | None) -> str:
    """``logs``, ``spans``, ``both`` or ``none``: code's ``export_evaluation_spans`` (False:
    none; True: spans too) beats ``Config.evaluation_results``."""
    mode = config.evaluation_results
    if export_evaluation_spans is False:
        return "none"
    if export_evaluation_spans is True:
        return "both" if mode in ("logs", "both") else "spans"
    return mode


class ResultChannels:
    """The OpenTelemetry and Phoenix sinks of one ``Ragtrace``, and the logger provider.

    Args:
        config: The options (results mode, endpoints, app, shutdown budget).
        tracer_provider: Where evaluation spans go.
        logger_provider: The provider given to ``init`` (None: resolve one).
        metrics: Where undelivered log records and annotations are counted.
        export_evaluation_spans: ``init``'s switch (see ``results_mode``).
        span_processor: ragtrace's own span processor on ``tracer_provider`` (None: the
            application's provider, whose ``force_flush`` answer is taken as delivery).

    Each OpenTelemetry sink confirms delivery (``ConfirmsDelivery``) through ragtrace's own
    processor when there is one (exported with success, nothing failed since the mark), else
    through the provider's ``force_flush`` answer.
    """

    def __init__(
        self,
        config: Config,
        tracer_provider: trace.TracerProvider,
        logger_provider: object | None,
        metrics: Metrics,
        export_evaluation_spans: bool | None,
        span_processor: ConfirmsDelivery | None = None,
    ) -> None:
        self.mode = results_mode(config, export_evaluation_spans)
        self.sinks: list[ScoreSink] = []
        self.logger_provider: object | None = None
        self._log_processor: BoundedLogProcessor | None = None
        self._own_logs = False
        if self.mode in ("logs", "both"):
            self.logger_provider, self._log_processor, self._own_logs = resolve_logger_provider(
                config, logger_provider, metrics.count_dropped_log_records
            )
            get_logger = self.logger_provider.get_logger  # type: ignore[attr-defined]
            logs_delivery: ConfirmsDelivery = self._log_processor or ProviderFlush(
                self.logger_provider, "flush-logs"
            )
            self.sinks.append(OtelEvaluationLogSink(get_logger(LOGGER_NAME), logs_delivery))
        if self.mode in ("spans", "both"):
            self.sinks.append(
                OtelEvaluationSink(
                    tracer_provider.get_tracer(TRACER_NAME),
                    config.evaluation_spans,
                    capture_content=config.capture_content,
                    delivery=span_processor or ProviderFlush(tracer_provider, "flush-spans"),
                )
            )
        endpoint = config.phoenix_endpoint
        self.phoenix: PhoenixAnnotationSink | None = None
        if endpoint:
            self.phoenix = PhoenixAnnotationSink(
                endpoint,
                metrics.exports,
                api_key=config.phoenix_api_key,
                options=PhoenixOptions(
                    shutdown_timeout_s=config.shutdown_timeout_s * PHOENIX_SHUTDOWN_SHARE
                ),
            )
            self.sinks.append(self.phoenix)
            _check_project(tracer_provider, config)

    def flush(self, timeout_s: float) -> bool:
        """Post the Phoenix annotations and flush the log records, within ``timeout_s``."""
        deadline = Deadline(timeout_s)
        ok = True
        if self.phoenix is not None:
            ok = self.phoenix.flush(deadline.share(0.5))
        return self._flush_logs(deadline.remaining()) and ok

    def close(self, deadline: Deadline) -> bool:
        """Shut ragtrace's own logger provider down (what it could not send is counted), or
        flush the application's, by ``deadline``."""
        if not self._own_logs:
            return self._flush_logs(deadline.remaining())
        sent = True
        if self._log_processor is not None:
            sent = self._log_processor.close(deadline.remaining())
        shutdown = getattr(self.logger_provider, "shutdown", None)
        if callable(shutdown):
            run_bounded(shutdown, deadline.remaining(), name="logs-shutdown")
        return sent

    def _flush_logs(self, timeout_s: float) -> bool:
        return flush_provider(self.logger_provider, timeout_s, name="flush-logs")


class ProviderFlush:
    """Delivery as a provider ragtrace does not own can tell it: its ``force_flush`` answer
    (the SDK's batch processors say whether the flush finished, not whether the export
    succeeded)."""

    def __init__(self, provider: object, name: str) -> None:
        self._provider = provider
        self._name = name

    def delivery_mark(self) -> int:
        return 0

    def deliver(self, mark: int, timeout_s: float) -> bool:
        return flush_provider(self._provider, timeout_s, name=self._name)


def _check_project(tracer_provider: trace.TracerProvider, config: Config) -> None:
    """Say once, at init, when the application's provider names no Phoenix project: Phoenix
    then files its traces under ``default``; ragtrace cannot change another's resource."""
    resource = getattr(tracer_provider, "resource", None)
    if isinstance(resource, Resource) and sc.OI_PROJECT_NAME not in resource.attributes:
        logger.info(
            "ragtrace: your tracer provider's resource has no %s, so Phoenix files these "
            "traces under its 'default' project; add Resource.create({'%s': %r}) to it "
            "(or OTEL_RESOURCE_ATTRIBUTES=%s=%s) to file them under %r",
            sc.OI_PROJECT_NAME,
            sc.OI_PROJECT_NAME,
            config.app,
            sc.OI_PROJECT_NAME,
            config.app,
            config.app,
        )
