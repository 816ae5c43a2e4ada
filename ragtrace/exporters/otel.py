"""Evaluation results as OpenTelemetry spans, in the trace of the request they judge.

The RAG span has ended before a background evaluator finishes, so results go on child spans
``ragtrace.evaluation`` of the RAG span (OpenInference kind EVALUATOR). Every Score becomes a
``gen_ai.evaluation.result`` event (``gen_ai.evaluation.name``, ``.score.value``,
``.score.label``, ``.explanation``, plus ``ragtrace.evaluation.passed`` and ``.threshold``), as
the OpenTelemetry GenAI conventions report evaluations. How many spans carry them is the
``layout`` (``Config.evaluation_spans``):

- ``evaluator`` (default): one span per evaluator run, timed like the run, with one event per
  score. The span carries the score's attributes (``gen_ai.evaluation.*``,
  ``ragtrace.evaluation.{kind,model,threshold,passed,details}``) when the evaluator made one
  score, so Phoenix's span table shows the value in the row; with several, each event has them.
- ``score``: one span per score, each with its attributes and one event (the first layout;
  about 15 spans per request of the online suite).
- ``record``: one span per record, spanning all its evaluator runs, with every event.

A failed evaluation gets span status ERROR and ``error.type``.

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


LAYOUTS = ("evaluator", "score", "record")


class OtelEvaluationSink:
    """Writes the record's evaluation results as child spans of its RAG span.

    Args:
        tracer: Where the spans go.
        layout: ``evaluator`` (a span per evaluator run), ``score`` (a span per score) or
            ``record`` (one span per record); every score is also an event.
    """

    def __init__(self, tracer: trace.Tracer, layout: str = "evaluator") -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"evaluation span layout {layout!r}: use one of {LAYOUTS}")
        self._tracer = tracer
        self.layout = layout

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        parent = _parent_context(record)
        if parent is None or not evaluations:
            return
        if self.layout == "score":
            for evaluation in evaluations:
                for score in evaluation.scores:
                    self._span(
                        parent,
                        [(evaluation, [score])],
                        score_attributes(score, evaluation.evaluator),
                    )
        elif self.layout == "evaluator":
            for evaluation in evaluations:
                self._span(
                    parent, [(evaluation, list(evaluation.scores))], _run_attributes(evaluation)
                )
        else:
            runs = [(evaluation, list(evaluation.scores)) for evaluation in evaluations]
            self._span(parent, runs, {sc.OI_SPAN_KIND: sc.OI_KIND_EVALUATOR})

    def _span(
        self,
        parent: Any,
        runs: Sequence[tuple[Evaluation, Sequence[Score]]],
        attrs: dict[str, Any],
    ) -> None:
        span = self._tracer.start_span(
            sc.SPAN_NAME_EVALUATION,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            start_time=min(e.start_ns for e, _ in runs),
        )
        errors = []
        for evaluation, scores in runs:
            for score in scores:
                span.add_event(
                    sc.GEN_AI_EVALUATION_RESULT_EVENT,
                    attributes=_event_attributes(score, evaluation.evaluator),
                    timestamp=evaluation.end_ns,
                )
                if score.error is not None:
                    errors.append(f"{score.name}: {score.error}")
        if errors:
            span.set_status(
                Status(StatusCode.ERROR, _cut("; ".join(errors), MAX_EXPLANATION_CHARS))
            )
            span.set_attribute(sc.RAGTRACE_ERROR_TYPE, "evaluation_error")
        span.end(end_time=max(e.end_ns for e, _ in runs))

    def shutdown(self) -> None:
        """Spans belong to the tracer provider, which the application flushes."""


def score_attributes(score: Score, evaluator: str) -> dict[str, Any]:
    """The span attributes of one Score (None values left out, as OpenTelemetry requires)."""
    attrs: dict[str, Any] = {
        sc.OI_SPAN_KIND: sc.OI_KIND_EVALUATOR,
        sc.RAGTRACE_EVALUATION_KIND: score.evaluator_kind,
        sc.RAGTRACE_EVALUATION_DIRECTION: score.direction,
        **_event_attributes(score, evaluator),
    }
    if score.model is not None:
        attrs[sc.RAGTRACE_EVALUATION_MODEL] = score.model
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


def _run_attributes(evaluation: Evaluation) -> dict[str, Any]:
    """The span of one evaluator run: the score's attributes when it made one, else who ran."""
    if len(evaluation.scores) == 1:
        return score_attributes(evaluation.scores[0], evaluation.evaluator)
    attrs: dict[str, Any] = {
        sc.OI_SPAN_KIND: sc.OI_KIND_EVALUATOR,
        sc.RAGTRACE_EVALUATOR: evaluation.evaluator,
    }
    if evaluation.scores:
        first = evaluation.scores[0]
        attrs[sc.RAGTRACE_EVALUATION_KIND] = first.evaluator_kind
        if first.model is not None:
            attrs[sc.RAGTRACE_EVALUATION_MODEL] = first.model
    return attrs


def _event_attributes(score: Score, evaluator: str) -> dict[str, Any]:
    """What each ``gen_ai.evaluation.result`` event carries: the score's result, bounded."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_NAME: score.name,
        sc.RAGTRACE_EVALUATOR: evaluator,
    }
    optional: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_SCORE_VALUE: score.value,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: score.label,
        sc.GEN_AI_EVALUATION_EXPLANATION: _cut(score.explanation, MAX_EXPLANATION_CHARS),
        sc.RAGTRACE_EVALUATION_THRESHOLD: score.threshold,
        sc.RAGTRACE_EVALUATION_PASSED: score.passed,
        sc.RAGTRACE_EVALUATION_ERROR: _cut(score.error, MAX_EXPLANATION_CHARS),
    }
    attrs.update((k, v) for k, v in optional.items() if v is not None)
    return attrs


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
