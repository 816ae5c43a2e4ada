"""Span attribute limits: whatever the provider's limit, a retriever span keeps its kind, its
query and its top-ranked chunks; what does not fit is marked on the span, counted in the record
and in Prometheus, and the host app's log gets at most one warning a minute.

ragtrace runs on the application's own SDK provider with the SDK's default limits (128
attributes a span) in most tests here, as an app that set up OpenTelemetry itself would.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._capture.attributes import _CAPPED_WARNING
from ragtrace._runtime.tracing import own_span_limits
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.integrations.lc_app import ListRetriever, fake_llm, rag_chain

QUESTION = "Which island has the oldest lighthouse?"
SDK_DEFAULT = 128


def docs(n: int) -> list[Document]:
    return [
        Document(
            page_content=f"Fact {i}: lighthouse {i} was built in {1800 + i}.",
            id=f"doc-{i}",
            metadata={"score": round(1 - i / 1000, 3), "source": f"island-{i}.md"},
        )
        for i in range(n)
    ]


class Run:
    def __init__(self, rt: ragtrace.Ragtrace, exporter: InMemorySpanExporter) -> None:
        self.rt = rt
        self.exporter = exporter

    def retriever(self) -> ReadableSpan:
        (span,) = [
            s
            for s in self.exporter.get_finished_spans()
            if (s.attributes or {}).get(sc.OI_SPAN_KIND) == "RETRIEVER"
        ]
        return span

    def metric(self, kind: str) -> float:
        labels = {"kind": kind}
        value = self.rt.metrics.registry.get_sample_value(
            "ragtrace_span_attributes_capped_total", labels
        )
        return 0.0 if value is None else value


@pytest.fixture
def run(request: pytest.FixtureRequest) -> Iterator[Any]:
    made: list[ragtrace.Ragtrace] = []

    def start(limits: SpanLimits | None = None, **options: Any) -> Run:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(span_limits=limits or SpanLimits())  # the app's own
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        rt = ragtrace.init(
            app="limits", tracer_provider=provider, registry=CollectorRegistry(), **options
        )
        made.append(rt)
        return Run(rt, exporter)

    yield start
    for rt in made:
        rt.shutdown()


@pytest.fixture(autouse=True)
def fresh_warning() -> None:
    """The warning is rate-limited process-wide: start each test as if none was logged."""
    _CAPPED_WARNING._last = None
    _CAPPED_WARNING.suppressed = 0


def essentials_kept(span: ReadableSpan, kept: int) -> dict[str, Any]:
    attrs = dict(span.attributes or {})
    assert attrs[sc.OI_SPAN_KIND] == "RETRIEVER"
    assert attrs[sc.GEN_AI_OPERATION_NAME] == "retrieval"
    assert attrs[sc.INPUT_VALUE] == QUESTION
    assert attrs[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] == QUESTION
    assert attrs[sc.document_attr(0, sc.DOC_ID)] == "doc-0"  # the top-ranked chunk
    assert attrs[sc.document_attr(0, sc.DOC_CONTENT)].startswith("Fact 0:")
    ranked = json.loads(attrs[sc.GEN_AI_RETRIEVAL_DOCUMENTS])  # the whole ranked list
    assert [r["id"] for r in ranked] == [f"doc-{i}" for i in range(kept)]
    assert span.dropped_attributes == 0  # nothing evicted by the SDK
    assert len(attrs) <= SDK_DEFAULT
    return attrs


def shown(attrs: dict[str, Any]) -> int:
    return sum(1 for k in attrs if k.endswith(".document.id"))


@pytest.mark.parametrize(("n", "max_chunks"), [(40, 50), (50, 50), (200, 50), (200, 200)])
def test_the_essentials_survive_the_sdk_default_limit(
    run: Any, caplog: pytest.LogCaptureFixture, n: int, max_chunks: int
) -> None:
    r = run(max_chunks=max_chunks)
    records: list[ragtrace.RagRecord] = []
    r.rt.add_record_sink(records.append)
    chain = rag_chain(retriever=ListRetriever(docs=docs(n), k=n))
    with caplog.at_level(logging.WARNING):
        chain.invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler(r.rt)]})
    kept = min(n, max_chunks)
    attrs = essentials_kept(r.retriever(), kept)
    on_span = shown(attrs)
    assert 0 < on_span < kept  # 4 attributes a chunk: 128 cannot hold them all
    # the shown chunks are the top-ranked ones, each with all its fields
    for i in range(on_span):
        assert attrs[sc.document_attr(i, sc.DOC_ID)] == f"doc-{i}"
        assert sc.document_attr(i, sc.DOC_METADATA) in attrs
    assert sc.document_attr(on_span, sc.DOC_CONTENT) not in attrs
    assert attrs[sc.RAGTRACE_DOCUMENTS_OMITTED] == kept - on_span
    assert attrs[sc.RAGTRACE_ATTRIBUTES_CAPPED] == 4 * (kept - on_span)
    assert attrs[sc.RAGTRACE_CHUNKS_TOTAL] == n
    assert attrs.get(sc.RAGTRACE_CHUNKS_DROPPED, 0) == n - kept
    (record,) = records
    assert len(record.chunks) == kept  # the record keeps them all
    assert record.attributes[sc.RAGTRACE_ATTRIBUTES_CAPPED] == {"retriever": 4 * (kept - on_span)}
    r.rt.metrics.flush()
    assert r.metric("retriever") == 4 * (kept - on_span)
    # one warning, naming the limit, and no "Attributes dict is full" flood from the SDK
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "span attribute limit (128)" in warnings[0]
    assert f"room for {on_span} of the {kept} retrieved chunks" in warnings[0]


def test_a_few_chunks_are_not_capped(run: Any, caplog: pytest.LogCaptureFixture) -> None:
    r = run()
    with caplog.at_level(logging.WARNING):
        rag_chain(retriever=ListRetriever(docs=docs(20), k=20)).invoke(
            QUESTION, config={"callbacks": [RagtraceCallbackHandler(r.rt)]}
        )
    attrs = essentials_kept(r.retriever(), 20)
    assert shown(attrs) == 20
    assert sc.RAGTRACE_DOCUMENTS_OMITTED not in attrs
    assert caplog.records == []


def test_one_warning_a_minute_however_many_requests(
    run: Any, caplog: pytest.LogCaptureFixture
) -> None:
    r = run()
    chain = rag_chain(retriever=ListRetriever(docs=docs(60), k=60))
    with caplog.at_level(logging.WARNING):
        for _ in range(20):
            chain.invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler(r.rt)]})
    assert len([rec for rec in caplog.records if rec.levelno >= logging.WARNING]) == 1
    assert _CAPPED_WARNING.suppressed == 19
    r.rt.metrics.flush()
    assert r.metric("retriever") > 0


def test_a_raised_limit_holds_every_chunk(run: Any) -> None:
    r = run(SpanLimits(max_span_attributes=1000), max_chunks=200)
    rag_chain(retriever=ListRetriever(docs=docs(200), k=200)).invoke(
        QUESTION, config={"callbacks": [RagtraceCallbackHandler(r.rt)]}
    )
    attrs = dict(r.retriever().attributes or {})
    assert shown(attrs) == 200 and sc.RAGTRACE_DOCUMENTS_OMITTED not in attrs


def test_a_tiny_limit_evicts_chunks_before_the_kind_and_query(run: Any) -> None:
    r = run(SpanLimits(max_span_attributes=12))
    rag_chain(retriever=ListRetriever(docs=docs(10), k=10)).invoke(
        QUESTION, config={"callbacks": [RagtraceCallbackHandler(r.rt)]}
    )
    attrs = dict(r.retriever().attributes or {})
    assert attrs[sc.OI_SPAN_KIND] == "RETRIEVER"
    assert attrs[sc.INPUT_VALUE] == QUESTION
    assert json.loads(attrs[sc.GEN_AI_RETRIEVAL_DOCUMENTS])[0]["id"] == "doc-0"
    assert shown(attrs) == 0


def test_a_long_chat_keeps_the_system_prompt_and_the_latest_messages(run: Any) -> None:
    r = run(SpanLimits(max_span_attributes=40))
    history = [SystemMessage("You answer from the context.")]
    for i in range(20):
        history += [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]
    history.append(HumanMessage("the last question"))
    llm = fake_llm()
    llm.invoke(history, config={"callbacks": [RagtraceCallbackHandler(r.rt)]})
    (span,) = [
        s
        for s in r.exporter.get_finished_spans()
        if (s.attributes or {}).get(sc.OI_SPAN_KIND) == "LLM"
    ]
    attrs = dict(span.attributes or {})
    assert span.dropped_attributes == 0
    contents = [
        attrs[k]
        for k in sorted(
            (k for k in attrs if k.endswith(".message.content") and "input" in k),
            key=lambda k: int(k.split(".")[2]),
        )
    ]
    assert contents[0] == "You answer from the context."
    assert contents[-1] == "the last question"
    assert len(contents) < len(history)
    assert attrs[sc.RAGTRACE_ATTRIBUTES_CAPPED] == 2 * (len(history) - len(contents))
    # input.value keeps the whole prompt
    assert attrs[sc.INPUT_VALUE].count("\n\nuser: question ") == 20


def test_past_max_chunks_messages_the_first_and_the_latest_are_kept(run: Any) -> None:
    r = run(SpanLimits(max_span_attributes=1000), max_chunks=10)
    history = [SystemMessage("system")] + [HumanMessage(f"m{i}") for i in range(30)]
    fake_llm().invoke(history, config={"callbacks": [RagtraceCallbackHandler(r.rt)]})
    (span,) = [
        s
        for s in r.exporter.get_finished_spans()
        if (s.attributes or {}).get(sc.OI_SPAN_KIND) == "LLM"
    ]
    sent = str(span.attributes[sc.INPUT_VALUE]).split("\n\n")
    assert sent == ["system: system"] + [f"user: m{i}" for i in range(21, 30)]  # max_chunks


def test_ragtraces_own_provider_fits_the_chunk_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    config = ragtrace.Config(max_chunks=200)
    assert own_span_limits(config).max_span_attributes == 4 * 200 + 32
    assert own_span_limits(ragtrace.Config(max_chunks=5)).max_span_attributes == SDK_DEFAULT
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "64")  # the operator's word wins
    assert own_span_limits(config).max_span_attributes == 64
