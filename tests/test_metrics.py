"""The Prometheus families of ``Metrics``: names, labels, exact values, bounds, exemplars."""

from __future__ import annotations

import math
import threading

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest

from ragtrace._metrics.collection import DURATION_BUCKETS, SCORE_BUCKETS, Metrics
from ragtrace._metrics.labels import OTHER, LabelCap, clean_label
from ragtrace._model import Chunk, RagRecord, Score

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture
def metrics(registry: CollectorRegistry) -> Metrics:
    return Metrics(registry, app="shop")


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def family_names(registry: CollectorRegistry) -> set[str]:
    return {family.name for family in registry.collect()}


def test_all_families_register_on_the_injected_registry_only(registry: CollectorRegistry) -> None:
    from prometheus_client import REGISTRY

    before = family_names(REGISTRY)
    metrics = Metrics(registry, app="shop")
    assert family_names(registry) == {
        "ragtrace_requests",
        "ragtrace_retrieval_chunks",
        "ragtrace_retrieval_top_score",
        "ragtrace_internal_errors",
        "ragtrace_dropped_records",
        "ragtrace_dropped_spans",
        "ragtrace_records_shipped",
        "ragtrace_app_labels_folded",
        "ragtrace_evaluation_score",
        "ragtrace_evaluations",
        "ragtrace_evaluation_duration_seconds",
        "ragtrace_sampling_decisions",
        "ragtrace_queue_depth",
        "ragtrace_judge_tokens",
        "ragtrace_judge_cost_usd",
        "ragtrace_judge_duration_seconds",
        "ragtrace_judge_parse_failures",
        "ragtrace_judge_calls",
        "ragtrace_cache_lookups",
        "ragtrace_span_attributes_capped",
        "ragtrace_dropped_log_records",
        "ragtrace_annotations_sent",
        "ragtrace_dropped_annotations",
    }
    assert family_names(REGISTRY) == before
    metrics.unregister()
    metrics.unregister()  # idempotent
    assert family_names(registry) == set()
    Metrics(registry, app="shop")  # the names are free again


def test_score_histogram_buckets_values_and_exemplar(
    metrics: Metrics, registry: CollectorRegistry
) -> None:
    assert tuple(round(0.05 * i, 2) for i in range(1, 21)) == SCORE_BUCKETS
    metrics.observe_score(Score("groundedness", 0.72), app="shop", trace_id=TRACE_ID)
    metrics.observe_score(Score("groundedness", 0.2), app="shop", trace_id=TRACE_ID)
    labels = {"evaluator": "groundedness", "app": "shop"}
    assert value(registry, "ragtrace_evaluation_score_count", **labels) == 2
    assert value(registry, "ragtrace_evaluation_score_sum", **labels) == pytest.approx(0.92)
    assert value(registry, "ragtrace_evaluation_score_bucket", le="0.7", **labels) == 1
    assert value(registry, "ragtrace_evaluation_score_bucket", le="0.75", **labels) == 2
    assert value(registry, "ragtrace_evaluation_score_bucket", le="1.0", **labels) == 2

    exposition = generate_latest(registry).decode()
    bucket = next(
        line
        for line in exposition.splitlines()
        if line.startswith(
            'ragtrace_evaluation_score_bucket{app="shop",evaluator="groundedness",le="0.75"}'
        )
    )
    assert f'# {{trace_id="{TRACE_ID}"}} 0.72' in bucket
    assert TRACE_ID not in "".join(  # an id is never a label value
        line.split(" # ")[0] for line in exposition.splitlines()
    )


def test_scores_without_a_finite_value_are_never_observed(
    metrics: Metrics, registry: CollectorRegistry
) -> None:
    nan = Score("relevance", 0.5)
    object.__setattr__(nan, "value", math.nan)  # Score refuses NaN; prove the metric does too
    for score in (Score("relevance", None, error="boom"), Score("relevance", math.inf), nan):
        metrics.observe_score(score, app="shop", trace_id=TRACE_ID)
    assert (
        value(registry, "ragtrace_evaluation_score_count", evaluator="relevance", app="shop")
        is None
    )
    metrics.observe_score(Score("relevance", 0.0), app="shop", trace_id="")  # no exemplar
    assert (
        value(registry, "ragtrace_evaluation_score_count", evaluator="relevance", app="shop") == 1
    )
    assert 'evaluator="relevance",le="0.05"} 1.0\n' in generate_latest(registry).decode()


def test_evaluation_outcomes_are_counted_including_skipped(
    metrics: Metrics, registry: CollectorRegistry
) -> None:
    for outcome in ("pass", "pass", "fail", "error", "skipped", "skipped", "skipped"):
        metrics.count_evaluation("pii", outcome, app="shop")
    metrics.count_evaluation("pii", "bogus", app="shop")

    def count(outcome: str) -> float | None:
        return value(
            registry, "ragtrace_evaluations_total", evaluator="pii", app="shop", outcome=outcome
        )

    assert [count(o) for o in ("pass", "fail", "error", "skipped", OTHER)] == [2, 1, 1, 3, 1]


def test_evaluation_duration(metrics: Metrics, registry: CollectorRegistry) -> None:
    assert DURATION_BUCKETS[0] == 0.0001 and DURATION_BUCKETS[-1] == 30.0
    assert list(DURATION_BUCKETS) == sorted(DURATION_BUCKETS)
    for seconds in (0.00005, 0.3, 12.0, 45.0, -1.0, math.nan):
        metrics.observe_evaluation_duration("judge", seconds)
    name = "ragtrace_evaluation_duration_seconds"
    assert value(registry, f"{name}_count", evaluator="judge") == 4
    assert value(registry, f"{name}_bucket", evaluator="judge", le="0.0001") == 1
    assert value(registry, f"{name}_bucket", evaluator="judge", le="0.5") == 2
    assert value(registry, f"{name}_bucket", evaluator="judge", le="30.0") == 3
    assert value(registry, f"{name}_bucket", evaluator="judge", le="+Inf") == 4


def test_sampling_decisions(metrics: Metrics, registry: CollectorRegistry) -> None:
    metrics.count_sampling("sampled", "ratio")
    metrics.count_sampling("sampled", "ratio")
    metrics.count_sampling("dropped", "budget")
    name = "ragtrace_sampling_decisions_total"
    assert value(registry, name, decision="sampled", reason="ratio") == 2
    assert value(registry, name, decision="dropped", reason="budget") == 1


def test_queue_depth_reads_the_function_at_scrape_time(
    metrics: Metrics, registry: CollectorRegistry
) -> None:
    queue: list[int] = [1, 2, 3]
    metrics.watch_queue_depth(lambda: len(queue))
    assert value(registry, "ragtrace_queue_depth") == 3
    queue.clear()
    assert value(registry, "ragtrace_queue_depth") == 0

    def broken() -> float:
        raise RuntimeError("queue gone")

    metrics.watch_queue_depth(broken)
    assert math.isnan(value(registry, "ragtrace_queue_depth") or 0.0)  # the scrape survives
    site = "metrics.queue_depth"
    assert value(registry, "ragtrace_internal_errors_total", site=site) == 1


def test_judge_usage(metrics: Metrics, registry: CollectorRegistry) -> None:
    metrics.count_judge_usage("faithfulness", "gpt-4o-mini", 1200, 80, cost_usd=0.0004)
    metrics.count_judge_usage("faithfulness", "gpt-4o-mini", 300, 20)
    labels = {"evaluator": "faithfulness", "model": "gpt-4o-mini"}
    tokens = "ragtrace_judge_tokens_total"
    assert value(registry, tokens, direction="input", **labels) == 1500
    assert value(registry, tokens, direction="output", **labels) == 100
    assert value(registry, "ragtrace_judge_cost_usd_total", **labels) == pytest.approx(0.0004)


def test_judge_calls_time_and_parse_failures(metrics: Metrics, registry: CollectorRegistry) -> None:
    metrics.observe_judge_call("faithfulness", "qwen", 0.4)
    metrics.observe_judge_call("faithfulness", "qwen", 2.0, parsed=False)
    metrics.observe_judge_call("faithfulness", "qwen", math.nan, parsed=False)
    labels = {"evaluator": "faithfulness", "model": "qwen"}
    assert value(registry, "ragtrace_judge_duration_seconds_count", **labels) == 2
    assert value(registry, "ragtrace_judge_duration_seconds_sum", **labels) == pytest.approx(2.4)
    assert value(registry, "ragtrace_judge_parse_failures_total", **labels) == 2


def test_label_values_are_capped_to_other(metrics: Metrics, registry: CollectorRegistry) -> None:
    for i in range(60):
        metrics.count_evaluation(f"evaluator-{i}", "pass", app="shop")
    for i in range(25):
        metrics.count_evaluation("evaluator-0", "pass", app=f"app-{i}")
    for i in range(120):
        metrics.count_drop(f"reason-{i}")

    evaluators = {
        s.labels["evaluator"]
        for f in registry.collect()
        if f.name == "ragtrace_evaluations"
        for s in f.samples
        if s.labels["app"] == "shop"
    }
    assert len(evaluators) == 51 and OTHER in evaluators  # 50 kept, the rest is "other"
    total = "ragtrace_evaluations_total"
    assert value(registry, total, evaluator=OTHER, app="shop", outcome="pass") == 10
    # "shop" is the first app; app-0..app-18 fill the cap of 20, app-19..app-24 are "other".
    assert value(registry, total, evaluator="evaluator-0", app="app-18", outcome="pass") == 1
    assert value(registry, total, evaluator="evaluator-0", app="app-19", outcome="pass") is None
    assert value(registry, total, evaluator="evaluator-0", app=OTHER, outcome="pass") == 6
    assert value(registry, "ragtrace_app_labels_folded") == 6  # app-19 .. app-24, once each
    assert value(registry, "ragtrace_dropped_records_total", reason="reason-99") == 1
    assert value(registry, "ragtrace_dropped_records_total", reason=OTHER) == 20
    # A value seen before the cap filled keeps its own series.
    metrics.count_evaluation("evaluator-0", "fail", app="shop")
    assert value(registry, total, evaluator="evaluator-0", app="shop", outcome="fail") == 1


def test_the_app_cap_is_configurable_and_requests_carry_each_records_app(
    registry: CollectorRegistry,
) -> None:
    metrics = Metrics(registry, app="ragtrace-ingest", max_apps=3)
    for app in ("shop", "bank", "shop", "travel", "mail", "news", "mail"):
        metrics.observe_record(RagRecord(TRACE_ID, "00f067aa0ba902b7", "q", app=app))
    metrics.flush()
    requests = "ragtrace_requests_total"
    # the process's own name takes the first slot; shop and bank the others
    assert value(registry, requests, app="shop", status="ok") == 2
    assert value(registry, requests, app="bank", status="ok") == 1
    assert value(registry, requests, app=OTHER, status="ok") == 4  # travel, mail x2, news
    assert value(registry, requests, app="ragtrace-ingest", status="ok") == 0
    assert value(registry, "ragtrace_app_labels_folded") == 3
    with pytest.raises(ValueError, match="limit"):
        Metrics(CollectorRegistry(), app="a", max_apps=0)


def test_label_values_are_cleaned() -> None:
    assert clean_label("a\nb\x00c\x7f") == "a_b_c_"
    assert clean_label("x" * 500) == "x" * 64
    assert clean_label("  ") == "unknown"
    assert clean_label(3) == "3"
    cap = LabelCap(2, max_chars=8)
    assert [cap(v) for v in ("alpha\tbeta", "b", "c", "b", OTHER)] == [
        "alpha_be",
        "b",
        OTHER,
        "b",
        OTHER,
    ]
    assert cap.values == {"alpha_be", "b"}
    with pytest.raises(ValueError, match="limit"):
        LabelCap(0)


def test_label_cap_is_thread_safe() -> None:
    cap = LabelCap(10)

    def worker(offset: int) -> None:
        for i in range(200):
            cap(f"v{(i + offset) % 40}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cap.values) == 10


def test_capture_side_families_keep_their_behaviour(
    metrics: Metrics, registry: CollectorRegistry
) -> None:
    record = RagRecord(
        trace_id=TRACE_ID,
        span_id="00f067aa0ba902b7",
        query="q",
        chunks=(Chunk("a", score=0.4), Chunk("b", score=0.9), Chunk("c")),
        app="shop",
    )
    metrics.observe_record(record)
    metrics.count_internal_error("capture.on_end")
    metrics.count_drop("queue_full")
    assert value(registry, "ragtrace_requests_total", app="shop", status="ok") == 1
    assert value(registry, "ragtrace_requests_total", app="shop", status="error") == 0
    assert value(registry, "ragtrace_retrieval_chunks_sum", app="shop") == 3
    assert value(registry, "ragtrace_retrieval_top_score_sum", app="shop") == pytest.approx(0.9)
    assert value(registry, "ragtrace_internal_errors_total", site="capture.on_end") == 1
    assert value(registry, "ragtrace_dropped_records_total", reason="queue_full") == 1
