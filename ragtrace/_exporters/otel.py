"""Evaluation results as OpenTelemetry spans, each in a trace of its own linked to the request.

The RAG span has ended before a background evaluator finishes. Results go out as log events by
default (``ragtrace._exporters.otel_logs``); evaluation spans are the option for backends that
read spans only (``Config.evaluation_results = "spans"`` or ``"both"``). They never become
children of the request's span: a trace UI measures a trace from its first span's start to its
last span's end, and an evaluation span ending seconds later would make a 5 ms request look
like a 2 s one. Each evaluation span starts a trace of its own and carries a span link to the
request's span (and its ids as ``ragtrace.evaluation.trace_id`` / ``.span_id`` for UIs that do
not show links). How many spans is the ``layout`` (``Config.evaluation_spans``):

- ``evaluator`` (default): one span per evaluator run, timed like the run, named
  ``evaluate <evaluator>`` (``evaluate faithfulness``);
- ``score``: one span per score, named ``evaluate <score name>``;
- ``record``: one span per record, spanning all its evaluator runs, named ``evaluate record``.

Every span is OpenInference kind ``EVALUATOR``, with ``input.value`` (the request's query and
answer as JSON; ids only when ``capture_content`` is off) and ``output.value`` (its scores as
JSON). Every score is on the span's attributes as ``ragtrace.evaluation.<score>.{score,label,
passed}`` (the label: the evaluator's own, else ``pass`` / ``fail`` / ``error``); a span with
one score also carries ``gen_ai.evaluation.{name,score.value,score.label,explanation}`` and
``ragtrace.evaluation.{kind,direction,model,threshold,passed,details}``. A span whose verdict
failed (a score below its threshold) or whose evaluator failed gets status ERROR, saying which;
an evaluator failure also sets ``error.type``.

``result_attributes(score, evaluator)`` is what one score says, shared with the log events;
``inline_attributes(evaluations)`` gives what inline evaluators write onto the RAG span itself.
The runtime builds the sink when ``Config.evaluation_results`` is ``spans`` or ``both``
(``from_config``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.base import ConfirmsDelivery, DelegatedDelivery, SinkContext
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._text import dump_json

MAX_DETAILS_CHARS = 8000
MAX_EXPLANATION_CHARS = 2000
MAX_IO_CHARS = 16000

LAYOUTS = ("evaluator", "score", "record")
RECORD_SPAN = "record"
LINK_ATTRIBUTES = {"ragtrace.link": "evaluated request"}


class OtelEvaluationSink(DelegatedDelivery):
    """Writes the record's evaluation results as spans, in traces of their own linked to the
    record's RAG span.

    Args:
        tracer: Where the spans go.
        layout: ``evaluator`` (a span per evaluator run), ``score`` (a span per score) or
            ``record`` (one span per record).
        capture_content: Put the request's query and answer in each span's ``input.value``
            (``Config.capture_content``); off, only the request's ids.
        delivery: What says whether the spans were exported (ragtrace's own span processor;
            ``ConfirmsDelivery``); None: nothing to confirm.
    """

    def __init__(
        self,
        tracer: trace.Tracer,
        layout: str = "evaluator",
        *,
        capture_content: bool = True,
        delivery: ConfirmsDelivery | None = None,
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"evaluation span layout {layout!r}: use one of {LAYOUTS}")
        self._tracer = tracer
        self.layout = layout
        self._capture_content = capture_content
        self._delivery = delivery

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        request = request_span_context(record)
        if request is None or not evaluations:
            return
        if self.layout == "score":
            for evaluation in evaluations:
                for score in evaluation.scores:
                    self._span(record, request, score.name, [(evaluation, [score])])
        elif self.layout == "evaluator":
            for evaluation in evaluations:
                runs = [(evaluation, list(evaluation.scores))]
                self._span(record, request, evaluation.evaluator, runs)
        else:
            runs = [(evaluation, list(evaluation.scores)) for evaluation in evaluations]
            self._span(record, request, RECORD_SPAN, runs)

    def _span(
        self,
        record: RagRecord,
        request: SpanContext,
        name: str,
        runs: Sequence[tuple[Evaluation, Sequence[Score]]],
    ) -> None:
        scores = [(score, evaluation.evaluator) for evaluation, ss in runs for score in ss]
        attrs = self._attributes(record, runs, scores)
        span = self._tracer.start_span(
            sc.evaluation_span_name(name),
            context=Context(),  # a trace of its own, whatever the current span is
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            links=[Link(request, LINK_ATTRIBUTES)],
            start_time=min(e.start_ns for e, _ in runs),
        )
        errors = [f"{s.name}: {s.error}" for s, _ in scores if s.error is not None]
        failed = [_failure(s) for s, _ in scores if s.error is None and s.passed is False]
        if errors or failed:
            text = "; ".join([*errors, *failed])
            span.set_status(Status(StatusCode.ERROR, cut_text(text, MAX_EXPLANATION_CHARS)))
        span.end(end_time=max(e.end_ns for e, _ in runs))

    def _attributes(
        self,
        record: RagRecord,
        runs: Sequence[tuple[Evaluation, Sequence[Score]]],
        scores: Sequence[tuple[Score, str]],
    ) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            sc.OI_SPAN_KIND: sc.OI_KIND_EVALUATOR,
            sc.RAGTRACE_EVALUATION_TRACE_ID: record.trace_id,
            sc.RAGTRACE_EVALUATION_SPAN_ID: record.span_id,
            **request_attributes(record),
        }
        evaluators = list(dict.fromkeys(e.evaluator for e, _ in runs))
        if len(evaluators) == 1:
            attrs[sc.RAGTRACE_EVALUATOR] = evaluators[0]
        if len(scores) == 1:
            score, evaluator = scores[0]
            attrs.update(score_attributes(score, evaluator))
        elif scores:
            first = scores[0][0]
            attrs[sc.RAGTRACE_EVALUATION_KIND] = first.evaluator_kind
            if first.model is not None:
                attrs[sc.RAGTRACE_EVALUATION_MODEL] = first.model
        for score, _ in scores:
            attrs.update(per_score_attributes(score))
        if any(s.error is not None for s, _ in scores):
            attrs[sc.RAGTRACE_ERROR_TYPE] = "evaluation_error"
        evaluated: dict[str, Any] = {"trace_id": record.trace_id, "span_id": record.span_id}
        if self._capture_content:
            evaluated.update(query=record.query, response=record.response)
        attrs[sc.INPUT_VALUE] = dump_json(evaluated, MAX_IO_CHARS)[0]
        attrs[sc.INPUT_MIME_TYPE] = sc.MIME_JSON
        attrs[sc.OUTPUT_VALUE] = dump_json([_summary(s) for s, _ in scores], MAX_IO_CHARS)[0]
        attrs[sc.OUTPUT_MIME_TYPE] = sc.MIME_JSON
        return attrs

    def shutdown(self) -> None:
        """Spans belong to the tracer provider, which the application flushes."""


def from_config(config: Config, context: SinkContext) -> OtelEvaluationSink | None:
    """Evaluation spans on the runtime's tracer, when results go to spans."""
    if context.results_mode not in ("spans", "both"):
        return None
    return OtelEvaluationSink(
        context.tracer,
        config.evaluation_spans,
        capture_content=config.capture_content,
        delivery=context.span_delivery,
    )


def request_span_context(record: RagRecord) -> SpanContext | None:
    """The record's RAG span as a (remote, sampled) span context; None without valid ids."""
    try:
        trace_id, span_id = int(record.trace_id, 16), int(record.span_id, 16)
    except (TypeError, ValueError):
        return None
    if not trace_id or not span_id or trace_id >> 128 or span_id >> 64:
        return None
    return SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )


def request_attributes(record: RagRecord) -> dict[str, Any]:
    """What every evaluation result says of the request it scored: its app and, for a turn of a
    conversation, the conversation's id (``gen_ai.conversation.id``), so results can be read
    per thread."""
    attrs: dict[str, Any] = {sc.RAGTRACE_APP: record.app}
    conversation = record.conversation
    if conversation is not None and conversation.session_id is not None:
        attrs[sc.GEN_AI_CONVERSATION_ID] = conversation.session_id
    return attrs


def score_attributes(score: Score, evaluator: str) -> dict[str, Any]:
    """The span attributes of one Score (None values left out, as OpenTelemetry requires)."""
    attrs: dict[str, Any] = {
        sc.RAGTRACE_EVALUATION_KIND: score.evaluator_kind,
        sc.RAGTRACE_EVALUATION_DIRECTION: score.direction,
        **result_attributes(score, evaluator),
    }
    if score.model is not None:
        attrs[sc.RAGTRACE_EVALUATION_MODEL] = score.model
    if score.details:
        attrs[sc.RAGTRACE_EVALUATION_DETAILS] = dump_json(score.details, MAX_DETAILS_CHARS)[0]
    return attrs


def per_score_attributes(score: Score) -> dict[str, Any]:
    """``ragtrace.evaluation.<score>.{score,label,passed}``: one score among several."""
    attrs: dict[str, Any] = {}
    if score.value is not None:
        attrs[sc.inline_score_attr(score.name)] = score.value
    label = result_label(score)
    if label is not None:
        attrs[sc.score_label_attr(score.name)] = label
    if score.passed is not None:
        attrs[sc.inline_passed_attr(score.name)] = score.passed
    return attrs


def result_attributes(score: Score, evaluator: str) -> dict[str, Any]:
    """What one ``gen_ai.evaluation.result`` says: the score's result, bounded, with
    ragtrace's own fields under ``ragtrace.evaluation.*``."""
    attrs: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_NAME: score.name,
        sc.RAGTRACE_EVALUATOR: evaluator,
    }
    optional: dict[str, Any] = {
        sc.GEN_AI_EVALUATION_SCORE_VALUE: score.value,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: result_label(score),
        sc.GEN_AI_EVALUATION_EXPLANATION: cut_text(score.explanation, MAX_EXPLANATION_CHARS),
        sc.RAGTRACE_EVALUATION_THRESHOLD: score.threshold,
        sc.RAGTRACE_EVALUATION_PASSED: score.passed,
        sc.RAGTRACE_EVALUATION_ERROR: cut_text(score.error, MAX_EXPLANATION_CHARS),
    }
    attrs.update((k, v) for k, v in optional.items() if v is not None)
    return attrs


def result_label(score: Score) -> str | None:
    """The label OpenTelemetry results carry: the evaluator's own (``good``, ``unfaithful``)
    when it gave one, else the verdict (``verdict_label``)."""
    return score.label if score.label is not None else verdict_label(score)


def verdict_label(score: Score) -> str | None:
    """``pass`` or ``fail`` against the score's threshold, ``error`` when the evaluator
    failed, else the evaluator's own label (None when it gave none)."""
    if score.error is not None:
        return "error"
    if score.passed is True:
        return "pass"
    if score.passed is False:
        return "fail"
    return score.label


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


def _summary(score: Score) -> dict[str, Any]:
    out: dict[str, Any] = {"name": score.name, "score": score.value, "label": result_label(score)}
    if score.threshold is not None:
        out["threshold"] = score.threshold
    if score.explanation:
        out["explanation"] = cut_text(score.explanation, MAX_EXPLANATION_CHARS)
    if score.error is not None:
        out["error"] = cut_text(score.error, MAX_EXPLANATION_CHARS)
    return out


def _failure(score: Score) -> str:
    value = "no score" if score.value is None else f"{score.value:.3g}"
    if score.threshold is None:
        return f"{score.name} failed ({value})"
    below = "above" if score.direction == "lower_is_better" else "below"
    return f"{score.name} failed ({value}, {below} its threshold {score.threshold:g})"


def cut_text(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters, ending in ``...`` when it was longer."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
