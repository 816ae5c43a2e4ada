"""LlamaIndex capture through LlamaIndex's own APIs: query and chat engines, retrievers,
streaming, async and concurrency, errors, bad input, and the handlers' registration."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from llama_index.core.base.llms.types import CompletionResponse
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.dispatcher import instrument_tags
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import QueryBundle, TextNode
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import ValidationError

import ragtrace
from ragtrace.integrations.llama_index import (
    RagtraceEventHandler,
    RagtraceSpanHandler,
    instrument,
    is_instrumented,
    uninstrument,
)
from ragtrace.integrations.llama_index import (
    _extract as extract,
)
from ragtrace.integrations.llama_index import _tracer as tracer_module
from tests.conftest import Traced
from tests.integrations.li_app import (
    CORPUS,
    MODEL,
    SCORES,
    FakeLLM,
    ListRetriever,
    answer_for,
    condense_plus_context_engine,
    condense_question_engine,
    condensed,
    query_engine,
    vector_query_engine,
)

QUESTION = "When was the lighthouse built?"
ANSWER = answer_for(QUESTION)
RESPONSE_MODEL = MODEL + "-2024"


@pytest.fixture
def li(traced: Traced) -> Iterator[Traced]:
    instrument(traced.rt)
    yield traced
    uninstrument()


def by_kind(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    kinds: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        kinds.setdefault(str((span.attributes or {})["openinference.span.kind"]), []).append(span)
    return kinds


def hexid(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


def check_tree(traced: Traced, trace_id: str, retrievers: int = 1, llms: int = 1) -> ReadableSpan:
    """One root with ``retrievers`` RETRIEVER and ``llms`` LLM children, all in one trace."""
    kinds = by_kind(traced.spans_of(trace_id))
    assert {k: len(v) for k, v in kinds.items()} == {
        k: n for k, n in (("CHAIN", 1), ("RETRIEVER", retrievers), ("LLM", llms)) if n
    }
    (root,) = kinds["CHAIN"]
    assert root.parent is None
    for child in kinds.get("RETRIEVER", []) + kinds.get("LLM", []):
        assert child.parent is not None and child.parent.span_id == root.context.span_id
    # the root shows the request's query, streamed or not, and a finished request is OK
    (record,) = [r for r in traced.records if r.trace_id == trace_id]
    if record.query is not None:
        assert root.attributes["input.value"] == record.query
    if record.status == "ok":
        assert root.status.status_code == StatusCode.OK
    return root


# -- query engines --------------------------------------------------------------------------


def test_query_engine_makes_three_spans_and_one_record(li: Traced) -> None:
    response = query_engine().query(QUESTION)
    assert response.response == ANSWER

    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    assert record.error is None and record.app == "test-app" and record.model == RESPONSE_MODEL
    assert [c.id for c in record.chunks] == ["doc-0", "doc-1", "doc-2", "doc-3"]
    assert [c.score for c in record.chunks] == SCORES[:4]
    assert [c.text for c in record.chunks] == [n.text for n in CORPUS[:4]]
    assert record.chunks[0].metadata == {"source": "island-0.md", "island": 0}
    assert {c.source for c in record.chunks} == {"ListRetriever"}
    assert {(c.retrieval, c.query, c.used) for c in record.chunks} == {(0, None, True)}
    assert record.attributes["gen_ai.usage.input_tokens"] > 0
    assert record.start_ns <= record.end_ns

    root = check_tree(li, record.trace_id)
    assert hexid(root) == record.span_id and root.name == "RetrieverQueryEngine.query"
    (retriever,) = by_kind(li.spans_of(record.trace_id))["RETRIEVER"]
    (llm,) = by_kind(li.spans_of(record.trace_id))["LLM"]

    attrs = dict(retriever.attributes or {})
    for i, node in enumerate(CORPUS[:4]):
        assert attrs.pop(f"retrieval.documents.{i}.document.id") == node.node_id
        assert attrs.pop(f"retrieval.documents.{i}.document.score") == SCORES[i]
        assert attrs.pop(f"retrieval.documents.{i}.document.content") == node.text
        meta = json.loads(str(attrs.pop(f"retrieval.documents.{i}.document.metadata")))
        assert meta == node.metadata
    assert json.loads(str(attrs.pop("gen_ai.retrieval.documents"))) == [
        {"id": n.node_id, "score": s} for n, s in zip(CORPUS[:4], SCORES, strict=False)
    ]
    assert attrs == {
        "openinference.span.kind": "RETRIEVER",
        "gen_ai.operation.name": "retrieval",
        "input.value": QUESTION,
        "gen_ai.retrieval.query.text": QUESTION,
        "ragtrace.retrieval.source": "ListRetriever",
        "ragtrace.retrieval.chunks_total": 4,
        "ragtrace.retrieval.step": 0,
    }
    assert retriever.name == "ListRetriever"

    assert dict(root.attributes or {}) == {
        "openinference.span.kind": "CHAIN",
        "gen_ai.operation.name": "invoke_workflow",
        "ragtrace.app": "test-app",
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
        "ragtrace.request.status": "ok",
        "gen_ai.request.model": RESPONSE_MODEL,
        "ragtrace.context.used": (0, 1, 2, 3),
        "ragtrace.context.unused": (),
    }

    llm_attrs = dict(llm.attributes or {})
    prompt = str(llm_attrs.pop("llm.input_messages.0.message.content"))
    for node in CORPUS[:4]:  # the prompt keeps its context, so it replays as sent
        assert node.text in prompt
    assert f"Query: {QUESTION}" in prompt
    assert llm_attrs.pop("input.value") == prompt  # one message: its text
    n_in = llm_attrs.pop("llm.token_count.prompt")
    assert isinstance(n_in, int) and n_in > 0
    n_out = len(ANSWER.split())
    assert llm_attrs == {
        "openinference.span.kind": "LLM",
        "gen_ai.operation.name": "text_completion",
        "llm.model_name": MODEL,
        "gen_ai.request.model": MODEL,
        "llm.provider": "fake",
        "gen_ai.provider.name": "fake",
        "llm.input_messages.0.message.role": "user",
        "input.mime_type": "text/plain",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
        "gen_ai.response.model": RESPONSE_MODEL,
        "gen_ai.usage.input_tokens": n_in,
        "llm.token_count.completion": n_out,
        "gen_ai.usage.output_tokens": n_out,
        "llm.token_count.total": n_in + n_out,
    }
    assert li.metric("ragtrace_requests_total", {"app": "test-app", "status": "ok"}) == 1
    assert li.rt.diagnostics.counts() == {}
    assert li.rt.capture.open_requests() == 0


def test_vector_index_query_engine(li: Traced) -> None:
    engine = vector_query_engine(top_k=3)  # building the index (embeddings) is no request
    assert li.records == [] and li.spans() == []
    assert str(engine.query(QUESTION)) == ANSWER
    record = li.only_record()
    assert record.response == ANSWER
    assert len(record.chunks) == 3
    assert {c.id for c in record.chunks} <= {n.node_id for n in CORPUS}
    assert all(isinstance(c.score, float) for c in record.chunks)
    root = check_tree(li, record.trace_id)
    (retriever,) = by_kind(li.spans_of(record.trace_id))["RETRIEVER"]
    assert root.name == "RetrieverQueryEngine.query"
    assert retriever.attributes["ragtrace.retrieval.source"] == "VectorIndexRetriever"


def test_nested_retrievers_are_one_step_and_their_llm_is_kept(li: Traced) -> None:
    fusion = QueryFusionRetriever(
        [ListRetriever(k=3), ListRetriever(k=2)],
        llm=FakeLLM(),
        num_queries=2,
        similarity_top_k=3,
        use_async=False,
    )
    assert str(query_engine(retriever=fusion).query(QUESTION)) == ANSWER
    record = li.only_record()
    assert sorted(c.id or "" for c in record.chunks) == ["doc-0", "doc-1", "doc-2"]
    assert {c.source for c in record.chunks} == {"QueryFusionRetriever"}
    check_tree(li, record.trace_id, retrievers=1, llms=2)  # query generation + answer


def test_retriever_called_on_its_own_is_a_request_without_response(li: Traced) -> None:
    nodes = ListRetriever(k=2).retrieve(QUESTION)
    assert len(nodes) == 2
    record = li.only_record()
    assert record.query == QUESTION and record.response is None and record.status == "ok"
    assert [c.id for c in record.chunks] == ["doc-0", "doc-1"]
    kinds = by_kind(li.spans_of(record.trace_id))
    assert sorted(kinds) == ["CHAIN", "RETRIEVER"]
    assert kinds["RETRIEVER"][0].parent.span_id == kinds["CHAIN"][0].context.span_id


def test_llm_called_on_its_own_is_a_request(li: Traced) -> None:
    FakeLLM().complete("Query: hello\n")
    record = li.only_record()
    assert record.response == answer_for("hello") and record.chunks == ()
    assert sorted(by_kind(li.spans_of(record.trace_id))) == ["CHAIN", "LLM"]


# -- chat engines ---------------------------------------------------------------------------


def test_condense_question_chat_engine(li: Traced) -> None:
    engine = condense_question_engine()
    assert engine.chat(QUESTION).response == ANSWER
    follow_up = "And who built it?"
    assert engine.chat(follow_up).response == answer_for(condensed(follow_up))

    first, second = li.records
    assert (first.query, first.response) == (QUESTION, ANSWER)
    assert (second.query, second.response) == (follow_up, answer_for(condensed(follow_up)))
    assert first.trace_id != second.trace_id
    check_tree(li, first.trace_id)
    root = check_tree(li, second.trace_id, llms=2)  # condense + answer
    assert root.name == "CondenseQuestionChatEngine.chat"
    (retriever,) = by_kind(li.spans_of(second.trace_id))["RETRIEVER"]
    assert retriever.attributes["input.value"] == condensed(follow_up)
    assert li.rt.diagnostics.counts() == {}


def test_condense_plus_context_chat_engine(li: Traced) -> None:
    engine = condense_plus_context_engine()
    assert engine.chat(QUESTION).response == ANSWER
    engine.chat("Who painted it?")
    first, second = li.records
    assert (first.query, first.response, len(first.chunks)) == (QUESTION, ANSWER, 4)
    assert second.query == "Who painted it?"
    check_tree(li, first.trace_id)
    check_tree(li, second.trace_id, llms=2)


# -- streaming ------------------------------------------------------------------------------


@pytest.mark.parametrize("consume", ["iterate", "get_response", "str"])
def test_streaming_record_is_built_when_the_stream_is_consumed(li: Traced, consume: str) -> None:
    response = query_engine(streaming=True).query(QUESTION)
    assert li.records == []  # the query span has ended; the answer has not been read yet
    if consume == "iterate":
        tokens = list(response.response_gen)
        assert len(tokens) > 3 and "".join(tokens) == ANSWER
    elif consume == "get_response":
        assert response.get_response().response == ANSWER
    else:
        assert str(response) == ANSWER
    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    assert len(record.chunks) == 4 and record.model == RESPONSE_MODEL
    root = check_tree(li, record.trace_id)
    assert root.attributes["output.value"] == ANSWER
    (llm,) = by_kind(li.spans_of(record.trace_id))["LLM"]
    assert llm.attributes["llm.output_messages.0.message.content"] == ANSWER
    assert li.rt.diagnostics.counts() == {}


def test_abandoned_stream_keeps_what_was_read(li: Traced) -> None:
    response = query_engine(streaming=True).query(QUESTION)
    first = [next(response.response_gen), next(response.response_gen)]
    response.response_gen.close()
    record = li.only_record()
    assert record.status == "abandoned" and record.response == "".join(first)
    kinds = by_kind(li.spans_of(record.trace_id))
    assert kinds["LLM"][0].attributes["ragtrace.request.status"] == "abandoned"
    assert kinds["CHAIN"][0].attributes["ragtrace.request.status"] == "abandoned"
    assert kinds["CHAIN"][0].status.status_code == StatusCode.UNSET  # not OK, not an error
    assert kinds["CHAIN"][0].attributes["input.value"] == QUESTION


def test_stream_never_read_is_closed_as_incomplete(
    provider: Any, registry: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tracer_module, "_SWEEP_INTERVAL_S", 0.0)
    rt = ragtrace.init(
        app="timeouts", tracer_provider=provider, registry=registry, request_timeout_s=0.05
    )
    records: list[Any] = []
    rt.add_record_sink(records.append)
    tracer = instrument(rt)
    try:
        query_engine(streaming=True).query(QUESTION)  # never read
        assert tracer.open_requests() == 1
        threading.Event().wait(0.1)
        query_engine().query("next question")  # Capture evicts stale requests on the next one
        assert [(r.query, r.status) for r in records] == [
            (QUESTION, "incomplete"),
            ("next question", "ok"),
        ]
        query_engine().query("one more")  # ... and the tracer forgets the evicted one
        assert tracer.open_requests() == 0
    finally:
        uninstrument()
        rt.shutdown()


def test_streaming_condense_question_chat(li: Traced) -> None:
    engine = condense_question_engine()
    first = engine.stream_chat(QUESTION)
    assert "".join(first.response_gen) == ANSWER
    second = engine.stream_chat("And who built it?")
    assert "".join(second.response_gen) == answer_for(condensed("And who built it?"))
    first_record, second_record = li.records
    assert (first_record.query, first_record.response) == (QUESTION, ANSWER)
    assert second_record.response == answer_for(condensed("And who built it?"))
    check_tree(li, first_record.trace_id)
    check_tree(li, second_record.trace_id, llms=2)
    assert li.rt.diagnostics.counts() == {}


def test_streaming_condense_plus_context_chat(li: Traced) -> None:
    response = condense_plus_context_engine().stream_chat(QUESTION)
    assert "".join(response.response_gen) == ANSWER
    record = li.only_record()
    assert (record.query, record.response, len(record.chunks)) == (QUESTION, ANSWER, 4)
    check_tree(li, record.trace_id)


def test_streaming_chat_waits_for_its_history_writer(li: Traced) -> None:
    engine = condense_plus_context_engine(llm=FakeLLM(delay_s=0.02))
    response = engine.stream_chat(QUESTION)
    assert li.records == []  # the chat span has ended; the writer thread is still streaming
    tokens = list(response.response_gen)
    assert "".join(tokens) == ANSWER and len(tokens) > 3
    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    check_tree(li, record.trace_id)


async def test_async_streaming_chat(li: Traced) -> None:
    engine = condense_plus_context_engine()
    response = await engine.astream_chat(QUESTION)
    assert "".join([t async for t in response.async_response_gen()]) == ANSWER
    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    root = check_tree(li, record.trace_id)
    assert root.name == "CondensePlusContextChatEngine.astream_chat"


# -- async ----------------------------------------------------------------------------------


async def test_aquery_and_async_stream(li: Traced) -> None:
    assert str(await query_engine().aquery(QUESTION)) == ANSWER
    response = await query_engine(streaming=True).aquery(QUESTION)
    assert len(li.records) == 1  # the streamed one waits for its reader
    assert "".join([t async for t in response.async_response_gen()]) == ANSWER
    assert [(r.query, r.response, r.status) for r in li.records] == [(QUESTION, ANSWER, "ok")] * 2
    for record in li.records:
        check_tree(li, record.trace_id)  # a CustomLLM's inner stream_complete: no second LLM
    assert li.rt.diagnostics.counts() == {}


async def test_twenty_concurrent_aqueries_each_get_their_own_trace(li: Traced) -> None:
    engine = query_engine()
    questions = [f"concurrent question {i}?" for i in range(20)]
    answers = await asyncio.gather(*(engine.aquery(q) for q in questions))
    assert [str(a) for a in answers] == [answer_for(q) for q in questions]
    assert len(li.records) == 20
    assert sorted(r.query or "" for r in li.records) == sorted(questions)
    assert len({r.trace_id for r in li.records}) == 20
    for record in li.records:
        assert record.response == answer_for(record.query or "")
        root = check_tree(li, record.trace_id)
        assert root.attributes["input.value"] == record.query
        (retriever,) = by_kind(li.spans_of(record.trace_id))["RETRIEVER"]
        assert retriever.attributes["input.value"] == record.query
    assert li.rt.capture.open_requests() == 0


def test_queries_in_threads(li: Traced) -> None:
    engine = query_engine()
    questions = [f"thread question {i}?" for i in range(8)]
    workers = [threading.Thread(target=engine.query, args=(q,)) for q in questions]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted((r.query or "", r.response) for r in li.records) == sorted(
        (q, answer_for(q)) for q in questions
    )
    for record in li.records:
        check_tree(li, record.trace_id)


# -- errors ---------------------------------------------------------------------------------


def test_retriever_error_marks_spans_and_record(li: Traced) -> None:
    with pytest.raises(RuntimeError, match="vector store unreachable"):
        query_engine(retriever=ListRetriever(fail=True)).query(QUESTION)
    record = li.only_record()
    assert record.status == "error"
    assert record.error == "RuntimeError: vector store unreachable"
    root = check_tree(li, record.trace_id, llms=0)
    (retriever,) = by_kind(li.spans_of(record.trace_id))["RETRIEVER"]
    for span in (root, retriever):
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "RuntimeError"
    assert li.metric("ragtrace_requests_total", {"app": "test-app", "status": "error"}) == 1


def test_llm_error_marks_spans_and_record(li: Traced) -> None:
    with pytest.raises(ConnectionError):
        query_engine(llm=FakeLLM(fail=True)).query(QUESTION)
    record = li.only_record()
    assert record.status == "error" and record.error is not None
    assert "model endpoint refused the connection" in record.error
    assert len(record.chunks) == 4
    check_tree(li, record.trace_id)
    kinds = by_kind(li.spans_of(record.trace_id))
    assert kinds["LLM"][0].status.status_code == StatusCode.ERROR
    assert kinds["RETRIEVER"][0].status.status_code == StatusCode.OK  # it succeeded


def test_llm_error_while_streaming(li: Traced) -> None:
    response = query_engine(llm=FakeLLM(fail=True), streaming=True).query(QUESTION)
    assert li.records == []
    with pytest.raises(ConnectionError):
        list(response.response_gen)
    record = li.only_record()
    assert record.status == "error" and "ConnectionError" in (record.error or "")
    root = check_tree(li, record.trace_id)
    assert root.status.status_code == StatusCode.ERROR


# -- bad input ------------------------------------------------------------------------------


def test_none_query(li: Traced) -> None:
    with pytest.raises(ValidationError):  # LlamaIndex itself rejects it
        query_engine().query(None)  # type: ignore[arg-type]
    record = li.only_record()
    assert record.query is None and record.status == "error"
    assert "ValidationError" in (record.error or "")
    ListRetriever(k=1).retrieve(QueryBundle(query_str=None))  # type: ignore[arg-type]
    assert li.records[1].query is None and len(li.records[1].chunks) == 1
    assert li.rt.diagnostics.counts() == {}


def test_huge_node_text_is_truncated_and_marked(li: Traced) -> None:
    big = TextNode(id_="big", text="x" * 5_000_000)
    ListRetriever(nodes=[big]).retrieve(QUESTION)
    record = li.only_record()
    limit = li.rt.config.max_chunk_chars
    assert len(record.chunks[0].text) == limit
    assert record.attributes["ragtrace.truncated"] == ("chunk.0",)
    (retriever,) = by_kind(li.spans_of(record.trace_id))["RETRIEVER"]
    assert len(str(retriever.attributes["retrieval.documents.0.document.content"])) == limit


def test_metadata_with_cycles_and_odd_objects(li: Traced) -> None:
    node = TextNode(id_="odd", text="odd metadata", metadata={"name": "n"})
    node.metadata["self"] = node.metadata
    node.metadata["thing"] = object()
    node.metadata["items"] = {1, 2}
    ListRetriever(nodes=[node]).retrieve(QUESTION)
    chunk = li.only_record().chunks[0]
    assert chunk.metadata["name"] == "n"
    assert chunk.metadata["self"] == "<cycle>"
    assert chunk.metadata["thing"].startswith("<object object")
    assert sorted(chunk.metadata["items"]) == [1, 2]
    json.dumps(dict(chunk.metadata))
    (retriever,) = by_kind(li.spans_of(li.only_record().trace_id))["RETRIEVER"]
    json.loads(str(retriever.attributes["retrieval.documents.0.document.metadata"]))
    assert li.rt.diagnostics.counts() == {}


def test_ten_thousand_nodes_are_capped(li: Traced) -> None:
    nodes = [TextNode(id_=f"n{i}", text=f"node {i}") for i in range(10_000)]
    ListRetriever(nodes=nodes, k=10_000, scores=[0.5] * 10_000).retrieve(QUESTION)
    record = li.only_record()
    cap = li.rt.config.max_chunks
    assert [c.id for c in record.chunks] == [f"n{i}" for i in range(cap)]
    assert record.attributes["ragtrace.retrieval.chunks_dropped"] == 10_000 - cap
    # Not by kind: 50 chunks x 3 attributes pass OTel's default limit of 128 attributes per
    # span, which drops the oldest ones (the span kind among them).
    (retriever,) = [s for s in li.spans_of(record.trace_id) if s.parent is not None]
    assert retriever.attributes["ragtrace.retrieval.chunks_total"] == 10_000
    assert retriever.attributes["ragtrace.retrieval.chunks_dropped"] == 10_000 - cap
    assert li.rt.diagnostics.counts() == {}


class _Hostile:
    """A raw LLM payload that raises on every look."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"hostile raw payload: {name}")


class _BrokenNode(TextNode):
    def get_content(self, *args: Any, **kwargs: Any) -> str:
        raise RuntimeError("cannot read this node")


def test_broken_input_is_counted_and_nothing_reaches_the_app(li: Traced) -> None:
    assert str(query_engine(llm=FakeLLM(raw=_Hostile())).query(QUESTION)) == ANSWER
    record = li.only_record()
    assert (record.response, record.status) == (ANSWER, "ok")  # usage lost, record kept
    assert li.rt.diagnostics.counts() == {"llama_index.llm_response": 1}

    nodes = ListRetriever(nodes=[_BrokenNode(id_="b", text="t"), CORPUS[0]], k=2).retrieve("q")
    assert len(nodes) == 2
    assert [c.text for c in li.records[1].chunks] == ["<unreadable NodeWithScore>", CORPUS[0].text]
    assert li.rt.diagnostics.counts()["llama_index.chunk"] == 1

    # Junk straight into the dispatcher: counted, never raised.
    engine = query_engine()
    get_dispatcher().span_enter(id_=None, bound_args=None, instance=engine)  # type: ignore[arg-type]
    assert li.rt.diagnostics.counts()["llama_index.span_enter"] == 1
    assert len(li.records) == 2
    assert li.metric("ragtrace_internal_errors_total", {"site": "llama_index.span_enter"}) == 1


# -- registration ---------------------------------------------------------------------------


def _ours() -> tuple[int, int]:
    dispatcher = get_dispatcher()
    spans = sum(isinstance(h, RagtraceSpanHandler) for h in dispatcher.span_handlers)
    events = sum(isinstance(h, RagtraceEventHandler) for h in dispatcher.event_handlers)
    return spans, events


def test_instrument_is_idempotent_and_uninstrument_removes(traced: Traced) -> None:
    assert not is_instrumented() and _ours() == (0, 0)
    others = (list(get_dispatcher().span_handlers), list(get_dispatcher().event_handlers))
    first = instrument()
    assert instrument() is first
    assert is_instrumented() and _ours() == (1, 1)
    try:
        query_engine().query(QUESTION)
        assert traced.only_record().query == QUESTION
        assert len(traced.spans()) == 3
        replaced = instrument(traced.rt)  # another target: replaced, still one of each
        assert replaced is not first and _ours() == (1, 1)
    finally:
        uninstrument()
    uninstrument()
    assert not is_instrumented() and _ours() == (0, 0)
    assert (get_dispatcher().span_handlers, get_dispatcher().event_handlers) == others
    query_engine().query(QUESTION)
    assert len(traced.records) == 1


def test_instrument_tags_become_record_metadata(li: Traced) -> None:
    with instrument_tags({"tenant": "acme"}):
        query_engine().query(QUESTION)
    assert li.only_record().attributes["metadata"] == {"tenant": "acme"}


def test_content_capture_off_keeps_records_whole(
    provider: Any, registry: Any, exporter: Any
) -> None:
    rt = ragtrace.init(
        app="private", tracer_provider=provider, registry=registry, capture_content=False
    )
    records: list[Any] = []
    rt.add_record_sink(records.append)
    instrument(rt)
    try:
        query_engine().query(QUESTION)
    finally:
        uninstrument()
        rt.shutdown()
    assert (records[0].query, records[0].response) == (QUESTION, ANSWER)
    assert records[0].chunks[0].text == CORPUS[0].text
    text = [v for s in exporter.get_finished_spans() for v in (s.attributes or {}).values()]
    assert len(exporter.get_finished_spans()) == 3
    assert not any(isinstance(v, str) and (QUESTION in v or "Fact 0" in v) for v in text)


def test_missing_llama_index_names_the_extra() -> None:
    # The adapter loads without LlamaIndex (it knows an engine by its shape); the capture does not.
    code = (
        "import sys; sys.modules['llama_index'] = None; sys.modules['llama_index.core'] = None\n"
        "from ragtrace.integrations.llama_index._adapter import ADAPTER\n"
        "print(ADAPTER.name)\n"
        "try:\n    from ragtrace.integrations.llama_index import instrument\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("llama_index\n")
    assert "pip install 'ragtrace[llama-index]'" in out.stdout


@pytest.mark.parametrize(
    ("raw", "extra", "expected"),
    [
        ({"model": "m", "usage": {"prompt_tokens": 3, "completion_tokens": 4}}, {}, ("m", 3, 4)),
        (SimpleNamespace(usage=SimpleNamespace(input_tokens=5, output_tokens=6)), {}, (None, 5, 6)),
        (None, {"prompt_tokens": 7, "completion_tokens": 8}, (None, 7, 8)),
        ("not a payload", {}, (None, None, None)),
    ],
)
def test_token_usage_from_raw_responses(raw: Any, extra: Any, expected: Any) -> None:
    response = CompletionResponse(text="t", raw=raw, additional_kwargs=extra)
    assert extract.usage_of(response) == expected


def test_model_and_provider_from_llm_payload() -> None:
    assert extract.model_of({"class_name": "openai_llm", "model": "gpt-x"}) == ("gpt-x", "openai")
    assert extract.model_of({"class_name": "MockLLM", "model_name": "unknown"}) == (None, "mockllm")
    assert extract.model_of(None) == (None, None)
