"""A real Prometheus scraping the running demo answers quantile queries per evaluator."""

from __future__ import annotations

import pytest

from tests.components import free_port, require_binary, run_prometheus
from tests.demo_thread import demo_in_thread

EVALUATORS = {
    "looping.unique_sentences",
    "looping.longest_repeated_substring",
    "looping.compression_ratio",
    "tokens_presence.answer",
}
MEDIAN = (
    "histogram_quantile(0.5, sum by (le, evaluator) (rate(ragtrace_evaluation_score_bucket[30s])))"
)


@pytest.mark.integration
def test_prometheus_scraping_the_demo_answers_score_quantiles_per_evaluator() -> None:
    require_binary("prometheus")
    port = free_port()
    with demo_in_thread(port, duration_s=120), run_prometheus([f"127.0.0.1:{port}"]) as prometheus:
        medians = prometheus.query(
            MEDIAN,
            until=lambda series: {s["metric"].get("evaluator") for s in series} >= EVALUATORS,
            timeout_s=60,
        )
        outcomes = prometheus.query(
            'sum by (outcome) (ragtrace_evaluations_total{app="aurora-help"})'
        )
        requests = prometheus.query("sum(ragtrace_requests_total)")
    by_evaluator = {s["metric"]["evaluator"]: float(s["value"][1]) for s in medians}
    for name in EVALUATORS:
        assert 0.0 <= by_evaluator[name] <= 1.0, (name, by_evaluator[name])
    # most answers are not loops and leak nothing: the medians of these sit high
    assert by_evaluator["looping.unique_sentences"] > 0.5
    assert by_evaluator["tokens_presence.answer"] > 0.5
    counts = {s["metric"]["outcome"]: float(s["value"][1]) for s in outcomes}
    assert counts.get("pass", 0) > 0 and counts.get("fail", 0) > 0
    assert float(requests[0]["value"][1]) > 0
