"""``PrometheusSink``: evaluation results become exact Prometheus samples."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest

from ragtrace._exporters import ScoreSink
from ragtrace._exporters.prometheus import PrometheusSink
from ragtrace._metrics.collection import Metrics
from ragtrace._model import Evaluation, RagRecord, Score

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"


def record(trace_id: str, app: str = "shop") -> RagRecord:
    return RagRecord(trace_id=trace_id, span_id="00f067aa0ba902b7", query="q", app=app)


def evaluation(evaluator: str, *scores: Score, ms: float = 20.0) -> Evaluation:
    start = 1_700_000_000_000_000_000
    return Evaluation(evaluator, scores, start_ns=start, end_ns=start + int(ms * 1e6))


@pytest.fixture
def sink(registry: CollectorRegistry) -> PrometheusSink:
    return PrometheusSink(Metrics(registry, app="shop"))


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_is_a_score_sink(sink: PrometheusSink) -> None:
    def accepts(s: ScoreSink) -> ScoreSink:
        return s

    assert accepts(sink) is sink


def test_export_counts_outcomes_scores_and_durations(
    sink: PrometheusSink, registry: CollectorRegistry
) -> None:
    sink.export(
        record(TRACE_A),
        [
            evaluation(
                "groundedness",
                Score("groundedness", 0.9, threshold=0.5, passed=True),
                ms=12,
            ),
            evaluation(
                "ragas",  # one evaluator, two metrics: labelled by the score's name
                Score("faithfulness", 0.3, threshold=0.5, passed=False),
                Score("answer_relevance", 0.8),
                ms=1500,
            ),
            evaluation("judge", Score("judge", None, error="TimeoutError: 10s"), ms=10_000),
        ],
    )
    sink.export(
        record(TRACE_B),
        [evaluation("groundedness", Score("groundedness", 0.2, threshold=0.5, passed=False))],
    )

    total = "ragtrace_evaluations_total"
    outcomes = {
        (s.labels["evaluator"], s.labels["outcome"]): s.value
        for f in registry.collect()
        if f.name == "ragtrace_evaluations"
        for s in f.samples
        if s.name == total
    }
    assert outcomes == {
        ("groundedness", "pass"): 1,
        ("groundedness", "fail"): 1,
        ("faithfulness", "fail"): 1,
        ("answer_relevance", "pass"): 1,  # no threshold: pass
        ("judge", "error"): 1,
    }

    score = "ragtrace_evaluation_score"
    assert sample(registry, f"{score}_count", evaluator="groundedness", app="shop") == 2
    assert sample(registry, f"{score}_sum", evaluator="groundedness", app="shop") == (
        pytest.approx(1.1)
    )
    assert sample(registry, f"{score}_count", evaluator="faithfulness", app="shop") == 1
    assert sample(registry, f"{score}_count", evaluator="judge", app="shop") is None  # no value

    duration = "ragtrace_evaluation_duration_seconds"
    assert sample(registry, f"{duration}_count", evaluator="groundedness") == 2
    assert sample(registry, f"{duration}_count", evaluator="ragas") == 1  # once per Evaluation
    assert sample(registry, f"{duration}_sum", evaluator="ragas") == pytest.approx(1.5)
    assert sample(registry, f"{duration}_bucket", evaluator="judge", le="5.0") == 0
    assert sample(registry, f"{duration}_bucket", evaluator="judge", le="10.0") == 1


def test_exemplars_carry_the_record_trace_id(
    sink: PrometheusSink, registry: CollectorRegistry
) -> None:
    sink.export(record(TRACE_A), [evaluation("g", Score("g", 0.42))])
    sink.export(record(TRACE_B), [evaluation("g", Score("g", 0.93))])
    lines = generate_latest(registry).decode().splitlines()
    buckets = [ln for ln in lines if ln.startswith("ragtrace_evaluation_score_bucket")]
    assert f'le="0.45"}} 1.0 # {{trace_id="{TRACE_A}"}} 0.42' in "\n".join(buckets)
    assert f'le="0.95"}} 2.0 # {{trace_id="{TRACE_B}"}} 0.93' in "\n".join(buckets)


def test_apps_come_from_the_record_and_are_bounded(
    sink: PrometheusSink, registry: CollectorRegistry
) -> None:
    for i in range(30):
        sink.export(record(TRACE_A, app=f"tenant-{i}"), [evaluation("g", Score("g", 0.5))])
    apps = {
        s.labels["app"]
        for f in registry.collect()
        if f.name == "ragtrace_evaluation_score"
        for s in f.samples
    }
    assert len(apps) == 20 and "other" in apps  # "shop" + tenant-0..18 fill the cap of 20
    assert sample(registry, "ragtrace_evaluation_score_count", evaluator="g", app="other") == 11


def test_an_evaluation_without_scores_still_times_the_evaluator(
    sink: PrometheusSink, registry: CollectorRegistry
) -> None:
    sink.export(record(TRACE_A), [evaluation("empty")])
    sink.shutdown()
    sink.shutdown()
    assert sample(registry, "ragtrace_evaluation_duration_seconds_count", evaluator="empty") == 1
    assert not [
        s for f in registry.collect() if f.name == "ragtrace_evaluations" for s in f.samples
    ]
