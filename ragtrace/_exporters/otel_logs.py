"""Evaluation results as OpenTelemetry log events, on the trace and span of the request judged.

The OpenTelemetry GenAI conventions model an evaluation result as the event
``gen_ai.evaluation.result``, parented to the span it evaluates: a log record whose trace and
span id are that span's. ``OtelEvaluationLogSink`` emits one such record per score through the
OpenTelemetry Logs API, so results reach any OTLP backend that takes logs (Loki, Elastic,
Datadog, a Collector) tied to the request's trace, and the request's trace ends when the
request does::

    sink = OtelEvaluationLogSink(logger_provider.get_logger("ragtrace"))
    sink.export(record, evaluations)     # one log record per score

Each record has ``event_name`` ``gen_ai.evaluation.result``, the time its evaluator returned,
severity INFO (passed, or no verdict), WARN (below its threshold) or ERROR (the evaluator
failed), and the attributes ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value``,
``gen_ai.evaluation.score.label`` (the evaluator's own label, else ``pass`` / ``fail`` /
``error``), ``gen_ai.evaluation.explanation``, plus ragtrace's own ``ragtrace.evaluation.{evaluator,
kind,direction,model,threshold,passed,error,details}`` and ``ragtrace.app``. Records without a
valid trace and span id (none was captured) are still emitted, without them.

The runtime builds one when ``Config.evaluation_results`` is ``logs`` (the default) or
``both`` (``from_config``), on the logger provider it resolved.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import Logger, LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.base import ConfirmsDelivery, DelegatedDelivery, SinkContext, outcome_of
from ragtrace._exporters.otel import request_attributes, request_span_context, score_attributes
from ragtrace._model import Evaluation, RagRecord

EVENT_NAME = sc.GEN_AI_EVALUATION_RESULT_EVENT
_SEVERITY = {
    "pass": (SeverityNumber.INFO, "INFO"),
    "fail": (SeverityNumber.WARN, "WARN"),
    "error": (SeverityNumber.ERROR, "ERROR"),
}


class OtelEvaluationLogSink(DelegatedDelivery):
    """Emits one ``gen_ai.evaluation.result`` log event per score.

    Args:
        logger: An OpenTelemetry logger (``LoggerProvider.get_logger("ragtrace")``).
        delivery: What says whether the emitted records were exported (ragtrace's own log
            processor; ``ConfirmsDelivery``); None: nothing to confirm.
    """

    def __init__(self, logger: Logger, delivery: ConfirmsDelivery | None = None) -> None:
        self._logger = logger
        self._delivery = delivery

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        request = request_span_context(record)
        context = (
            trace.set_span_in_context(NonRecordingSpan(request), Context())
            if request is not None
            else Context()
        )
        observed = time.time_ns()
        shared = request_attributes(record)
        for evaluation in evaluations:
            for score in evaluation.scores:
                severity, severity_text = _SEVERITY[outcome_of(score)]
                attributes: dict[str, Any] = {
                    **score_attributes(score, evaluation.evaluator),
                    **shared,
                }
                self._logger.emit(
                    LogRecord(
                        timestamp=evaluation.end_ns,
                        observed_timestamp=observed,
                        context=context,
                        severity_number=severity,
                        severity_text=severity_text,
                        attributes=attributes,
                        event_name=EVENT_NAME,
                    )
                )

    def shutdown(self) -> None:
        """Log records belong to the logger provider, which its owner flushes."""


def from_config(config: Config, context: SinkContext) -> OtelEvaluationLogSink | None:
    """Log events through the runtime's evaluation logger, when results go to logs."""
    if context.results_mode not in ("logs", "both") or context.logger is None:
        return None
    return OtelEvaluationLogSink(context.logger, context.log_delivery)
