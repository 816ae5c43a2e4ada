"""Bad input never reaches the host app: it is cut, marked, counted, or recorded."""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
import uuid
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.conftest import Traced
from tests.integrations.lc_app import ListRetriever, rag_chain

QUESTION = "When was the lighthouse built?"


def cfg(traced: Traced) -> dict[str, Any]:
    return {"callbacks": [RagtraceCallbackHandler(traced.rt)]}


def retriever_span(traced: Traced) -> dict[str, Any]:
    (span,) = [s for s in traced.spans() if s.attributes["openinference.span.kind"] == "RETRIEVER"]
    return dict(span.attributes or {})


def test_none_inputs_and_outputs(traced: Traced) -> None:
    RunnableLambda(lambda _: None).invoke(None, config=cfg(traced))
    record = traced.only_record()
    assert (record.query, record.response, record.status) == (None, None, "ok")


def test_bytes_and_surrogates_become_valid_text(traced: Traced) -> None:
    docs = [Document(page_content="bad \ud800 surrogate " * 3), Document(page_content="ok")]
    chain = ListRetriever(docs=docs, k=2) | RunnableLambda(lambda d: b"caf\xc3\xa9 \xff answer")
    chain.invoke(b"bytes \xff query", config=cfg(traced))
    record = traced.only_record()
    assert record.query == "bytes \ufffd query"
    assert record.response == "caf\u00e9 \ufffd answer"
    assert record.chunks[0].text.startswith("bad \ufffd surrogate")
    for span in traced.spans():
        for value in (span.attributes or {}).values():
            if isinstance(value, str):
                value.encode("utf-8")  # would raise on a lone surrogate


class _Tagged(str):
    """A str subclass, like LangChain's ``TextAccessor`` (a chat message's ``.text``)."""


def test_str_subclasses_become_plain_text_in_records_and_spans(traced: Traced) -> None:
    chain = ListRetriever(docs=[Document(page_content=_Tagged("chunk text"))], k=1) | (
        RunnableLambda(lambda _: _Tagged("the answer"))
    )
    chain.invoke(_Tagged(QUESTION), config=cfg(traced))
    record = traced.only_record()
    assert (record.query, record.response) == (QUESTION, "the answer")
    assert type(record.query) is str and type(record.response) is str
    assert type(record.chunks[0].text) is str
    texts = [v for s in traced.spans() for v in (s.attributes or {}).values() if isinstance(v, str)]
    assert "the answer" in texts and all(type(v) is str for v in texts)


def test_five_megabyte_document_is_truncated_and_marked(traced: Traced) -> None:
    huge = Document(page_content="x" * (5 * 1024 * 1024), id="huge")
    ListRetriever(docs=[huge], k=1).invoke("q", config=cfg(traced))
    record = traced.only_record()
    limit = traced.rt.config.max_chunk_chars
    assert len(record.chunks[0].text) == limit
    assert "chunk.0" in record.attributes["ragtrace.truncated"]
    attrs = retriever_span(traced)
    assert len(attrs["retrieval.documents.0.document.content"]) == limit
    root = next(s for s in traced.spans() if s.parent is None)
    assert "chunk.0" in root.attributes["ragtrace.truncated"]


def test_ten_thousand_documents_are_capped_and_counted(traced: Traced) -> None:
    docs = [Document(page_content=f"doc {i}", id=str(i)) for i in range(10_000)]
    ListRetriever(docs=docs, k=10_000).invoke("q", config=cfg(traced))
    record = traced.only_record()
    cap = traced.rt.config.max_chunks
    assert [c.id for c in record.chunks] == [str(i) for i in range(cap)]
    assert record.attributes["ragtrace.retrieval.chunks_dropped"] == 10_000 - cap
    attrs = retriever_span(traced)
    assert attrs["ragtrace.retrieval.chunks_total"] == 10_000
    assert attrs["ragtrace.retrieval.chunks_dropped"] == 10_000 - cap
    assert len(json.loads(attrs["gen_ai.retrieval.documents"])) == cap


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


def test_metadata_with_cycles_and_odd_objects(traced: Traced) -> None:
    cyclic: dict[str, Any] = {"name": "loop"}
    cyclic["self"] = cyclic
    metadata = {
        "cycle": cyclic,
        "when": datetime.date(2026, 1, 2),
        "nan": float("nan"),
        "set": {1},
        "odd": Unprintable(),
        "bytes": b"\xff",
        7: "int key",
        "score": 0.5,
    }
    doc = Document(page_content="text", metadata=metadata)
    ListRetriever(docs=[doc], k=1).invoke("q", config=cfg(traced))
    chunk = traced.only_record().chunks[0]
    assert chunk.score == 0.5
    assert chunk.metadata["cycle"] == {"name": "loop", "self": "<cycle>"}
    assert chunk.metadata["when"] == "2026-01-02"
    assert chunk.metadata["nan"] == "nan"
    assert chunk.metadata["odd"] == "<unprintable Unprintable>"
    assert chunk.metadata["7"] == "int key"
    json.loads(retriever_span(traced)["retrieval.documents.0.document.metadata"])


class ExplodingDoc:
    @property
    def page_content(self) -> str:
        raise RuntimeError("boom")


def test_odd_document_objects(traced: Traced) -> None:
    handler = RagtraceCallbackHandler(traced.rt)
    run = uuid.uuid4()
    handler.on_retriever_start(None, "q", run_id=run)
    handler.on_retriever_end([ExplodingDoc(), None, 42, "plain"], run_id=run)  # type: ignore[list-item]
    record = traced.only_record()
    assert [c.text for c in record.chunks] == ["<unreadable ExplodingDoc>", "", "42", "plain"]


def test_callbacks_out_of_order_or_twice_never_raise(traced: Traced) -> None:
    handler = RagtraceCallbackHandler(traced.rt)
    root, child, stranger = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    handler.on_chain_end({"answer": "x"}, run_id=stranger)  # end without start
    handler.on_llm_end(None, run_id=stranger)  # type: ignore[arg-type]
    handler.on_retriever_end([], run_id=stranger)
    handler.on_chain_error(ValueError("?"), run_id=stranger)
    handler.on_llm_new_token("tok", run_id=stranger)
    handler.on_chain_start(None, {"question": "q"}, run_id=root)
    handler.on_chain_start(None, {"question": "again"}, run_id=root)  # started twice
    handler.on_retriever_start(None, "q", run_id=child, parent_run_id=root)
    handler.on_retriever_start(None, "q", run_id=child, parent_run_id=root)  # twice
    handler.on_retriever_end([Document(page_content="c")], run_id=child)
    handler.on_retriever_end([Document(page_content="c")], run_id=child)  # ended twice
    handler.on_chain_end({"answer": "a"}, run_id=root)
    handler.on_chain_end({"answer": "b"}, run_id=root)  # ended twice
    record = traced.only_record()
    assert (record.query, record.response, len(record.chunks)) == ("q", "a", 1)
    assert traced.rt.diagnostics.counts()["capture.duplicate_start"] == 2
    assert traced.metric("ragtrace_internal_errors_total", {"site": "capture.duplicate_start"}) == 2


class ExplodingResult:
    """An LLM result whose generations cannot be read."""

    @property
    def generations(self) -> Any:
        raise RuntimeError("boom")


class ExplodingMessages:
    def __getitem__(self, index: int) -> Any:
        raise RuntimeError("boom")


def test_what_a_callback_raises_is_counted_at_its_site_and_never_escapes(traced: Traced) -> None:
    handler = RagtraceCallbackHandler(traced.rt)
    root, llm, retrieval = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    handler.on_chain_start(None, {"question": "q"}, run_id=root)
    handler.on_chat_model_start(None, ExplodingMessages(), run_id=llm, parent_run_id=root)  # type: ignore[arg-type]
    handler.on_llm_end(ExplodingResult(), run_id=llm, parent_run_id=root)  # type: ignore[arg-type]
    handler.on_retriever_start(None, "q", run_id=retrieval, parent_run_id=root, tags=7)  # type: ignore[arg-type]
    handler.on_chain_end({"answer": "a"}, run_id=root)
    counts = traced.rt.diagnostics.counts()
    assert {k: v for k, v in counts.items() if k.startswith("langchain.")} == {
        "langchain.on_chat_model_start": 1,
        "langchain.on_llm_end": 1,
        "langchain.on_retriever_start": 1,
    }
    assert traced.metric("ragtrace_internal_errors_total", {"site": "langchain.on_llm_end"}) == 1
    assert (traced.only_record().query, traced.only_record().response) == ("q", "a")
    assert handler.on_chain_start.__name__ == "on_chain_start"  # the guard keeps the name


def test_runs_that_never_end_are_closed_as_incomplete(provider: Any) -> None:
    rt = ragtrace.init(
        app="stale",
        tracer_provider=provider,
        registry=CollectorRegistry(),
        request_timeout_s=0.05,
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        handler = RagtraceCallbackHandler(rt)
        handler.on_chain_start(None, "never ends", run_id=uuid.uuid4())
        time.sleep(0.1)
        rag_chain().invoke(QUESTION, config={"callbacks": [handler]})
        assert [(r.query, r.status) for r in records] == [
            ("never ends", "incomplete"),
            (QUESTION, "ok"),
        ]
        assert "no end event" in (records[0].error or "")
        handler.on_chain_start(None, "open at shutdown", run_id=uuid.uuid4())
    finally:
        rt.shutdown()
    assert records[-1].query == "open at shutdown" and records[-1].status == "incomplete"


def test_too_many_open_requests_close_the_oldest(provider: Any) -> None:
    rt = ragtrace.init(
        app="cap", tracer_provider=provider, registry=CollectorRegistry(), max_open_requests=3
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        handler = RagtraceCallbackHandler(rt)
        for i in range(5):
            handler.on_chain_start(None, f"q{i}", run_id=uuid.uuid4())
        assert [r.query for r in records] == ["q0", "q1"]
        assert rt.capture.open_requests() == 3
    finally:
        rt.shutdown()


def test_a_failing_sink_does_not_reach_the_app(traced: Traced) -> None:
    def bad_sink(_record: Any) -> None:
        raise RuntimeError("sink down")

    traced.rt.add_record_sink(bad_sink)
    assert rag_chain().invoke(QUESTION, config=cfg(traced)).startswith("The lighthouse")
    assert traced.rt.diagnostics.counts() == {"pipeline.record_sink": 1}
    assert len(traced.records) == 1


def test_redaction_applies_to_spans_and_records(provider: Any, exporter: Any) -> None:
    def redact(text: str) -> str:
        return text.replace("ada@example.com", "<EMAIL>")

    rt = ragtrace.init(
        app="redact", tracer_provider=provider, registry=CollectorRegistry(), redact=redact
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        docs = [Document(page_content="Contact ada@example.com for keys.", id="d")]
        chain = ListRetriever(docs=docs, k=1) | RunnableLambda(lambda d: "Write to ada@example.com")
        chain.invoke(
            "is ada@example.com the admin?", config={"callbacks": [RagtraceCallbackHandler(rt)]}
        )
        record = records[0]
        assert record.query == "is <EMAIL> the admin?"
        assert record.response == "Write to <EMAIL>"
        assert record.chunks[0].text == "Contact <EMAIL> for keys."
        for span in exporter.get_finished_spans():
            assert "ada@example.com" not in json.dumps(dict(span.attributes or {}))
    finally:
        rt.shutdown()


def test_a_redactor_that_fails_never_leaks_the_text(provider: Any, exporter: Any) -> None:
    def redact(text: str) -> str:
        raise ValueError("regex exploded")

    rt = ragtrace.init(
        app="redact-fail", tracer_provider=provider, registry=CollectorRegistry(), redact=redact
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        RunnableLambda(lambda q: "secret answer").invoke(
            "secret question", config={"callbacks": [RagtraceCallbackHandler(rt)]}
        )
        assert (records[0].query, records[0].response) == (
            "<redaction failed>",
            "<redaction failed>",
        )
        for span in exporter.get_finished_spans():
            assert "secret" not in json.dumps(dict(span.attributes or {}))
    finally:
        rt.shutdown()


def test_content_capture_off_keeps_ids_and_scores_only(provider: Any, exporter: Any) -> None:
    rt = ragtrace.init(
        app="private",
        tracer_provider=provider,
        registry=CollectorRegistry(),
        capture_content=False,
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        rag_chain().invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler(rt)]})
        assert records[0].query == QUESTION  # evaluators still get the text
        for span in exporter.get_finished_spans():
            attrs = dict(span.attributes or {})
            text = json.dumps(attrs)
            assert "lighthouse" not in text and QUESTION not in text
        (retriever,) = [
            s
            for s in exporter.get_finished_spans()
            if s.attributes["openinference.span.kind"] == "RETRIEVER"
        ]
        assert retriever.attributes["retrieval.documents.0.document.id"] == "doc-0"
        assert retriever.attributes["retrieval.documents.0.document.score"] == 0.9
    finally:
        rt.shutdown()


def test_many_threads_share_one_handler(traced: Traced) -> None:
    handler = RagtraceCallbackHandler(traced.rt)
    chain = rag_chain(
        llm=__import__(
            "langchain_core.language_models.fake_chat_models", fromlist=["x"]
        ).ParrotFakeChatModel()
    )
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                chain.invoke(f"w{worker} q{i}", config={"callbacks": [handler]})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(traced.records) == 200
    assert all(r.query == r.response and len(r.chunks) == 4 for r in traced.records)
    assert len({r.trace_id for r in traced.records}) == 200
    assert traced.rt.capture.open_requests() == 0


def test_surrogates_in_errors_ids_and_metadata_stay_encodable(traced: Traced) -> None:
    class BrokenRetriever(ListRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            raise RuntimeError("store said \ud800")

    docs = [Document(page_content="t", id="id-\udc00", metadata={"k\ud800": "v\udfff"})]
    ListRetriever(docs=docs, k=1).invoke("q", config=cfg(traced))
    with contextlib.suppress(RuntimeError):
        BrokenRetriever().invoke("q", config=cfg(traced))
    ok, failed = traced.records
    assert ok.chunks[0].id == "id-\ufffd"
    assert failed.error == "RuntimeError: store said \ufffd"
    for span in traced.spans():
        (span.status.description or "").encode("utf-8")
        for event in span.events:
            for value in (event.attributes or {}).values():
                if isinstance(value, str):
                    value.encode("utf-8")
        for value in (span.attributes or {}).values():
            if isinstance(value, str):
                value.encode("utf-8")
