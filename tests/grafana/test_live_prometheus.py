"""Every dashboard and rule query, run by a real Prometheus that scrapes real ragtrace metrics.

One Prometheus (1 s scrapes and rule evaluations, exemplar storage, the shipped recording and
alert rules) serves the whole module. It scrapes three ragtrace ``/metrics`` endpoints:

- ``ragtrace-demo``: the embedded demo (a LangChain RAG app traced and scored by ragtrace),
  running in a thread: requests, retrieval health, looping and contact-details scores with
  trace-id exemplars, evaluator latency, sampling decisions, queue depth;
- ``synthetic`` and ``stalled`` (``tests/grafana/traffic.py``): series that cannot exist in a
  demo run, because the demo has no groundedness, PII, sensitive-data or toxicity evaluator and
  no LLM judge, and nothing in it drops records or fails inside ragtrace. These are fed BY HAND
  through ragtrace's own ``Metrics`` and ``PrometheusSink`` from made-up records and scores, so
  their names, labels and outcome values are ragtrace's, but the traffic is synthetic.

Each panel, variable, annotation and recording-rule query must parse and return data (with
``$__rate_interval`` and friends as ``1m`` and template variables as ``.*``); an alert's
expression must parse and each series it selects must exist. The last test switches the
synthetic traffic to an incident and waits until Prometheus itself puts every alert in
pending or firing (but the drop under a 7-day baseline, which needs older history).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from ragtrace.demo._run import APP as DEMO_APP
from tests.components import Prometheus, free_port, require_binary, run_prometheus, wait_until
from tests.demo_thread import demo_in_thread
from tests.grafana.artifacts import RULE_FILES, Query, alert_rules, legend_labels, queries
from tests.grafana.traffic import SyntheticTraffic

pytestmark = pytest.mark.integration

QUERIES = queries()
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
# a metric selector: a ragtrace series name (raw or recorded) and its matchers, if any
# Healthy synthetic traffic keeps these quiet. (The stalled process, rare PII hits and the
# demo's young, jumpy pass rates may already trip the others.)
QUIET_WHEN_HEALTHY = {
    "RagtraceQualityDrop",
    "RagtraceToxicAnswers",
    "RagtraceEvaluationErrorsHigh",
    "RagtraceRecordsDropped",
    "RagtraceEvaluationResultsUndelivered",
    "RagtraceInternalErrors",
    "RagtracePassageStoreFailing",
    "RagtraceJudgeSpendOverBudget",
    "RagtraceJudgeSpendRateHigh",
    "RagtraceQueueBacklogGrowing",
    "RagtraceDeadLetters",
}
# A drop needs a baseline older than its window (15 minutes at least), which a Prometheus
# minutes old cannot hold: the synthetic app, bad from the incident on, pages on its floor.
# The time-lapsed demo (test_demo_prometheus.py) and the backtest (tests/alerts) fire the drop.
NEEDS_HISTORY = {"RagtraceQualityDrop"}
# its evidence, and the panels that draw it: empty until a window has a baseline behind it
NEEDS_HISTORY_SERIES = "ragtrace_quality_drop:evidence"
SELECTOR = re.compile(r"((?:[a-z_]+:)?ragtrace[a-z0-9_:]*)(\{[^}]*\})?")


@dataclass
class Stack:
    prometheus: Prometheus
    traffic: SyntheticTraffic


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    require_binary("prometheus")
    port = free_port()
    with demo_in_thread(port, duration_s=600), SyntheticTraffic() as traffic:
        targets = {"ragtrace-demo": [f"127.0.0.1:{port}"], **traffic.targets}
        with run_prometheus(
            targets, rules_files=RULE_FILES, features=("exemplar-storage",)
        ) as prometheus:
            prometheus.wait_for_targets(timeout_s=45)
            yield Stack(prometheus, traffic)


def selectors(promql: str) -> list[str]:
    """The ragtrace series selectors in an expression, e.g. ``ragtrace_x_total{app="a"}``."""
    return [name + (matchers or "") for name, matchers in SELECTOR.findall(promql)]


def label_names(series: list[dict[str, Any]]) -> set[str]:
    return {name for s in series for name in s["metric"]}


@pytest.mark.parametrize("query", QUERIES, ids=[q.where for q in QUERIES])
def test_query_parses_and_returns_data(stack: Stack, query: Query) -> None:
    prometheus = stack.prometheus
    if NEEDS_HISTORY_SERIES in query.promql + query.where:
        prometheus.query_once(query.promql)  # PrometheusError on bad PromQL; no data yet
        return
    if query.kind == "alert":
        # An alert's expression has data only while its condition holds (the incident test
        # below makes every one hold); here: it parses, and every series it reads exists.
        prometheus.query_once(query.promql)  # PrometheusError on bad PromQL
        for selector in selectors(query.promql):
            assert prometheus.query(selector, timeout_s=30), selector
        return
    series = prometheus.query(query.promql, timeout_s=30)
    assert series, query.promql
    missing = legend_labels(query.legend) - label_names(series)
    assert not missing, f"legend {query.legend!r} names labels the result lacks: {missing}"
    if query.kind == "variable":
        label = query.promql.split("(", 1)[1].split(")", 1)[0].split()[-1]
        assert all(s["metric"].get(label) for s in series), series


def test_demo_app_and_its_evaluators_are_what_the_variables_offer(stack: Stack) -> None:
    apps = stack.prometheus.query(
        "count by (app) (ragtrace_evaluations_total)",
        until=lambda series: DEMO_APP in {s["metric"]["app"] for s in series},
    )
    assert {s["metric"]["app"] for s in apps} == {DEMO_APP, "synthetic-rag"}
    evaluators = stack.prometheus.query(
        f'count by (evaluator) (ragtrace_evaluations_total{{app="{DEMO_APP}"}})',
        until=lambda series: len(series) >= 4,
    )
    assert {s["metric"]["evaluator"] for s in evaluators} >= {
        "looping.unique_sentences",
        "tokens_presence.answer",
    }


def test_exemplar_panels_find_trace_ids_of_demo_requests(stack: Stack) -> None:
    # the panels that show exemplars: percentiles and the heatmap of ragtrace_evaluation_score
    exemplar_queries = [q for q in QUERIES if q.exemplar]
    assert len(exemplar_queries) >= 2
    for query in exemplar_queries:
        demo_only = query.promql.replace('app=~".*"', f'app="{DEMO_APP}"')

        def found(promql: str = demo_only) -> list[dict[str, Any]]:
            return [
                exemplar
                for series in stack.prometheus.query_exemplars(promql)
                for exemplar in series["exemplars"]
            ]

        exemplars = wait_until(f"exemplars of {query.where}", found, timeout_s=30)
        trace_ids = {e["labels"]["trace_id"] for e in exemplars}
        assert all(TRACE_ID.match(t) for t in trace_ids), trace_ids


def test_every_alert_goes_pending_when_the_traffic_turns_bad(stack: Stack) -> None:
    prometheus = stack.prometheus
    expected = {rule["alert"] for rule in alert_rules()} - NEEDS_HISTORY

    def alerting_rules() -> dict[str, dict[str, Any]]:
        return {
            rule["name"]: rule
            for group in prometheus.api("rules")["groups"]
            for rule in group["rules"]
            if rule["type"] == "alerting"
        }

    # healthy synthetic traffic has been evaluated: these alerts stay quiet on it
    prometheus.query('app_evaluator:ragtrace_quality_floor:evidence{app="synthetic-rag"}')
    before = {name: rule["state"] for name, rule in alerting_rules().items()}
    assert {name: before[name] for name in QUIET_WHEN_HEALTHY} == dict.fromkeys(
        QUIET_WHEN_HEALTHY, "inactive"
    )
    # nor does any quality alert of the synthetic app (the demo's young app may trip them)
    synthetic_quality = [
        alert
        for alert in prometheus.api("alerts")["alerts"]
        if alert["labels"].get("app") == "synthetic-rag"
        and alert["labels"].get("component") == "quality"
    ]
    assert synthetic_quality == [], synthetic_quality
    stack.traffic.incident()

    def all_active() -> dict[str, dict[str, Any]] | None:
        found = alerting_rules()
        active = all(found[name]["state"] in ("pending", "firing") for name in expected)
        return found if active and set(found) == expected | NEEDS_HISTORY else None

    try:
        found = wait_until("every ragtrace alert pending or firing", all_active, timeout_s=60)
    except TimeoutError:
        states = {name: rule["state"] for name, rule in alerting_rules().items()}
        pytest.fail(f"not every alert became active: {states}")
    assert {name: rule["health"] for name, rule in found.items()} == dict.fromkeys(
        expected | NEEDS_HISTORY, "ok"
    )
    # the annotations render with real values
    for alert in prometheus.api("alerts")["alerts"]:
        for text in alert["annotations"].values():
            assert "<no value>" not in text and "<error expanding" not in text, alert
