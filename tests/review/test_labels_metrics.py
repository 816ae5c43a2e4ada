"""Labels flow back: a human Score on the OpenTelemetry and Prometheus sinks, the review
families (queue size, labels, agreement) computed from the store."""

from __future__ import annotations

import json
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._metrics.review import METRIC_NAMES, ReviewMetrics
from ragtrace.review._items import Label
from ragtrace.review._store import SqlReviewStore
from ragtrace.review._wiring import app_for_runtime, build_app
from tests.review.conftest import make_item, score


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_a_label_becomes_a_human_evaluation_span_linked_to_the_request(
    sqlite_store: SqlReviewStore,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = build_app(sqlite_store, tracer=provider.get_tracer("t"), redact=lambda t: t.upper())
    item_id = sqlite_store.enqueue(make_item(7))
    stored = app.labels.label(
        item_id,
        Label("bad", "hallucination", notes="made up", corrected_answer="x", reviewer="ana"),
    )
    (span,) = exporter.get_finished_spans()
    assert span.name == "evaluate human"
    assert span.parent is None and format(span.context.trace_id, "032x") != f"{7:032x}"
    (link,) = span.links
    assert (format(link.context.trace_id, "032x"), format(link.context.span_id, "016x")) == (
        f"{7:032x}",
        f"{7:016x}",
    )
    assert span.start_time == stored.created_ns
    attrs = dict(span.attributes or {})
    details = json.loads(attrs.pop(sc.RAGTRACE_EVALUATION_DETAILS))
    for key in (sc.INPUT_VALUE, sc.OUTPUT_VALUE, sc.INPUT_MIME_TYPE, sc.OUTPUT_MIME_TYPE):
        attrs.pop(key)
    assert attrs.pop(sc.RAGTRACE_EVALUATION_TRACE_ID) == f"{7:032x}"
    assert attrs.pop(sc.RAGTRACE_EVALUATION_SPAN_ID) == f"{7:016x}"
    attrs.pop(sc.RAGTRACE_APP)
    assert attrs.pop("ragtrace.evaluation.human.score") == 0.0
    assert attrs.pop("ragtrace.evaluation.human.label") == "bad"
    assert attrs.pop("ragtrace.evaluation.human.passed") is False
    assert details == {
        "review_item": item_id,
        "review_label": stored.id,
        "failure_type": "hallucination",
        "reviewer": "ANA",
        "corrected_answer": True,
    }
    assert attrs == {
        sc.OI_SPAN_KIND: "EVALUATOR",
        sc.GEN_AI_EVALUATION_NAME: "human",
        sc.RAGTRACE_EVALUATOR: "human",
        sc.RAGTRACE_EVALUATION_KIND: "human",
        sc.RAGTRACE_EVALUATION_DIRECTION: "higher_is_better",
        sc.GEN_AI_EVALUATION_SCORE_VALUE: 0.0,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "bad",
        sc.GEN_AI_EVALUATION_EXPLANATION: "MADE UP",  # notes are redacted before they leave
        sc.RAGTRACE_EVALUATION_THRESHOLD: 0.5,
        sc.RAGTRACE_EVALUATION_PASSED: False,
    }
    assert sqlite_store.labels(item_id)[0].label.corrected_answer == "X"


def test_human_verdicts_are_counted_on_the_evaluation_families(
    sqlite_store: SqlReviewStore,
) -> None:
    registry = CollectorRegistry()
    app = build_app(sqlite_store, registry=registry)
    ids = [sqlite_store.enqueue(make_item(n)) for n in range(1, 5)]
    for item_id, verdict in zip(ids, ("good", "bad", "bad", "unsure"), strict=True):
        app.labels.label(item_id, Label(verdict))
    for outcome, n in (("pass", 1), ("fail", 2), ("skipped", 1)):
        got = sample(
            registry, "ragtrace_evaluations_total", evaluator="human", app="shop", outcome=outcome
        )
        assert got == n
    count = sample(registry, "ragtrace_evaluation_score_count", evaluator="human", app="shop")
    total = sample(registry, "ragtrace_evaluation_score_sum", evaluator="human", app="shop")
    assert (count, total) == (3, 1.0)  # unsure has no value
    exposition = generate_latest(registry).decode()
    assert "ragtrace_requests_total" not in exposition  # a review server captures no requests
    assert "ragtrace_queue_depth" not in exposition


def test_review_families_follow_the_store(store: SqlReviewStore) -> None:
    registry = CollectorRegistry()
    app = build_app(store, registry=registry)

    def judged(n: int, judge: bool, cheap: bool, lexical: bool, app_name: str = "shop") -> int:
        return store.enqueue(
            make_item(
                n,
                app=app_name,
                reasons=("disagreement",) if judge != cheap else ("score_failed",),
                scores=(
                    ("faithfulness", score("faithfulness", 0.5, judge, kind="judge")),
                    ("groundedness", score("groundedness", 0.5, cheap, kind="model")),
                    ("tokens", score("tokens_presence.answer", 1.0, lexical)),
                ),
            )
        )

    # verdict:      good         bad           bad          good
    # judge:        pass (ok)    fail (ok)     fail (ok)    fail (no)  -> 3/4
    # model:        fail (no)    pass (no)     fail (ok)    pass (ok)  -> 2/4
    # lexical:      pass (ok)    -             -            pass (ok)  -> 2/2
    # (a hallucination label says nothing of tokens_presence: ragtrace.review._agreement)
    a = judged(1, True, False, True)
    b = judged(2, False, True, True)
    c = judged(3, False, False, True)
    d = judged(4, False, True, True)
    e = judged(5, True, True, True)  # labelled unsure: not compared
    judged(6, True, True, True)  # waiting
    judged(7, False, True, True, app_name="bank")  # waiting
    labels = (
        (a, "good", None),
        (b, "bad", "hallucination"),
        (c, "bad", "hallucination"),
        (d, "good", None),
        (e, "unsure", None),
    )
    before = sample(registry, "ragtrace_review_queue_size", app="shop", reason="score_failed")
    assert before == 3  # c, e and 6 wait; a, b and d are disagreements
    for item_id, verdict, failure in labels:
        app.labels.label(item_id, Label(verdict, failure))
    get = sample
    assert get(registry, "ragtrace_review_queue_size", app="shop", reason="score_failed") == 1
    assert get(registry, "ragtrace_review_queue_size", app="bank", reason="disagreement") == 1
    assert get(registry, "ragtrace_review_queue_size", app="shop", reason="disagreement") is None
    assert (
        get(
            registry,
            "ragtrace_review_labels_total",
            app="shop",
            verdict="bad",
            failure_type="hallucination",
        )
        == 2
    )
    assert (
        get(
            registry,
            "ragtrace_review_labels_total",
            app="shop",
            verdict="good",
            failure_type="none",
        )
        == 2
    )
    agreement = {
        (s.labels["evaluator"], s.labels["kind"]): s.value
        for family in registry.collect()
        if family.name == "ragtrace_review_agreement"
        for s in family.samples
    }
    assert agreement == {
        ("faithfulness", "judge"): 0.75,
        ("groundedness", "model"): 0.5,
        ("tokens_presence.answer", "lexical"): 1.0,
    }
    compared = get(
        registry,
        "ragtrace_review_agreement_compared",
        evaluator="faithfulness",
        kind="judge",
        app="shop",
    )
    assert compared == 4
    kinds = {
        s.labels["kind"]: s.value
        for family in registry.collect()
        if family.name == "ragtrace_review_kind_agreement"
        for s in family.samples
    }
    assert kinds == {"judge": 0.75, "model": 0.5, "lexical": 1.0, "cheap": pytest.approx(4 / 6)}


def test_the_collector_caches_reads_and_survives_a_broken_store(
    sqlite_store: SqlReviewStore,
) -> None:
    registry = CollectorRegistry()
    metrics = ReviewMetrics(sqlite_store, registry, max_age_s=60)
    sqlite_store.enqueue(make_item(1))
    assert sample(registry, "ragtrace_review_queue_size", app="shop", reason="score_failed") == 1
    sqlite_store.enqueue(make_item(2))
    assert sample(registry, "ragtrace_review_queue_size", app="shop", reason="score_failed") == 1
    metrics.invalidate()
    assert sample(registry, "ragtrace_review_queue_size", app="shop", reason="score_failed") == 2
    sqlite_store.close()
    metrics.invalidate()
    exposition = generate_latest(registry).decode()  # the scrape still works
    assert "# TYPE ragtrace_review_queue_size gauge" in exposition
    assert not re.search(r"^ragtrace_review_queue_size\{", exposition, re.M)
    assert metrics.errors == 1
    metrics.unregister()
    metrics.unregister()
    assert "ragtrace_review" not in generate_latest(registry).decode()


def test_metric_names_are_the_documented_ones() -> None:
    assert METRIC_NAMES == (
        "ragtrace_review_queue_size",
        "ragtrace_review_labels_total",
        "ragtrace_review_agreement",
        "ragtrace_review_agreement_compared",
        "ragtrace_review_kind_agreement",
    )


def test_labels_in_the_apps_process_use_the_runtime_metrics_and_tracer(
    sqlite_store: SqlReviewStore,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = CollectorRegistry()
    rt = ragtrace.init(app="shop", tracer_provider=provider, registry=registry, evaluators=[])
    try:
        app = app_for_runtime(rt, sqlite_store)
        item_id = sqlite_store.enqueue(make_item(3))
        app.labels.label(item_id, Label("good"))
        assert (
            sample(
                registry,
                "ragtrace_evaluations_total",
                evaluator="human",
                app="shop",
                outcome="pass",
            )
            == 1
        )
        assert [s.name for s in exporter.get_finished_spans()] == ["evaluate human"]
        assert (
            sample(
                registry,
                "ragtrace_review_labels_total",
                app="shop",
                verdict="good",
                failure_type="none",
            )
            == 1
        )
        app.close()
        assert (
            sample(
                registry,
                "ragtrace_review_labels_total",
                app="shop",
                verdict="good",
                failure_type="none",
            )
            is None
        )
    finally:
        rt.shutdown()


def test_labelling_an_unknown_item_raises_and_publishes_nothing(
    sqlite_store: SqlReviewStore,
) -> None:
    registry = CollectorRegistry()
    app = build_app(sqlite_store, registry=registry)
    with pytest.raises(KeyError):
        app.labels.label(404, Label("good"))
    assert (
        sample(
            registry, "ragtrace_evaluations_total", evaluator="human", app="shop", outcome="pass"
        )
        is None
    )
