"""Evaluation results as spans, in each layout: a span per evaluator run (the default), per
score, or per record; every score is a ``gen_ai.evaluation.result`` event; errors show."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ragtrace.capture import semconv as sc
from ragtrace.config import Config
from ragtrace.exporters.base import Evaluation
from ragtrace.exporters.otel import OtelEvaluationSink
from ragtrace.model import RagRecord, Score

RECORD = RagRecord(trace_id="ab" * 16, span_id="cd" * 8, query="q", response="r")
LOOPING = Evaluation(
    "looping",
    (
        Score("looping.unique_sentences", 1.0, threshold=0.5, passed=True),
        Score("looping.compression_ratio", 0.2, threshold=0.5, passed=False, label="fail"),
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


def spans(layout: str, evaluations: list[Evaluation]) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    OtelEvaluationSink(provider.get_tracer("t"), layout).export(RECORD, evaluations)
    return list(memory.get_finished_spans())


def names(span: ReadableSpan) -> list[str]:
    return [e.attributes[sc.GEN_AI_EVALUATION_NAME] for e in span.events]  # type: ignore[index]


def test_by_default_one_span_per_evaluator_run_with_an_event_per_score() -> None:
    looping, toxicity = spans("evaluator", [LOOPING, TOXICITY])
    assert names(looping) == ["looping.unique_sentences", "looping.compression_ratio"]
    assert looping.attributes[sc.RAGTRACE_EVALUATOR] == "looping"
    assert sc.GEN_AI_EVALUATION_SCORE_VALUE not in looping.attributes  # two scores: on events
    assert (looping.start_time, looping.end_time) == (1_000, 2_000)
    second = looping.events[1].attributes
    assert (second[sc.RAGTRACE_EVALUATION_PASSED], second[sc.RAGTRACE_EVALUATION_THRESHOLD]) == (
        False,
        0.5,
    )
    # a single score stays on the span too, so a span table shows its value in the row
    assert toxicity.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.1
    assert toxicity.attributes[sc.RAGTRACE_EVALUATION_MODEL] == "m"
    assert all(
        s.parent is not None and s.parent.span_id == int(RECORD.span_id, 16)
        for s in (looping, toxicity)
    )
    assert all(s.context.trace_id == int(RECORD.trace_id, 16) for s in (looping, toxicity))


def test_the_score_layout_keeps_one_span_per_score() -> None:
    out = spans("score", [LOOPING, TOXICITY])
    assert [names(s) for s in out] == [
        ["looping.unique_sentences"],
        ["looping.compression_ratio"],
        ["toxicity"],
    ]
    assert [s.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] for s in out] == [1.0, 0.2, 0.1]


def test_the_record_layout_puts_every_score_on_one_span() -> None:
    (span,) = spans("record", [LOOPING, TOXICITY, BROKEN])
    assert names(span) == [
        "looping.unique_sentences",
        "looping.compression_ratio",
        "toxicity",
        "judge_faithfulness",
    ]
    assert (span.start_time, span.end_time) == (1_000, 9_000)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "judge_faithfulness: timeout"


def test_a_failed_evaluation_marks_its_span_in_every_layout() -> None:
    for layout in ("evaluator", "score"):
        (span,) = spans(layout, [BROKEN])
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes[sc.RAGTRACE_ERROR_TYPE] == "evaluation_error"
        assert span.events[0].attributes[sc.RAGTRACE_EVALUATION_ERROR] == "timeout"


def test_nothing_to_say_writes_no_span_and_a_bad_layout_is_refused() -> None:
    assert spans("record", []) == []
    with pytest.raises(ValueError, match="layout 'compact'"):
        OtelEvaluationSink(TracerProvider().get_tracer("t"), "compact")
    with pytest.raises(ValueError, match="evaluation_spans: must be one of"):
        Config(evaluation_spans="compact")
    assert Config.resolve(env={"RAGTRACE_EVALUATION_SPANS": "record"}).evaluation_spans == "record"
