"""Bounded shutdown: ``shutdown()`` and the exit hook keep their budget whatever the OTLP
endpoint, the evaluators or the sinks do, and every span or record not sent is counted.

The endpoints are real sockets on loopback (``tests.faulty_otlp``): a closed port, a listener
that never answers, and HTTP servers answering 500 or 429. Spans come from a real LangChain
chain traced by ragtrace and go out through the real OTLP/HTTP exporter. Budgets are checked
with a generous margin (the machine is shared): the point is seconds, not the ~10 s per
batch that the exporter's retries took before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

import ragtrace
from ragtrace._config import Config
from ragtrace._model import Evaluation, RagRecord
from ragtrace._pipeline import PipelineOptions
from ragtrace.evaluators import evaluator
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.faulty_otlp import FailingEndpoint, HangingEndpoint, closed_port
from tests.integrations.lc_app import fake_llm, rag_chain
from tests.multiprocess_servers import APP, run_server

pytestmark = pytest.mark.integration

BUDGET_S = 1.0
MARGIN_S = 2.5  # thread start-up and a loaded machine; the old behaviour took 7-50 s
SPANS_PER_REQUEST = 3  # chain, retriever, LLM


@pytest.fixture(autouse=True)
def own_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OTLP or ragtrace settings from outside, and no global SDK provider: ragtrace makes
    its own (the one with the OTLP exporter)."""
    for name in list(os.environ):
        if name.startswith(("RAGTRACE_", "OTEL_EXPORTER_OTLP_", "OTEL_PYTHON_EXPORTER_OTLP_")):
            monkeypatch.delenv(name)
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    if hasattr(trace, "_TRACER_PROVIDER"):
        monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)


def ask(rt: ragtrace.Ragtrace, n: int) -> int:
    """Run the chain ``n`` times under ragtrace; the number of spans made."""
    chain = rag_chain(llm=fake_llm(repeat=n))
    for _ in range(n):
        chain.invoke(
            "When was the lighthouse built?", config={"callbacks": [RagtraceCallbackHandler(rt)]}
        )
    return SPANS_PER_REQUEST * n


def by_reason(family: Any) -> dict[str, float]:
    """A ``{reason: count}`` view of a dropped-items counter (read from the family itself:
    shutdown takes the families off the registry)."""
    return {
        s.labels["reason"]: s.value
        for metric in family.collect()
        for s in metric.samples
        if s.name.endswith("_total")
    }


def timed_shutdown(rt: ragtrace.Ragtrace, timeout_s: float | None = None) -> tuple[bool, float]:
    started = time.monotonic()
    sent = rt.shutdown(timeout_s)
    return sent, time.monotonic() - started


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


@pytest.mark.parametrize("fault", ["refused", "hanging", "429"])
def test_shutdown_keeps_its_budget_and_counts_every_span(fault: str, stack: ExitStack) -> None:
    if fault == "refused":
        url, tried = f"http://127.0.0.1:{closed_port()}", lambda: True
    elif fault == "hanging":
        hanging = stack.enter_context(HangingEndpoint())
        url, tried = hanging.endpoint, lambda: hanging.connections >= 1
    else:
        limited = stack.enter_context(FailingEndpoint(429))
        url, tried = limited.endpoint, lambda: limited.requests >= 1
    rt = ragtrace.init(
        registry=CollectorRegistry(), otlp_endpoint=url, shutdown_timeout_s=BUDGET_S, evaluators=()
    )
    made = ask(rt, 4)

    sent, took = timed_shutdown(rt)

    assert took < BUDGET_S + MARGIN_S
    assert sent is False  # the spans could not go
    dropped = by_reason(rt.metrics.requests.dropped_spans)
    assert sum(dropped.values()) == made, dropped
    assert dropped["queue_full"] == 0
    assert tried()  # the exporter really tried the endpoint


def test_spans_an_endpoint_refuses_are_counted_while_running(stack: ExitStack) -> None:
    failing = stack.enter_context(FailingEndpoint(500))
    registry = CollectorRegistry()
    rt = ragtrace.init(registry=registry, otlp_endpoint=failing.endpoint, evaluators=())
    made = ask(rt, 3)

    assert rt.flush(10.0)  # a 500 is not retried: the batch fails at once, and is counted
    assert (
        registry.get_sample_value("ragtrace_dropped_spans_total", {"reason": "export_failed"})
        == made
    )
    assert failing.requests >= 1
    sent, took = timed_shutdown(rt)
    assert sent is True and took < BUDGET_S + MARGIN_S  # nothing left to wait for


def test_an_explicit_timeout_beats_the_configured_budget(stack: ExitStack) -> None:
    hanging = stack.enter_context(HangingEndpoint())
    rt = ragtrace.init(registry=CollectorRegistry(), otlp_endpoint=hanging.endpoint, evaluators=())
    assert rt.shutdown_budget_s == 5.0  # the default
    made = ask(rt, 2)
    sent, took = timed_shutdown(rt, 0.5)
    assert not sent and took < 0.5 + MARGIN_S
    assert by_reason(rt.metrics.requests.dropped_spans)["shutdown"] == made


def test_a_stuck_evaluator_and_a_stuck_sink_do_not_hold_shutdown() -> None:
    release = threading.Event()
    started = threading.Event()

    @evaluator(name="stuck", timeout_s=60)
    def stuck(record: RagRecord) -> float:
        started.set()
        release.wait(30)
        return 1.0

    class StuckStore:
        """A score sink whose store does not answer when it is closed."""

        def export(self, record: RagRecord, evaluations: list[Evaluation]) -> None:
            pass

        def shutdown(self) -> None:
            release.wait(30)

    rt = ragtrace.init(
        registry=CollectorRegistry(),
        evaluators=[stuck],
        score_sinks=[StuckStore()],
        pipeline_options=PipelineOptions(Config(workers=1), max_batch=1),
        shutdown_timeout_s=BUDGET_S,
    )
    try:
        ask(rt, 5)
        assert started.wait(10)
        sent, took = timed_shutdown(rt)
        assert not sent and took < BUDGET_S + MARGIN_S
        # one record is with the stuck evaluator; the four behind it are counted
        assert by_reason(rt.metrics.requests.dropped_records)["shutdown"] == 4
    finally:
        release.set()


EXIT_SCRIPT = textwrap.dedent(
    """
    import atexit, json, sys, time
    def report():  # registered before ragtrace's hook, so it runs after it
        family = rt.metrics.requests.dropped_spans
        dropped = {s.labels["reason"]: s.value for m in family.collect() for s in m.samples
                   if s.name.endswith("_total")}
        print(json.dumps({"exit_took_s": time.monotonic() - leaving, "dropped": dropped}))
    atexit.register(report)
    import ragtrace
    from ragtrace.integrations.langchain import RagtraceCallbackHandler
    from tests.integrations.lc_app import fake_llm, rag_chain
    rt = ragtrace.init(otlp_endpoint=sys.argv[1], shutdown_timeout_s=float(sys.argv[2]),
                       evaluators=())
    chain = rag_chain(llm=fake_llm(repeat=3))
    for _ in range(3):
        chain.invoke("When?", config={"callbacks": [RagtraceCallbackHandler(rt)]})
    leaving = time.monotonic()
    """
)


def test_the_exit_hook_keeps_the_budget_with_a_hanging_endpoint(stack: ExitStack) -> None:
    hanging = stack.enter_context(HangingEndpoint())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGTRACE_", "OTEL_"))}
    root = Path(__file__).resolve().parent.parent
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT, hanging.endpoint, str(BUDGET_S)],
        capture_output=True, text=True, timeout=120, cwd=root, check=False,
        env={**env, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["exit_took_s"] < BUDGET_S + MARGIN_S, (report, time.monotonic() - started)
    assert sum(report["dropped"].values()) == 3 * SPANS_PER_REQUEST
    assert "shutdown stopped waiting after its 1.0 s budget" in done.stderr
    assert hanging.connections >= 1


@pytest.mark.parametrize("kind", ["gunicorn", "uvicorn"])
def test_server_workers_stop_within_the_budget_and_their_drops_add_up(
    kind: str, tmp_path: Path, stack: ExitStack
) -> None:
    hanging = stack.enter_context(HangingEndpoint())
    metrics_dir = tmp_path / "prometheus"
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "RAGTRACE_OTLP_ENDPOINT": hanging.endpoint,
        "RAGTRACE_SHUTDOWN_TIMEOUT_S": "2",
    }
    with run_server(kind, workers=2, env=env) as server:
        server.wait_for_workers(2)
        server.ask(30)
        took = server.stop()
        log = server.log_text()
    assert took < 2 + 6  # SIGTERM to every worker gone, each having shut ragtrace down
    assert "shutdown stopped waiting after its 2.0 s budget" in log, log
    merged = CollectorRegistry()
    MultiProcessCollector(merged, str(metrics_dir))
    samples = [s for m in merged.collect() for s in m.samples]

    def total(name: str, **labels: str) -> float:
        return sum(
            s.value for s in samples if s.name == name and labels.items() <= s.labels.items()
        )

    requests = total("ragtrace_requests_total", app=APP, status="ok")
    assert requests == 30
    # every span and evaluation log record the workers made is counted as not sent: none
    # reached the hanging endpoint (one log record per score; no evaluation spans by default)
    assert total("ragtrace_dropped_spans_total") == SPANS_PER_REQUEST * requests
    scores = total("ragtrace_evaluations_total")
    assert scores > 0 and total("ragtrace_dropped_log_records_total") == scores
    assert hanging.connections >= 1


@pytest.mark.parametrize("fault", ["hanging", "500"])
def test_requests_stay_fast_while_the_endpoint_fails_and_spans_flow_again_after(
    fault: str, stack: ExitStack
) -> None:
    """The request path never waits on the exporter: a request takes under 250 ms (it takes
    about 2 ms here) whatever the endpoint does, and once a failing endpoint answers again the
    next spans are delivered with no new drop."""
    if fault == "hanging":
        endpoint: Any = stack.enter_context(HangingEndpoint())
    else:
        endpoint = stack.enter_context(FailingEndpoint(500))
    registry = CollectorRegistry()
    rt = ragtrace.init(registry=registry, otlp_endpoint=endpoint.endpoint, evaluators=())
    slowest = 0.0
    for _ in range(20):
        started = time.monotonic()
        ask(rt, 1)
        slowest = max(slowest, time.monotonic() - started)
    assert slowest < 0.25, slowest
    if fault == "500":
        assert rt.flush(10.0)
        lost = registry.get_sample_value(
            "ragtrace_dropped_spans_total", {"reason": "export_failed"}
        )
        assert lost == 20 * SPANS_PER_REQUEST
        endpoint.status = 200  # the endpoint is back
        before = endpoint.requests
        ask(rt, 2)
        assert rt.flush(10.0)
        assert endpoint.requests > before
        again = registry.get_sample_value(
            "ragtrace_dropped_spans_total", {"reason": "export_failed"}
        )
        assert again == lost  # nothing more was lost
    _, took = timed_shutdown(rt, BUDGET_S)
    assert took < BUDGET_S + MARGIN_S
