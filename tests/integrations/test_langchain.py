"""LangChain capture: invoke, batch, stream, async, nesting, parallel retrievers, errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel, ParrotFakeChatModel
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import ragtrace
from ragtrace.integrations.langchain import (
    RagtraceCallbackHandler,
    instrument,
    is_instrumented,
    uninstrument,
)
from tests.conftest import Traced
from tests.integrations.lc_app import CORPUS, PROMPT, ListRetriever, format_docs, rag_chain

QUESTION = "When was the lighthouse built?"
ANSWER = "The lighthouse was built in 1850."


def cfg(traced: Traced) -> dict[str, Any]:
    return {"callbacks": [RagtraceCallbackHandler(traced.rt)]}


def by_kind(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    kinds = {str(s.attributes["openinference.span.kind"]): s for s in spans}
    assert len(kinds) == len(spans), [s.name for s in spans]
    return kinds


def hexid(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


def test_invoke_makes_three_spans_and_one_record(traced: Traced) -> None:
    answer = rag_chain().invoke(QUESTION, config=cfg(traced))
    assert answer == ANSWER

    record = traced.only_record()
    assert record.query == QUESTION
    assert record.response == ANSWER
    assert record.status == "ok" and record.error is None
    assert record.app == "test-app"
    assert record.model == "generic-fake-chat-model"
    assert [c.id for c in record.chunks] == ["doc-0", "doc-1", "doc-2", "doc-3"]
    assert [c.score for c in record.chunks] == [0.9, 0.8, 0.7, 0.6]
    assert [c.text for c in record.chunks] == [d.page_content for d in CORPUS[:4]]
    assert record.chunks[0].metadata == {"score": 0.9, "source": "island-0.md"}
    assert {c.source for c in record.chunks} == {"ListRetriever"}
    # one retrieval, asked the user's own question; the prompt carries every chunk
    assert {(c.retrieval, c.query, c.used) for c in record.chunks} == {(0, None, True)}
    assert record.start_ns <= record.end_ns

    spans = traced.spans_of(record.trace_id)
    kinds = by_kind(spans)
    root, retriever, llm = kinds["CHAIN"], kinds["RETRIEVER"], kinds["LLM"]
    assert root.parent is None and hexid(root) == record.span_id
    assert retriever.parent is not None and retriever.parent.span_id == root.context.span_id
    assert llm.parent is not None and llm.parent.span_id == root.context.span_id

    attrs = dict(retriever.attributes or {})
    for i, doc in enumerate(CORPUS[:4]):
        assert attrs.pop(f"retrieval.documents.{i}.document.id") == doc.id
        assert attrs.pop(f"retrieval.documents.{i}.document.score") == doc.metadata["score"]
        assert attrs.pop(f"retrieval.documents.{i}.document.content") == doc.page_content
        assert json.loads(str(attrs.pop(f"retrieval.documents.{i}.document.metadata"))) == (
            doc.metadata
        )
    assert json.loads(str(attrs.pop("gen_ai.retrieval.documents"))) == [
        {"id": d.id, "score": d.metadata["score"]} for d in CORPUS[:4]
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

    root_attrs = dict(root.attributes or {})
    assert root_attrs == {
        "openinference.span.kind": "CHAIN",
        "gen_ai.operation.name": "invoke_workflow",
        "ragtrace.app": "test-app",
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
        "ragtrace.request.status": "ok",
        "gen_ai.request.model": "generic-fake-chat-model",
        "ragtrace.context.used": (0, 1, 2, 3),
        "ragtrace.context.unused": (),
    }

    llm_attrs = dict(llm.attributes or {})
    system_prompt = str(llm_attrs.pop("llm.input_messages.0.message.content"))
    # the prompt keeps its context, so it replays as sent (no dedupe by default)
    assert (
        system_prompt
        == PROMPT.format_messages(context=format_docs(CORPUS[:4]), question=QUESTION)[0].content
    )
    assert llm_attrs.pop("input.value") == f"system: {system_prompt}\n\nuser: {QUESTION}"
    assert llm_attrs == {
        "openinference.span.kind": "LLM",
        "gen_ai.operation.name": "chat",
        "llm.model_name": "generic-fake-chat-model",
        "gen_ai.request.model": "generic-fake-chat-model",
        "llm.provider": "genericfakechatmodel",
        "gen_ai.provider.name": "genericfakechatmodel",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUESTION,
        "input.mime_type": "text/plain",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
    }
    assert [s.status.status_code for s in (root, retriever, llm)] == [StatusCode.OK] * 3
    assert traced.metric("ragtrace_requests_total", {"app": "test-app", "status": "ok"}) == 1
    assert traced.metric("ragtrace_retrieval_chunks_count", {"app": "test-app"}) == 1
    assert traced.rt.diagnostics.counts() == {}


def test_dedupe_replaces_chunk_text_in_prompts_with_bracket_references(
    provider: Any, registry: Any, exporter: Any
) -> None:
    rt = ragtrace.init(
        app="test-app", tracer_provider=provider, registry=registry, dedupe_prompt_chunks=True
    )
    traced = Traced(rt, exporter)
    try:
        docs = [
            Document(page_content=f"chunk {i} " * 64, id=f"c{i}", metadata={"score": 0.5})
            for i in range(4)
        ]  # 4 x 512 = 2 KB of chunk text
        chain = rag_chain(retriever=ListRetriever(docs=docs))
        chain.invoke(QUESTION, config=cfg(traced))
        llm = by_kind(traced.spans())["LLM"]
        prompt = str(llm.attributes["llm.input_messages.0.message.content"])
        assert prompt.endswith(
            "[ragtrace.chunk:0]\n\n[ragtrace.chunk:1]\n\n[ragtrace.chunk:2]\n\n[ragtrace.chunk:3]"
        )
        assert "{" not in prompt  # nothing a playground would read as a template variable
        assert llm.attributes["ragtrace.llm.prompt_chunk_refs"] == 4
        # the chunk text is on the retriever span once; the prompt (twice: the messages and
        # input.value) holds references only
        total = sum(
            len(v) if isinstance(v, str) else 8
            for span in traced.spans()
            for v in (span.attributes or {}).values()
        )
        assert total < 5120, total
    finally:
        rt.shutdown()


def test_by_default_the_prompt_keeps_its_chunks(traced: Traced) -> None:
    rag_chain().invoke(QUESTION, config=cfg(traced))
    llm = by_kind(traced.spans())["LLM"]
    prompt = str(llm.attributes["llm.input_messages.0.message.content"])
    assert all(doc.page_content in prompt for doc in CORPUS[:4])
    assert "ragtrace.llm.prompt_chunk_refs" not in llm.attributes


def test_batch_gives_one_trace_per_input(traced: Traced) -> None:
    chain = rag_chain(llm=ParrotFakeChatModel())
    questions = [f"question {i}?" for i in range(5)]
    answers = chain.batch(questions, config=cfg(traced))
    assert answers == questions
    assert sorted(r.query or "" for r in traced.records) == questions
    assert len({r.trace_id for r in traced.records}) == 5
    for record in traced.records:
        assert record.response == record.query
        assert len(traced.spans_of(record.trace_id)) == 3


def test_stream_joins_the_answer(traced: Traced) -> None:
    pieces = list(rag_chain().stream(QUESTION, config=cfg(traced)))
    assert len(pieces) > 3 and "".join(pieces) == ANSWER
    record = traced.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    spans = by_kind(traced.spans_of(record.trace_id))
    # a stream delivers its input at the end of the run: the root still shows the query
    assert spans["CHAIN"].attributes["input.value"] == QUESTION
    assert spans["CHAIN"].attributes["output.value"] == ANSWER
    assert {s.status.status_code for s in spans.values()} == {StatusCode.OK}


def test_a_streamed_dict_input_shows_its_query(traced: Traced) -> None:
    chain = RunnablePassthrough() | (lambda x: x["question"]) | rag_chain()
    assert "".join(chain.stream({"question": QUESTION}, config=cfg(traced))) == ANSWER
    record = traced.only_record()
    root = by_kind(traced.spans_of(record.trace_id))["CHAIN"]
    assert root.attributes["input.value"] == QUESTION == record.query


def test_abandoned_stream_is_recorded_as_abandoned(traced: Traced) -> None:
    stream = rag_chain().stream(QUESTION, config=cfg(traced))
    first = [next(stream), next(stream), next(stream)]
    stream.close()
    record = traced.only_record()
    assert record.status == "abandoned"
    assert record.error is not None and "abandoned" in record.error
    assert record.response == "".join(first)
    assert record.query == QUESTION
    spans = by_kind(traced.spans_of(record.trace_id))
    assert spans["CHAIN"].attributes["ragtrace.request.status"] == "abandoned"
    assert spans["LLM"].attributes["ragtrace.request.status"] == "abandoned"
    # neither a success (OK) nor an app error (ERROR): the consumer stopped reading
    assert spans["CHAIN"].status.status_code == StatusCode.UNSET
    assert spans["LLM"].status.status_code == StatusCode.UNSET
    assert spans["RETRIEVER"].status.status_code == StatusCode.OK
    assert spans["CHAIN"].attributes["input.value"] == QUESTION
    assert traced.metric("ragtrace_requests_total", {"app": "test-app", "status": "abandoned"}) == 1


async def test_ainvoke_and_astream(traced: Traced) -> None:
    chain = rag_chain()
    assert await chain.ainvoke(QUESTION, config=cfg(traced)) == ANSWER
    pieces = [p async for p in chain.astream(QUESTION, config=cfg(traced))]
    assert "".join(pieces) == ANSWER
    assert [(r.query, r.response, r.status) for r in traced.records] == [
        (QUESTION, ANSWER, "ok")
    ] * 2
    assert traced.records[0].trace_id != traced.records[1].trace_id
    for record in traced.records:  # the async stream's root shows its query too
        root = by_kind(traced.spans_of(record.trace_id))["CHAIN"]
        assert root.attributes["input.value"] == QUESTION


async def test_abandoned_async_stream(traced: Traced) -> None:
    stream = rag_chain().astream(QUESTION, config=cfg(traced))
    await anext(stream)
    await stream.aclose()
    for _ in range(100):  # LangChain closes the inner generators on later loop iterations
        if traced.records:
            break
        await asyncio.sleep(0.01)
    record = traced.only_record()
    assert record.status == "abandoned"


async def test_fifty_concurrent_requests_each_get_their_own_trace(traced: Traced) -> None:
    chain = rag_chain(llm=ParrotFakeChatModel())
    sink_threads: set[int] = set()
    traced.rt.add_record_sink(lambda _r: sink_threads.add(threading.get_ident()))
    questions = [f"concurrent question {i}" for i in range(50)]
    answers = await asyncio.gather(*(chain.ainvoke(q, config=cfg(traced)) for q in questions))
    assert answers == questions
    assert len(traced.records) == 50
    assert len({r.trace_id for r in traced.records}) == 50
    for record in traced.records:
        assert record.response == record.query
        kinds = by_kind(traced.spans_of(record.trace_id))
        root = kinds["CHAIN"]
        assert root.attributes["input.value"] == record.query
        for child in (kinds["RETRIEVER"], kinds["LLM"]):
            assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert kinds["RETRIEVER"].attributes["input.value"] == record.query
    # inline handler: events ran on the event loop's thread, not in LangChain's thread pool
    assert sink_threads == {threading.get_ident()}


def test_nested_chain_is_one_request(traced: Traced) -> None:
    inner = rag_chain()
    outer = RunnableLambda(lambda q: q.strip()) | inner | RunnableLambda(lambda a: a.upper())
    assert outer.invoke(f"  {QUESTION}  ", config=cfg(traced)) == ANSWER.upper()
    record = traced.only_record()
    assert record.query == f"  {QUESTION}  "
    assert record.response == ANSWER.upper()
    assert len(traced.spans_of(record.trace_id)) == 3


def test_parallel_retrievers_keep_all_chunks_with_their_source(traced: Traced) -> None:
    docs_b = [Document(page_content="Beacon B text " * 5, metadata={"doc_id": "b-1"})]
    retrieve = RunnableParallel(manuals=ListRetriever(k=2), faq=ListRetriever(docs=docs_b, k=1))
    chain = (
        {"docs": retrieve, "question": RunnablePassthrough()}
        | RunnableLambda(
            lambda x: {
                "context": format_docs(x["docs"]["manuals"] + x["docs"]["faq"]),
                "question": x["question"],
            }
        )
        | PROMPT
        | FakeListChatModel(responses=[ANSWER])
    )
    message = chain.invoke(QUESTION, config=cfg(traced))
    assert message.content == ANSWER
    record = traced.only_record()
    assert record.response == ANSWER  # taken from the root's AIMessage
    assert sorted((c.source, c.id) for c in record.chunks) == [
        ("faq/ListRetriever", "b-1"),
        ("manuals/ListRetriever", "doc-0"),
        ("manuals/ListRetriever", "doc-1"),
    ]
    retrievers = [
        s
        for s in traced.spans_of(record.trace_id)
        if s.attributes["openinference.span.kind"] == "RETRIEVER"
    ]
    assert len(retrievers) == 2


def test_retriever_error_marks_spans_and_record(traced: Traced) -> None:
    chain = rag_chain(retriever=ListRetriever(fail=True))
    with pytest.raises(RuntimeError, match="vector store unreachable"):
        chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert record.status == "error"
    assert record.error == "RuntimeError: vector store unreachable"
    kinds = by_kind(traced.spans_of(record.trace_id))
    assert set(kinds) == {"CHAIN", "RETRIEVER"}
    for span in kinds.values():
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes["error.type"] == "RuntimeError"
    assert traced.metric("ragtrace_requests_total", {"app": "test-app", "status": "error"}) == 1


def test_llm_error_marks_spans_and_record(traced: Traced) -> None:
    chain = rag_chain(llm=FakeListChatModel(responses=[]))
    with pytest.raises(IndexError):
        chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert record.status == "error" and record.error is not None
    assert record.error.startswith("IndexError")
    assert len(record.chunks) == 4
    kinds = by_kind(traced.spans_of(record.trace_id))
    assert kinds["LLM"].status.status_code == StatusCode.ERROR
    assert kinds["RETRIEVER"].status.status_code == StatusCode.OK  # it succeeded


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"answer": "from answer"}, "from answer"),
        ({"output": "from output"}, "from output"),
        ({"result": "from result", "sources": []}, "from result"),
        ({"text": "from text"}, "from text"),
        ({"nothing": "here"}, None),
    ],
)
def test_answer_from_dict_output(traced: Traced, output: dict[str, Any], expected: str) -> None:
    chain = RunnableLambda(lambda q: ListRetriever().invoke(q)) | RunnableLambda(lambda _: output)
    chain.invoke(QUESTION, config=cfg(traced))
    assert traced.only_record().response == expected


def test_configured_answer_and_query_keys(provider: Any, registry: Any, exporter: Any) -> None:
    rt = ragtrace.init(
        app="keys",
        tracer_provider=provider,
        registry=registry,
        answer_keys=("final",),
        query_keys=("ask",),
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        chain = RunnableLambda(lambda x: {"final": x["ask"] + "!", "answer": "no"})
        chain.invoke({"ask": "hello"}, config={"callbacks": [RagtraceCallbackHandler()]})
        assert (records[0].query, records[0].response) == ("hello", "hello!")
    finally:
        rt.shutdown()


def test_query_falls_back_to_the_retriever_query(traced: Traced) -> None:
    chain = RunnableLambda(lambda x: x["weird_key"]) | ListRetriever(k=1)
    chain.invoke({"weird_key": "what about this?"}, config=cfg(traced))
    record = traced.only_record()
    assert record.query == "what about this?"
    assert len(record.chunks) == 1


def test_chunk_ids_and_scores_from_metadata(traced: Traced) -> None:
    docs = [
        Document(page_content="a", metadata={"doc_id": "m-1", "relevance_score": "0.75"}),
        Document(page_content="b", metadata={"chunk_id": 7, "similarity": 0.5}),
        Document(page_content="c", metadata={"score": "not a number"}),
    ]
    ListRetriever(docs=docs, k=3).invoke("q", config=cfg(traced))
    record = traced.only_record()  # a retriever called on its own is a request too
    assert [(c.id, c.score) for c in record.chunks] == [("m-1", 0.75), ("7", 0.5), (None, None)]
    assert record.response is None


def test_instrument_traces_every_run_once(traced: Traced) -> None:
    assert not is_instrumented()
    instrument()
    instrument()  # idempotent
    try:
        assert is_instrumented()
        chain = rag_chain()
        chain.invoke(QUESTION)
        chain.invoke(QUESTION, config=cfg(traced))  # an explicit handler too: still one record
        assert [r.query for r in traced.records] == [QUESTION, QUESTION]
        assert len(traced.spans()) == 6
    finally:
        uninstrument()
    assert not is_instrumented()
    rag_chain().invoke(QUESTION)
    assert len(traced.records) == 2


def test_instrument_works_in_other_threads(traced: Traced) -> None:
    instrument()
    try:
        worker = threading.Thread(target=lambda: rag_chain().invoke(QUESTION))
        worker.start()
        worker.join()
    finally:
        uninstrument()
    assert traced.only_record().query == QUESTION


def test_handler_without_init_uses_the_current_instance(traced: Traced) -> None:
    rag_chain().invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler()]})
    assert traced.only_record().response == ANSWER


def test_missing_langchain_names_the_extra() -> None:
    # The adapter loads without LangChain (it knows a runnable by its shape); the capture does not.
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "from ragtrace.integrations.langchain._adapter import ADAPTER\n"
        "print(ADAPTER.name)\n"
        "try:\n    from ragtrace.integrations.langchain import RagtraceCallbackHandler\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("langchain\n")
    assert "pip install 'ragtrace[langchain]'" in out.stdout
