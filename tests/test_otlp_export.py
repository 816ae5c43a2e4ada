"""Spans after the wire: a real OTLP/HTTP exporter sends them to a loopback receiver.

The in-memory exporter of the other tests shows what ragtrace put on a span; these tests show
what a collector gets: value types after protobuf encoding (a score stays a double), parent
links and trace ids, the resource of ragtrace's own provider, and texts that cannot be encoded
as they are (lone surrogates, undecodable bytes) not costing the batch.
"""

from __future__ import annotations

import gzip
import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableConfig, RunnableLambda, RunnablePassthrough
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace import _semconv as sc
from ragtrace._model import RagRecord
from ragtrace.evaluators import evaluator
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.integrations.lc_app import (
    CORPUS,
    PROMPT,
    ListRetriever,
    fake_llm,
    format_docs,
    rag_chain,
)
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan, attributes_with_prefix

pytestmark = pytest.mark.integration

QUESTION = "When was the lighthouse built?"
ANSWER = "The lighthouse was built in 1850."
WAIT_S = 10.0


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No RAGTRACE_* or OTLP exporter settings leak in from the environment running the tests."""
    import os

    for name in list(os.environ):
        if name.startswith(("RAGTRACE_", "OTEL_EXPORTER_OTLP_", "OTEL_PYTHON_EXPORTER_OTLP_")):
            monkeypatch.delenv(name)


@pytest.fixture
def rx() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def api_default_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The global tracer provider is the API's default proxy (as in an app that set none)."""
    monkeypatch.delenv("OTEL_PYTHON_TRACER_PROVIDER", raising=False)
    if hasattr(trace, "_TRACER_PROVIDER"):
        monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)


@contextmanager
def running(**options: Any) -> Iterator[tuple[ragtrace.Ragtrace, list[RagRecord]]]:
    """``ragtrace.init(**options)`` with a fresh registry and a record list; always shut down.

    No evaluators unless a test asks for some, so the capture spans can be counted exactly.
    """
    options.setdefault("evaluators", ())
    rt = ragtrace.init(registry=CollectorRegistry(), **options)
    try:
        records: list[RagRecord] = []
        rt.add_record_sink(records.append)
        yield rt, records
    finally:
        rt.shutdown()


def handler_config() -> RunnableConfig:
    return {"callbacks": [RagtraceCallbackHandler()]}


def by_kind(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    kinds = {str(s.attributes.get(sc.OI_SPAN_KIND)): s for s in spans}
    assert len(kinds) == len(spans), [(s.name, s.attributes.get(sc.OI_SPAN_KIND)) for s in spans]
    return kinds


def only_trace(rx: OtlpReceiver, n_spans: int) -> list[ReceivedSpan]:
    """Wait for ``n_spans`` spans and check they are all there is, in one trace."""
    spans = rx.wait_for_spans(n_spans, WAIT_S)
    assert len(spans) == n_spans, [s.name for s in spans]
    assert len({s.trace_id for s in spans}) == 1, [(s.name, s.trace_id) for s in spans]
    assert rx.decode_errors == 0 and rx.rejected == 0, rx.errors
    return spans


def test_rag_chain_through_an_sdk_provider_arrives_complete(rx: OtlpReceiver) -> None:
    tp = TracerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")))
    try:
        with running(app="otlp-app", tracer_provider=tp) as (rt, records):
            assert rag_chain().invoke(QUESTION, config=handler_config()) == ANSWER
            assert rt.flush()
            spans = only_trace(rx, 3)
    finally:
        tp.shutdown()

    assert len(records) == 1
    record = records[0]
    assert record.trace_id == spans[0].trace_id
    kinds = by_kind(spans)
    assert set(kinds) == {"CHAIN", "RETRIEVER", "LLM"}
    root, retriever, llm = kinds["CHAIN"], kinds["RETRIEVER"], kinds["LLM"]

    # parentage and identity on the wire
    assert root.parent_span_id is None
    assert root.span_id == record.span_id
    assert retriever.parent_span_id == root.span_id
    assert llm.parent_span_id == root.span_id
    for span in spans:
        assert span.kind == SpanKind.INTERNAL.name
        assert span.status_code == StatusCode.OK.name
        assert span.scope_name == "ragtrace"
        assert span.resource["service.name"] == "otlp-app"
        assert span.start_time_unix_nano <= span.end_time_unix_nano

    # the root: the request's question and answer
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    assert root.attributes[sc.RAGTRACE_APP] == "otlp-app"
    assert root.attributes[sc.RAGTRACE_STATUS] == "ok"

    # the retriever: chunk ids, scores (doubles on the wire) and text
    attrs = retriever.attributes
    assert attrs[sc.OI_SPAN_KIND] == "RETRIEVER"
    assert attrs[sc.INPUT_VALUE] == QUESTION
    assert attrs["retrieval.documents.0.document.id"] == "doc-0"
    score = attrs["retrieval.documents.0.document.score"]
    assert type(score) is float and score == 0.9
    assert attrs["retrieval.documents.0.document.content"] == CORPUS[0].page_content
    for i, doc in enumerate(CORPUS[:4]):
        assert attrs[sc.document_attr(i, sc.DOC_ID)] == doc.id
        assert attrs[sc.document_attr(i, sc.DOC_SCORE)] == doc.metadata["score"]
        assert attrs[sc.document_attr(i, sc.DOC_CONTENT)] == doc.page_content
        assert json.loads(attrs[sc.document_attr(i, sc.DOC_METADATA)]) == doc.metadata
    assert sc.document_attr(4, sc.DOC_ID) not in attrs
    refs = json.loads(attrs[sc.GEN_AI_RETRIEVAL_DOCUMENTS])
    assert refs == [{"id": d.id, "score": d.metadata["score"]} for d in CORPUS[:4]]
    total = attrs[sc.RAGTRACE_CHUNKS_TOTAL]
    assert type(total) is int and total == 4

    # the LLM: the prompt as sent, with its context (so a playground replays it as it was)
    messages = attributes_with_prefix(llm.attributes, sc.LLM_INPUT_MESSAGES + ".")
    system = PROMPT.format_messages(context=format_docs(CORPUS[:4]), question=QUESTION)[0].content
    assert messages == {
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": system,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUESTION,
    }
    assert llm.attributes[sc.INPUT_VALUE] == f"system: {system}\n\nuser: {QUESTION}"
    assert sc.RAGTRACE_PROMPT_CHUNK_REFS not in llm.attributes
    assert llm.attributes["llm.output_messages.0.message.content"] == ANSWER
    assert llm.attributes[sc.OUTPUT_VALUE] == ANSWER


@evaluator(name="answer_length", requires={"response"}, threshold=0.9)
def answer_length(record: RagRecord) -> float:
    return min(1.0, len(record.response or "") / 100)


def test_evaluation_results_arrive_as_log_events_and_the_trace_ends_with_the_request(
    rx: OtlpReceiver,
) -> None:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    tp = TracerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")))
    lp = LoggerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    lp.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=rx.endpoint + "/v1/logs"))
    )
    try:
        with running(
            app="otlp-app", tracer_provider=tp, logger_provider=lp, evaluators=[answer_length]
        ) as (rt, _):
            assert rag_chain().invoke(QUESTION, config=handler_config()) == ANSWER
            assert rt.flush()
            (log,) = rx.wait_for_logs(1, WAIT_S)
            spans = only_trace(rx, 3)  # the request's three spans, and no evaluation span
    finally:
        tp.shutdown()
        lp.shutdown()
    root = by_kind(spans)["CHAIN"]
    assert (log.trace_id, log.span_id) == (root.trace_id, root.span_id)
    assert log.event_name == "gen_ai.evaluation.result"
    assert (log.severity_text, log.severity_number) == ("WARN", 13)
    assert log.resource["service.name"] == "otlp-app"
    assert log.time_unix_nano >= root.end_time_unix_nano
    assert log.attributes == {
        sc.GEN_AI_EVALUATION_NAME: "answer_length",
        sc.GEN_AI_EVALUATION_SCORE_VALUE: len(ANSWER) / 100,
        sc.GEN_AI_EVALUATION_SCORE_LABEL: "fail",
        sc.RAGTRACE_EVALUATOR: "answer_length",
        sc.RAGTRACE_EVALUATION_KIND: "lexical",
        sc.RAGTRACE_EVALUATION_DIRECTION: "higher_is_better",
        sc.RAGTRACE_EVALUATION_THRESHOLD: 0.9,
        sc.RAGTRACE_EVALUATION_PASSED: False,
        sc.RAGTRACE_APP: "otlp-app",
    }


def test_evaluation_spans_arrive_in_a_trace_of_their_own_linked_to_the_request(
    rx: OtlpReceiver,
) -> None:
    tp = TracerProvider(resource=Resource.create({"service.name": "otlp-app"}))
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")))
    try:
        with running(
            app="otlp-app",
            tracer_provider=tp,
            evaluators=[answer_length],
            evaluation_results="spans",
        ) as (rt, _):
            assert rag_chain().invoke(QUESTION, config=handler_config()) == ANSWER
            assert rt.flush()
            spans = rx.wait_for_spans(4, WAIT_S)
    finally:
        tp.shutdown()
    (evaluation,) = [s for s in spans if s.attributes.get(sc.OI_SPAN_KIND) == "EVALUATOR"]
    request = [s for s in spans if s is not evaluation]
    assert len({s.trace_id for s in request}) == 1
    root = by_kind(request)["CHAIN"]
    assert evaluation.trace_id != root.trace_id and evaluation.parent_span_id is None
    assert evaluation.links == [
        (root.trace_id, root.span_id, {"ragtrace.link": "evaluated request"})
    ]
    assert evaluation.name == "evaluate answer_length"
    assert evaluation.status_code == StatusCode.ERROR.name
    assert "answer_length failed" in evaluation.status_message
    assert evaluation.attributes[sc.RAGTRACE_EVALUATION_TRACE_ID] == root.trace_id
    assert evaluation.attributes[sc.RAGTRACE_EVALUATION_SPAN_ID] == root.span_id
    assert evaluation.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == len(ANSWER) / 100
    assert json.loads(evaluation.attributes[sc.INPUT_VALUE])["query"] == QUESTION


@pytest.mark.usefixtures("api_default_provider")
def test_own_provider_exports_to_otlp_endpoint(rx: OtlpReceiver) -> None:
    with running(app="otlp-env", otlp_endpoint=rx.endpoint) as (rt, records):
        assert isinstance(rt.tracer_provider, TracerProvider)
        assert rt.tracer_provider is not trace.get_tracer_provider()
        assert rag_chain().invoke(QUESTION, config=handler_config()) == ANSWER
        assert rt.flush()
        spans = only_trace(rx, 3)
    assert {s.resource.get("service.name") for s in spans} == {"otlp-env"}
    assert spans[0].trace_id == records[0].trace_id
    assert by_kind(spans)["CHAIN"].attributes[sc.OUTPUT_VALUE] == ANSWER


@pytest.mark.usefixtures("api_default_provider")
@pytest.mark.parametrize("suffix", ["", "/", "/v1/traces"])
def test_own_provider_takes_the_endpoint_from_the_environment(
    rx: OtlpReceiver, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setenv("RAGTRACE_OTLP_ENDPOINT", rx.endpoint + suffix)
    with running(app="otlp-env") as (rt, records):
        assert rt.config.otlp_endpoint == rx.endpoint + suffix
        assert rag_chain().invoke(QUESTION, config=handler_config()) == ANSWER
        assert rt.flush()
        spans = only_trace(rx, 3)
    assert {s.resource.get("service.name") for s in spans} == {"otlp-env"}
    assert spans[0].trace_id == records[0].trace_id


def test_lone_surrogate_and_bytes_chunk_survive_the_wire(rx: OtlpReceiver) -> None:
    query = "bad \ud800 text"
    expected_query = "bad \ufffd text"
    raw = b"caf\xc3\xa9 menu, price list \xff\xfe and a cut-off tail \xe2\x82"
    expected_chunk = raw.decode("utf-8", errors="replace")
    docs = [
        CORPUS[0],
        Document.model_construct(id="bytes-1", page_content=raw, metadata={"score": 0.5}),
    ]

    def format_any(found: list[Document]) -> str:
        return "\n\n".join(
            d.page_content.decode("utf-8", "replace")
            if isinstance(d.page_content, bytes)
            else d.page_content
            for d in found
        )

    chain = (
        {
            "context": ListRetriever(docs=docs, k=2) | RunnableLambda(format_any),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | fake_llm()
        | StrOutputParser()
    )
    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=rx.endpoint + "/v1/traces")))
    try:
        with running(app="otlp-app", tracer_provider=tp) as (rt, records):
            assert chain.invoke(query, config=handler_config()) == ANSWER
            assert rt.flush()
            spans = only_trace(rx, 3)
    finally:
        tp.shutdown()

    record = records[0]
    assert record.trace_id == spans[0].trace_id
    kinds = by_kind(spans)
    root, retriever, llm = kinds["CHAIN"], kinds["RETRIEVER"], kinds["LLM"]
    assert retriever.attributes[sc.document_attr(1, sc.DOC_ID)] == "bytes-1"
    assert retriever.attributes[sc.document_attr(1, sc.DOC_CONTENT)] == expected_chunk
    assert retriever.attributes[sc.document_attr(0, sc.DOC_CONTENT)] == CORPUS[0].page_content
    assert record.chunks[1].text == expected_chunk
    # the surrogate becomes U+FFFD everywhere the query is shown
    assert root.attributes[sc.INPUT_VALUE] == expected_query
    assert retriever.attributes[sc.INPUT_VALUE] == expected_query
    assert retriever.attributes[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] == expected_query
    assert llm.attributes["llm.input_messages.1.message.content"] == expected_query
    assert record.query == expected_query


# -- the receiver itself ----------------------------------------------------------------------


def test_receiver_decodes_every_value_type_gzipped(rx: OtlpReceiver) -> None:
    exporter = OTLPSpanExporter(endpoint=rx.traces_url, compression=Compression.Gzip)
    tp = TracerProvider(resource=Resource.create({"service.name": "probe", "probe.n": 3}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        tracer = tp.get_tracer("probe-scope", "1.2")
        with tracer.start_as_current_span("outer", kind=SpanKind.SERVER) as outer:
            outer.set_attributes(
                {
                    "s": "text é",
                    "i": -7,
                    "f": 0.25,
                    "b": True,
                    "strs": ["a", "b"],
                    "ints": [1, 2],
                    "floats": [0.5, 1.5],
                    "bools": [False, True],
                }
            )
            outer.add_event("evt", {"k": "v", "n": 1})
            with tracer.start_as_current_span("inner", kind=SpanKind.CLIENT) as inner:
                inner.set_status(Status(StatusCode.ERROR, "boom"))
        spans = rx.wait_for_spans(2, WAIT_S)
    finally:
        tp.shutdown()
    assert rx.encodings and set(rx.encodings) == {"gzip"}
    named = {s.name: s for s in spans}
    outer_s, inner_s = named["outer"], named["inner"]
    assert outer_s.attributes == {
        "s": "text é",
        "i": -7,
        "f": 0.25,
        "b": True,
        "strs": ["a", "b"],
        "ints": [1, 2],
        "floats": [0.5, 1.5],
        "bools": [False, True],
    }
    assert [type(outer_s.attributes[k]) for k in ("i", "f", "b")] == [int, float, bool]
    assert [(e.name, e.attributes) for e in outer_s.events] == [("evt", {"k": "v", "n": 1})]
    assert outer_s.kind == "SERVER" and inner_s.kind == "CLIENT"
    assert (inner_s.status_code, inner_s.status_message) == ("ERROR", "boom")
    assert outer_s.parent_span_id is None
    assert inner_s.parent_span_id == outer_s.span_id
    assert inner_s.trace_id == outer_s.trace_id and len(inner_s.trace_id) == 32
    assert len(inner_s.span_id) == 16
    assert outer_s.resource["service.name"] == "probe" and outer_s.resource["probe.n"] == 3
    assert (outer_s.scope_name, outer_s.scope_version) == ("probe-scope", "1.2")


def _post(rx: OtlpReceiver, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", rx.port, timeout=WAIT_S)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_receiver_answers_404_400_and_an_empty_response(rx: OtlpReceiver) -> None:
    proto = {"Content-Type": "application/x-protobuf"}
    empty = ExportTraceServiceRequest().SerializeToString()
    assert _post(rx, "/v1/metrics", empty, proto)[0] == 404
    assert _post(rx, "/v1/traces", b"not protobuf at all", proto)[0] == 400
    gz = {**proto, "Content-Encoding": "gzip"}
    assert _post(rx, "/v1/traces", b"not gzip", gz)[0] == 400
    assert _post(rx, "/v1/traces", empty, {"Content-Type": "application/json"})[0] == 415
    assert rx.decode_errors == 2 and len(rx.errors) == 2
    assert rx.rejected == 1

    status, body = _post(rx, "/v1/traces", gzip.compress(empty), gz)
    assert status == 200
    response = ExportTraceServiceResponse()
    response.ParseFromString(body)
    assert response == ExportTraceServiceResponse()
    assert rx.spans == [] and rx.exports == 1
    with pytest.raises(AssertionError, match="expected 1 span"):
        rx.wait_for_spans(1, timeout_s=0.05)
