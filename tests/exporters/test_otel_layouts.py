"""Evaluation results as spans, in each layout (a span per evaluator run, the default; per
score; per record): each span in a trace of its own, linked to the request's span, named after
its evaluator, kind EVALUATOR, with its input, its scores as output and as attributes, and
status ERROR when a verdict failed or the evaluator did."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._exporters.otel import OtelEvaluationSink
from ragtrace._model import Evaluation, RagRecord, Score

RECORD = RagRecord(trace_id="ab" * 16, span_id="cd" * 8, query="q", response="r", app="shop")
LOOPING = Evaluation(
    "looping",
    (
        Score("looping.unique_sentences", 1.0, threshold=0.5, passed=True),
        Score("looping.compression_ratio", 0.2, threshold=0.5, passed=False, label="loops"),
    ),
    start_ns=1_000,
    end_ns=2_000,
)
TOXICITY = Evaluation(
    "toxicity", (Score("toxicity", 0.1, evaluator_kind="model", model="m"),), 2_500, 4_000
)
BROKEN = Evaluation(
    "judge_faithfulness", (Score("judge_faithfulness", None, error="timeout"),), 5_000, 9_000
)


def spans(
    layout: str, evaluations: list[Evaluation], *, capture_content: bool = True
) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    sink = OtelEvaluationSink(provider.get_tracer("t"), layout, capture_content=capture_content)
    with provider.get_tracer("app").start_as_current_span("some current span"):
        sink.export(RECORD, evaluations)  # never a child of whatever is current
    return [s for s in memory.get_finished_spans() if s.name != "some current span"]


def check_linked_and_alone(span: ReadableSpan) -> None:
    assert span.parent is None
    assert span.context.trace_id != int(RECORD.trace_id, 16)
    (link,) = span.links
    assert (link.context.trace_id, link.context.span_id) == (
        int(RECORD.trace_id, 16),
        int(RECORD.span_id, 16),
    )
    assert span.attributes[sc.RAGTRACE_EVALUATION_TRACE_ID] == RECORD.trace_id
    assert span.attributes[sc.RAGTRACE_EVALUATION_SPAN_ID] == RECORD.span_id
    assert span.attributes[sc.OI_SPAN_KIND] == "EVALUATOR"
    assert span.events == ()  # results are attributes here, log events elsewhere


def test_by_default_one_span_per_evaluator_run_named_after_it() -> None:
    looping, toxicity = spans("evaluator", [LOOPING, TOXICITY])
    assert (looping.name, toxicity.name) == ("evaluate looping", "evaluate toxicity")
    for span in (looping, toxicity):
        check_linked_and_alone(span)
    assert len({looping.context.trace_id, toxicity.context.trace_id}) == 2
    assert (looping.start_time, looping.end_time) == (1_000, 2_000)
    attrs = dict(looping.attributes or {})
    assert json.loads(str(attrs.pop(sc.INPUT_VALUE))) == {
        "trace_id": RECORD.trace_id,
        "span_id": RECORD.span_id,
        "query": "q",
        "response": "r",
    }
    assert json.loads(str(attrs.pop(sc.OUTPUT_VALUE))) == [
        {"name": "looping.unique_sentences", "score": 1.0, "label": "pass", "threshold": 0.5},
        {"name": "looping.compression_ratio", "score": 0.2, "label": "loops", "threshold": 0.5},
    ]
    assert attrs == {
        sc.OI_SPAN_KIND: "EVALUATOR",
        sc.RAGTRACE_EVALUATION_TRACE_ID: RECORD.trace_id,
        sc.RAGTRACE_EVALUATION_SPAN_ID: RECORD.span_id,
        sc.RAGTRACE_APP: "shop",
        sc.RAGTRACE_EVALUATOR: "looping",
        sc.RAGTRACE_EVALUATION_KIND: "lexical",
        "ragtrace.evaluation.looping.unique_sentences.score": 1.0,
        "ragtrace.evaluation.looping.unique_sentences.label": "pass",
        "ragtrace.evaluation.looping.unique_sentences.passed": True,
        "ragtrace.evaluation.looping.compression_ratio.score": 0.2,
        "ragtrace.evaluation.looping.compression_ratio.label": "loops",  # the evaluator's own
        "ragtrace.evaluation.looping.compression_ratio.passed": False,
        sc.INPUT_MIME_TYPE: "application/json",
        sc.OUTPUT_MIME_TYPE: "application/json",
    }
    # a failed verdict is an ERROR span, saying which score and why
    assert looping.status.status_code == StatusCode.ERROR
    assert looping.status.description == (
        "looping.compression_ratio failed (0.2, below its threshold 0.5)"
    )
    # a single score is also written in the GenAI names, so a span table shows it in the row
    assert toxicity.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.1
    assert toxicity.attributes[sc.GEN_AI_EVALUATION_NAME] == "toxicity"
    assert toxicity.attributes[sc.RAGTRACE_EVALUATION_MODEL] == "m"
    assert sc.GEN_AI_EVALUATION_SCORE_LABEL not in toxicity.attributes  # no threshold, no label
    assert toxicity.status.status_code == StatusCode.UNSET


def test_the_score_layout_keeps_one_span_per_score() -> None:
    out = spans("score", [LOOPING, TOXICITY])
    assert [s.name for s in out] == [
        "evaluate looping.unique_sentences",
        "evaluate looping.compression_ratio",
        "evaluate toxicity",
    ]
    assert [s.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] for s in out] == [1.0, 0.2, 0.1]
    assert [s.status.status_code for s in out] == [
        StatusCode.UNSET,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]
    for span in out:
        check_linked_and_alone(span)


def test_the_record_layout_puts_every_score_on_one_span() -> None:
    (span,) = spans("record", [LOOPING, TOXICITY, BROKEN])
    check_linked_and_alone(span)
    assert span.name == "evaluate record"
    assert (span.start_time, span.end_time) == (1_000, 9_000)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == (
        "judge_faithfulness: timeout; looping.compression_ratio failed (0.2, below its "
        "threshold 0.5)"
    )
    names = [s["name"] for s in json.loads(str(span.attributes[sc.OUTPUT_VALUE]))]
    assert names == [
        "looping.unique_sentences",
        "looping.compression_ratio",
        "toxicity",
        "judge_faithfulness",
    ]
    assert span.attributes["ragtrace.evaluation.toxicity.score"] == 0.1
    assert span.attributes["ragtrace.evaluation.judge_faithfulness.label"] == "error"
    assert sc.RAGTRACE_EVALUATOR not in span.attributes  # several evaluators


def test_a_failed_evaluator_marks_its_span_in_every_layout() -> None:
    for layout in ("evaluator", "score"):
        (span,) = spans(layout, [BROKEN])
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "judge_faithfulness: timeout"
        assert span.attributes[sc.RAGTRACE_ERROR_TYPE] == "evaluation_error"
        assert span.attributes[sc.RAGTRACE_EVALUATION_ERROR] == "timeout"
        assert span.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "error"


def test_without_content_capture_the_input_holds_ids_only() -> None:
    (span,) = spans("evaluator", [TOXICITY], capture_content=False)
    assert json.loads(str(span.attributes[sc.INPUT_VALUE])) == {
        "trace_id": RECORD.trace_id,
        "span_id": RECORD.span_id,
    }


def test_nothing_to_say_or_no_request_writes_no_span_and_a_bad_layout_is_refused() -> None:
    assert spans("record", []) == []
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    sink = OtelEvaluationSink(provider.get_tracer("t"))
    for bad in ("", "zz", "0" * 32):
        sink.export(RagRecord(trace_id=bad, span_id="cd" * 8, query="q"), [TOXICITY])
    assert memory.get_finished_spans() == ()
    with pytest.raises(ValueError, match="layout 'compact'"):
        OtelEvaluationSink(trace.NoOpTracer(), "compact")
    with pytest.raises(ValueError, match="evaluation_spans: must be one of"):
        Config(evaluation_spans="compact")
    assert Config.resolve(env={"RAGTRACE_EVALUATION_SPANS": "record"}).evaluation_spans == "record"
