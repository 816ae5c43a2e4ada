"""The core works with no optional extras: capture, sampling, Prometheus and OpenTelemetry export.

CI's core lane (``.ci/core-lane``, ``make core-test``) runs this module, with the capture,
sampling and exporter tests it names, in a virtual environment holding only
``ragtrace[langchain,llama-index]``: no torch, spaCy, Presidio, llama.cpp, litellm, Redis or
OTLP exporter. Everything here runs in the full lane too. One LangChain and one LlamaIndex
request go through ``ragtrace.init`` as an application runs it: spans through the SDK's batch
processor to an exporter, evaluation results as log events, a sampling rule and ratio deciding
which requests are evaluated, and the metrics scraped over HTTP from the metrics endpoint.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, InMemoryLogRecordExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._pipeline.sampling import Sampler
from ragtrace._pipeline.sampling.rules import Rule
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from ragtrace.integrations.llama_index import instrument, uninstrument
from tests.integrations.lc_app import rag_chain
from tests.integrations.li_app import query_engine

QUESTION = "When was the lighthouse built?"


class Exported:
    """An application's OpenTelemetry SDK set-up: batch processors in front of exporters."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(BatchSpanProcessor(self.spans))
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(self.logs))

    def flush(self) -> None:
        assert self.tracer_provider.force_flush(5_000)
        assert self.logger_provider.force_flush(5_000)

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


@pytest.fixture
def exported() -> Iterator[Exported]:
    sdk = Exported()
    yield sdk
    sdk.shutdown()


def start(app: str, sdk: Exported, registry: CollectorRegistry) -> ragtrace.Ragtrace:
    """``ragtrace.init`` as an application calls it: ``looping`` (no model) on the requests of
    route ``checkout`` only (ratio 0, one rule), metrics served on a free port."""
    return ragtrace.init(
        app=app,
        tracer_provider=sdk.tracer_provider,
        logger_provider=sdk.logger_provider,
        registry=registry,
        metrics_port=0,
        evaluators=["looping"],
        sampler=Sampler(0.0, rules=[Rule("always", route="checkout", name="checkout")]),
    )


def scrape(rt: ragtrace.Ragtrace) -> str:
    server = rt.metrics_server
    assert server is not None
    with urllib.request.urlopen(server.url, timeout=5) as response:
        assert response.status == 200
        return str(response.read().decode())


def test_a_langchain_request_is_captured_sampled_counted_and_exported(
    exported: Exported,
) -> None:
    registry = CollectorRegistry()
    rt = start("core-lc", exported, registry)
    try:
        handler = RagtraceCallbackHandler(rt)
        chain = rag_chain()
        for route in ("checkout", "search"):
            config = {"callbacks": [handler], "metadata": {"route": route}}
            chain.invoke(QUESTION, config=config)
        assert rt.flush(5)
        body = scrape(rt)
    finally:
        rt.shutdown()
    exported.flush()

    # capture: both requests as spans, through the SDK's batch processor to its exporter
    roots = [s for s in exported.spans.get_finished_spans() if s.parent is None]
    assert [s.name for s in roots] == ["RunnableSequence", "RunnableSequence"]
    assert all((s.attributes or {}).get("input.value") == QUESTION for s in roots)
    # sampling: the rule took the checkout request, the ratio (0) dropped the other
    assert 'ragtrace_requests_total{app="core-lc",status="ok"} 2.0' in body
    assert (
        'ragtrace_sampling_decisions_total{decision="sampled",reason="rule:checkout"} 1.0' in body
    )
    assert 'ragtrace_sampling_decisions_total{decision="dropped",reason="ratio_out"} 1.0' in body
    # Prometheus: the sampled request's scores, served over HTTP
    assert 'ragtrace_evaluations_total{app="core-lc",evaluator="looping.unique_sentences"' in body
    # OpenTelemetry: the scores as log events on the sampled request's trace
    results = [r.log_record for r in exported.logs.get_finished_logs()]
    assert {r.event_name for r in results} == {"gen_ai.evaluation.result"}
    names = {str((r.attributes or {})[sc.GEN_AI_EVALUATION_NAME]) for r in results}
    assert "looping.unique_sentences" in names
    assert {r.trace_id for r in results} == {roots[0].context.trace_id}


def test_a_llama_index_query_is_captured_counted_and_exported(exported: Exported) -> None:
    registry = CollectorRegistry()
    rt = start("core-li", exported, registry)
    instrument(rt)
    try:
        response = query_engine().query(QUESTION)
        assert str(response.response).strip()
        assert rt.flush(5)
        body = scrape(rt)
    finally:
        uninstrument()
        rt.shutdown()
    exported.flush()

    spans = exported.spans.get_finished_spans()
    kinds = sorted(str((s.attributes or {})["openinference.span.kind"]) for s in spans)
    assert kinds == ["CHAIN", "LLM", "RETRIEVER"]
    assert 'ragtrace_requests_total{app="core-li",status="ok"} 1.0' in body
    # no route: the ratio (0) dropped it, and nothing was evaluated
    assert 'ragtrace_sampling_decisions_total{decision="dropped",reason="ratio_out"} 1.0' in body
    assert "ragtrace_evaluations_total{" not in body
    assert exported.logs.get_finished_logs() == ()
