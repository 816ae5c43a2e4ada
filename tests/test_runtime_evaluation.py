"""``ragtrace.init`` wires capture, evaluators, sinks and the metrics endpoint together."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._model import RagRecord
from ragtrace.evaluators import evaluator
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.integrations.lc_app import rag_chain

QUESTION = "When was the lighthouse built?"


@evaluator(name="answer_words", requires={"response"}, threshold=0.5, inline=True)
def answer_words(record: RagRecord) -> float:
    return min(1.0, len((record.response or "").split()) / 10)


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_inline_evaluator_writes_on_the_rag_span_and_still_reaches_the_sinks() -> None:
    provider, exporter = _provider()
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="inline-app",
        tracer_provider=provider,
        logger_provider=logger_provider,
        registry=registry,
        evaluators=[answer_words],
    )
    labels = {"evaluator": "answer_words", "app": "inline-app", "outcome": "pass"}
    try:
        rag_chain().invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert rt.flush(5)
        assert registry.get_sample_value("ragtrace_evaluations_total", labels) == 1
    finally:
        rt.shutdown()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert len(spans) == 3  # the request's own; its result is a log event, not a late span
    root = spans["RunnableSequence"]
    # "The lighthouse was built in 1850." has 6 words: 0.6, passing 0.5
    assert root.attributes is not None
    assert root.attributes[sc.inline_score_attr("answer_words")] == 0.6
    assert root.attributes[sc.inline_passed_attr("answer_words")] is True
    (log,) = logs.get_finished_logs()
    record = log.log_record
    assert (record.trace_id, record.span_id) == (root.context.trace_id, root.context.span_id)
    assert record.event_name == "gen_ai.evaluation.result"
    assert record.attributes is not None
    assert record.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.6
    assert record.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass"


def test_metrics_port_serves_the_instance_registry_until_shutdown() -> None:
    provider, _ = _provider()
    rt = ragtrace.init(
        app="served",
        tracer_provider=provider,
        registry=CollectorRegistry(),
        metrics_port=0,
        evaluators=["looping"],
    )
    server = rt.metrics_server
    assert server is not None
    try:
        rag_chain().invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert rt.flush(5)
        with urllib.request.urlopen(server.url, timeout=5) as response:
            body = response.read().decode()
        assert 'ragtrace_requests_total{app="served",status="ok"} 1.0' in body
        assert (
            'ragtrace_evaluations_total{app="served",evaluator="looping.unique_sentences"' in body
        )
    finally:
        rt.shutdown()
    assert server.closed


def test_settings_file_chooses_evaluators_and_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAGTRACE_EVALUATORS", raising=False)  # it would beat the file's
    settings = tmp_path / "ragtrace.yaml"
    settings.write_text(
        "evaluators:\n"
        "  - name: tokens_presence\n"
        "    constraints: ['1850']\n"
        "    targets: [answer]\n"
        "sampling:\n"
        "  rate: 0.0\n"
        "  rules: [{action: always, route: checkout, name: checkout}]\n"
    )
    provider, _ = _provider()
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="filed", tracer_provider=provider, registry=registry, config_file=str(settings)
    )
    try:
        assert [e.name for e in rt.pipeline.evaluators] == ["tokens_presence"]
        chain = rag_chain()
        handler = RagtraceCallbackHandler(rt)
        chain.invoke(QUESTION, config={"callbacks": [handler], "metadata": {"route": "checkout"}})
        chain.invoke(QUESTION, config={"callbacks": [handler], "metadata": {"route": "search"}})
        assert rt.flush(5)
        value = registry.get_sample_value
        sampled = {"decision": "sampled", "reason": "rule:checkout"}
        dropped = {"decision": "dropped", "reason": "ratio_out"}
        assert value("ragtrace_sampling_decisions_total", sampled) == 1
        assert value("ragtrace_sampling_decisions_total", dropped) == 1
        passed = {"evaluator": "tokens_presence.answer", "app": "filed", "outcome": "pass"}
        assert value("ragtrace_evaluations_total", passed) == 1
    finally:
        rt.shutdown()
