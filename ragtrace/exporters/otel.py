"""Evaluation results as OpenTelemetry spans, in the trace of the request they judge.

The RAG span has ended before a background evaluator finishes, so each Score becomes a child
span ``ragtrace.evaluation`` of the RAG span (OpenInference kind EVALUATOR) carrying the GenAI
evaluation attributes (``gen_ai.evaluation.name``, ``.score.value``, ``.score.label``,
``.explanation``), ragtrace's own (``ragtrace.evaluation.kind``, ``.model``, ``.threshold``,
``.passed``, ``.details`` as JSON), and a ``gen_ai.evaluation.result`` event with the same
values. A failed evaluation gets span status ERROR and ``error.type``.

``inline_attributes(evaluations)`` gives what inline evaluators write onto the RAG span itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ragtrace.capture import semconv as sc
from ragtrace.capture.content import dump_json
from ragtrace.exporters.base import Evaluation
from ragtrace.model import RagRecord, Score

MAX_DETAILS_CHARS = 8000
MAX_EXPLANATION_CHARS = 2000


class OtelEvaluationSink:
    """Writes one child span per Score under the record's RAG span."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        parent = _parent_context(record)
        if parent is None:
            return
        for evaluation in evaluations:
            for score in evaluation.scores:
                attrs = score_attributes(score, evaluation.evaluator)
                span = self._tracer.start_span(
                    sc.SPAN_NAME_EVALUATION,
                    context=parent,
                    kind=SpanKind.INTERNAL,
                    attributes=attrs,
                    start_time=evaluation.start_ns,
                )
                span.add_event(
                    sc.GEN_AI_EVALUATION_RESULT_EVENT,
                    attributes=_event_attributes(attrs),
                    timestamp=evaluation.end_ns,
                )
                if score.error is not None:
                    span.set_status(Status(StatusCode.ERROR, score.error))
                span.end(end_time=evaluation.end_ns)

    def shutdown(self) -> None:
        """Spans belong to the tracer provider, which the application flushes."""


def score_attributes(score: Score, evaluator: str) -> dict[str, Any]:
    """The span attributes of one Score (None values left out, as OpenTelemetry requires)."""
    attrs: dict[str, Any] = {
        sc.OI_SPAN_KIND: sc.OI_KIND_EVALUATOR,
        sc.GEN_AI_EVALUATION_NAME: score.name,
        sc.RAGTRACE_EVALUATOR: evaluator,
        sc.RAGTRACE_EVALUATION_KIND: score.evaluator_kind,
        sc.RAGTRACE_EVALUATION_DIRECTION: score.direction,
    }
    optional: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_SCORE_VALUE: score.value,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: score.label,
        sc.GEN_AI_EVALUATION_EXPLANATION: _cut(score.explanation, MAX_EXPLANATION_CHARS),
        sc.RAGTRACE_EVALUATION_MODEL: score.model,
        sc.RAGTRACE_EVALUATION_THRESHOLD: score.threshold,
        sc.RAGTRACE_EVALUATION_PASSED: score.passed,
        sc.RAGTRACE_EVALUATION_ERROR: _cut(score.error, MAX_EXPLANATION_CHARS),
    }
    attrs.update((k, v) for k, v in optional.items() if v is not None)
    if score.error is not None:
        attrs[sc.RAGTRACE_ERROR_TYPE] = "evaluation_error"
    if score.details:
        attrs[sc.RAGTRACE_EVALUATION_DETAILS] = dump_json(score.details, MAX_DETAILS_CHARS)[0]
    return attrs


def inline_attributes(evaluations: Sequence[Evaluation]) -> dict[str, Any]:
    """``ragtrace.evaluation.<name>.score`` / ``.passed`` for scores made before the span ends."""
    attrs: dict[str, Any] = {}
    for evaluation in evaluations:
        for score in evaluation.scores:
            if score.value is not None:
                attrs[sc.inline_score_attr(score.name)] = score.value
            if score.passed is not None:
                attrs[sc.inline_passed_attr(score.name)] = score.passed
    return attrs


def _event_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    keep = (
        sc.GEN_AI_EVALUATION_NAME,
        sc.GEN_AI_EVALUATION_SCORE_VALUE,
        sc.GEN_AI_EVALUATION_SCORE_LABEL,
        sc.GEN_AI_EVALUATION_EXPLANATION,
    )
    return {k: attrs[k] for k in keep if k in attrs}


def _parent_context(record: RagRecord) -> Any:
    try:
        trace_id, span_id = int(record.trace_id, 16), int(record.span_id, 16)
    except (TypeError, ValueError):
        return None
    if not trace_id or not span_id:
        return None
    parent = SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
