"""The ``/metrics`` server: content negotiation, lifecycle, promtool, and a real Prometheus.

The integration test starts Prometheus (Debian package ``prometheus``) on loopback, lets it
scrape a ragtrace metrics server fed through ``PrometheusSink`` and checks PromQL answers.
"""

from __future__ import annotations

import gzip
import math
import re
import threading
import urllib.error
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from ragtrace._exporters.base import outcome_of
from ragtrace._exporters.prometheus import PrometheusSink
from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.endpoint import MetricsServer, start_metrics_server
from ragtrace._model import Evaluation, RagRecord, Score
from tests.components import Series, http_get, promtool, run_prometheus

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def trace_id(n: int) -> str:
    return f"{n + 1:032x}"


def export(sink: PrometheusSink, n: int, *scores: Score, app: str = "shop") -> None:
    record = RagRecord(trace_id=trace_id(n), span_id=f"{n + 1:016x}", query="q", app=app)
    start = 1_700_000_000_000_000_000
    evaluator = scores[0].name if scores else "empty"
    sink.export(record, [Evaluation(evaluator, scores, start, start + 3_000_000)])


@pytest.fixture
def metrics(registry: CollectorRegistry) -> Metrics:
    return Metrics(registry, app="shop")


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[MetricsServer]:
    with start_metrics_server(port=0, registry=registry) as running:
        yield running


def scrape(url: str, accept: str | None = None) -> tuple[str, str]:
    headers = {"Accept": accept} if accept else {}
    with http_get(url, headers) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_classic_text_without_exemplars_unless_openmetrics_is_asked_for(
    metrics: Metrics, server: MetricsServer
) -> None:
    export(PrometheusSink(metrics), 0, Score("groundedness", 0.72))
    assert server.url == f"http://127.0.0.1:{server.port}/metrics" and server.port > 0

    content_type, text = scrape(server.url)
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert (
        'ragtrace_evaluation_score_bucket{app="shop",evaluator="groundedness",le="0.75"} 1.0'
        in (text)
    )
    assert "trace_id" not in text and "# EOF" not in text

    content_type, text = scrape(server.url, OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert f'le="0.75"}} 1.0 # {{trace_id="{trace_id(0)}"}} 0.72' in text
    assert text.endswith("# EOF\n")

    # What Prometheus 2.x sends: OpenMetrics first, classic text as a fallback.
    prometheus_accept = (
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
        "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    content_type, text = scrape(server.url, prometheus_accept)
    assert content_type.startswith("application/openmetrics-text") and "trace_id" in text


def test_the_exposition_is_gzipped_when_the_scraper_accepts_it(
    metrics: Metrics, server: MetricsServer
) -> None:
    export(PrometheusSink(metrics), 0, Score("groundedness", 0.72))
    with http_get(server.url, {"Accept-Encoding": "gzip", "Accept": OPENMETRICS}) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        text = gzip.decompress(response.read()).decode()
    assert f'# {{trace_id="{trace_id(0)}"}} 0.72' in text and text.endswith("# EOF\n")
    with http_get(server.url) as response:
        assert response.headers["Content-Encoding"] is None


def test_only_the_metrics_path_is_served(server: MetricsServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        scrape(server.url.replace("/metrics", "/other"))
    assert info.value.code == 404


def test_server_lifecycle_daemon_thread_port_zero_and_close(registry: CollectorRegistry) -> None:
    server = start_metrics_server(port=0, registry=registry)
    threads = [t for t in threading.enumerate() if t.name == f"ragtrace-metrics-{server.port}"]
    assert len(threads) == 1 and threads[0].daemon
    scrape(server.url)
    server.close()
    server.close()  # idempotent
    assert server.closed and not threads[0].is_alive()
    with pytest.raises(urllib.error.URLError):
        scrape(server.url)
    # The socket is really closed: the same port can be bound again at once.
    with start_metrics_server(port=server.port, registry=registry) as again:
        assert again.port == server.port
        scrape(again.url)


def test_binding_errors_name_the_address(server: MetricsServer) -> None:
    with pytest.raises(
        OSError, match=re.escape(f"cannot serve metrics on 127.0.0.1:{server.port}")
    ):
        start_metrics_server(port=server.port, registry=CollectorRegistry())
    with pytest.raises(OSError, match=re.escape("cannot serve metrics on 192.0.2.1:0")):
        start_metrics_server(
            port=0, addr="192.0.2.1", registry=CollectorRegistry(), token="t0ken-of-the-test"
        )


@pytest.mark.integration
def test_promtool_accepts_the_classic_exposition(metrics: Metrics, server: MetricsServer) -> None:
    sink = PrometheusSink(metrics)
    export(sink, 0, Score("groundedness", 0.9, threshold=0.5, passed=True))
    export(sink, 1, Score("judge", None, error="TimeoutError"))
    metrics.count_evaluation("pii", "skipped", "shop")
    metrics.count_sampling("sampled", "ratio")
    metrics.count_judge_usage("judge", "llama-3.2-1b", 100, 10, cost_usd=0.001)
    metrics.watch_queue_depth(lambda: 3)
    _, text = scrape(server.url)
    done = promtool("check", "metrics", stdin=text)
    assert done.returncode == 0, f"promtool check metrics:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.strip() == "" and done.stderr.strip() == ""  # no lint findings


@pytest.mark.integration
def test_real_prometheus_scrapes_scores_and_answers_promql(
    metrics: Metrics, server: MetricsServer
) -> None:
    sink = PrometheusSink(metrics)
    expected: dict[str, int] = {"pass": 0, "fail": 0, "error": 0, "skipped": 0}

    def push(n: int, score: Score) -> None:
        export(sink, n, score)
        expected[outcome_of(score)] += 1

    def graded(name: str, value: float) -> Score:
        return Score(name, value, threshold=0.5, passed=value >= 0.5)

    # One score per evaluator first, so the series exist before Prometheus' first scrape:
    # rate() needs a sample before the main batch to see an increase.
    push(0, graded("groundedness", 0.75))
    push(1, graded("relevance", 0.25))
    with run_prometheus([f"127.0.0.1:{server.port}"], features=["exemplar-storage"]) as prom:
        prom.query("sum(ragtrace_evaluation_score_count) == 2", timeout_s=30)

        # The main batch: groundedness spread over 0.6..0.9 (median 0.75), relevance over
        # 0.1..0.4 (median 0.25); some judge errors and skipped records on top.
        for i in range(200):
            push(100 + i, graded("groundedness", 0.6 + 0.3 * (i + 0.5) / 200))
            push(300 + i, graded("relevance", 0.1 + 0.3 * (i + 0.5) / 200))
        for i in range(7):
            push(500 + i, Score("judge", None, error="TimeoutError: judge took 10s"))
        for _ in range(5):
            metrics.count_evaluation("relevance", "skipped", "shop")
            expected["skipped"] += 1

        def by(label: str, series: Series) -> dict[str, float]:
            return {s["metric"][label]: float(s["value"][1]) for s in series}

        medians = by(
            "evaluator",
            prom.query(
                "histogram_quantile(0.5, sum by (le, evaluator) "
                "(rate(ragtrace_evaluation_score_bucket[1m])))",
                until=lambda r: (
                    len(r) == 2 and all(math.isfinite(v) for v in by("evaluator", r).values())
                ),
                timeout_s=30,
            ),
        )
        assert set(medians) == {"groundedness", "relevance"}
        assert 0.70 <= medians["groundedness"] <= 0.80, medians
        assert 0.20 <= medians["relevance"] <= 0.30, medians

        outcomes = prom.query(
            "sum by (outcome) (ragtrace_evaluations_total)",
            until=lambda r: by("outcome", r) == expected,
            timeout_s=15,
        )
        assert by("outcome", outcomes) == expected == {
            "pass": 201, "fail": 201, "error": 7, "skipped": 5
        }  # fmt: skip

        # The scrape negotiated OpenMetrics, so the trace ids arrived as exemplars.
        found = prom.query_exemplars('ragtrace_evaluation_score_bucket{evaluator="groundedness"}')
        trace_ids = {e["labels"]["trace_id"] for s in found for e in s["exemplars"]}
        assert trace_ids and trace_ids <= {trace_id(n) for n in range(0, 300)}
