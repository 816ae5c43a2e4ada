"""The context the answer used: each chunk says which retrieval returned it and whether its
text reached the model call that produced the answer (``Chunk.used``).

Apps are built as their frameworks teach, on the frameworks' own fake models: a LangGraph
corrective RAG whose grader drops documents, a plain LangChain chain, LlamaIndex query engines
on ``MockLLM``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda, RunnableParallel
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import ragtrace
from ragtrace._ingest.decode import spans_of
from ragtrace._ingest.mappers import map_trace
from ragtrace._ingest.spans import TraceView
from ragtrace._model import RETRIEVALS_KEY, Chunk
from ragtrace.evaluators._context_relevance import PRECISION, RECALL, ContextRelevance
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.conftest import Traced
from tests.integrations import crag_app as crag
from tests.integrations.lc_app import ListRetriever, fake_llm, rag_chain

QUESTION = "When was the lighthouse built?"


def cfg(traced: Traced) -> dict[str, Any]:
    return {"callbacks": [RagtraceCallbackHandler(traced.rt)]}


def of_kind(spans: list[ReadableSpan], kind: str) -> list[ReadableSpan]:
    return sorted(
        (s for s in spans if (s.attributes or {})["openinference.span.kind"] == kind),
        key=lambda s: s.start_time or 0,
    )


def root_of(traced: Traced) -> dict[str, Any]:
    (root,) = [s for s in traced.spans() if s.parent is None]
    return dict(root.attributes or {})


def ingested(traced: Traced) -> Any:
    """The record ``ragtrace ingest`` makes of the spans capture wrote."""
    [mapped] = map_trace(TraceView(spans_of(encode_spans(traced.spans())).spans))
    return mapped.record


# -- LangGraph: a corrective RAG --------------------------------------------------------------


def test_a_corrective_rag_marks_the_documents_its_grader_dropped_as_unused(
    traced: Traced,
) -> None:
    result = crag.corrective_rag().invoke({"question": crag.QUESTION}, cfg(traced))
    assert result["generation"] == crag.ANSWER

    record = traced.only_record()
    assert (record.query, record.response) == (crag.QUESTION, crag.ANSWER)
    assert record.llm_calls == 7  # five verdicts, one rewrite, one answer
    # Four documents, each once (kb-aurora came back from both retrievals), each naming the
    # retrieval that first returned it and, for the rewrite's, the query it was asked.
    assert [(c.id, c.retrieval, c.query, c.used) for c in record.chunks] == [
        ("kb-aurora", 0, None, True),
        ("kb-install", 0, None, False),
        ("kb-aurora-ext", 1, crag.REWRITTEN, True),
        ("kb-borealis", 1, crag.REWRITTEN, False),
    ]
    aurora = record.chunks[0]
    assert aurora.score == 0.9
    assert aurora.metadata[RETRIEVALS_KEY] == [
        {"retrieval": 0, "query": crag.QUESTION, "score": 0.9},
        {"retrieval": 1, "query": crag.REWRITTEN, "score": 0.7},
    ]
    assert [c.id for c in record.chunks if c.used] == crag.USED
    assert [c.id for c in record.chunks if c.used is False] == crag.DROPPED

    # The root says which chunks the answer used; each retriever span which retrieval it was.
    root = root_of(traced)
    assert (root["ragtrace.context.used"], root["ragtrace.context.unused"]) == ((0, 2), (1, 3))
    retrievers = of_kind(traced.spans(), "RETRIEVER")
    assert [s.attributes["ragtrace.retrieval.step"] for s in retrievers] == [0, 1]
    assert [s.attributes["gen_ai.retrieval.query.text"] for s in retrievers] == [
        crag.QUESTION,
        crag.REWRITTEN,
    ]
    # `ragtrace ingest` reads the same chunks back from those spans.
    assert ingested(traced).chunks == record.chunks


def test_context_precision_of_a_corrective_rag_judges_only_what_the_answer_saw(
    traced: Traced,
) -> None:
    crag.corrective_rag().invoke({"question": crag.QUESTION}, cfg(traced))
    record = traced.only_record()

    scores = {s.name: s for s in ContextRelevance().evaluate(record)}
    precision, recall = scores[PRECISION], scores[RECALL]
    assert precision.error is None and recall.error is None
    relevancy = [row["relevancy"] for row in precision.details["chunks"]]
    assert len(relevancy) == 4  # every chunk is analysed and listed, at its record index
    assert precision.value == pytest.approx((relevancy[0] + relevancy[2]) / 2, abs=1e-4)
    assert precision.details["judged_chunks"] == [0, 2]
    assert precision.explanation is not None
    assert precision.explanation.endswith("judged on the 2 of 4 chunks the answer's model call saw")
    assert recall.value == pytest.approx(max(relevancy), abs=1e-4)  # retrieval: all of them
    # Read as before, the two documents the grader threw away pull the mean down.
    unmarked = dataclasses.replace(
        record, chunks=tuple(Chunk(c.text, id=c.id) for c in record.chunks)
    )
    before = {s.name: s for s in ContextRelevance().evaluate(unmarked)}
    assert before[PRECISION].value == pytest.approx(sum(relevancy) / 4, abs=1e-4)
    assert before[PRECISION].value < precision.value
    assert "judged on" not in (before[PRECISION].explanation or "")


# -- LangChain: chains ------------------------------------------------------------------------


def test_a_plain_chain_uses_every_chunk_it_retrieved(traced: Traced) -> None:
    rag_chain().invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert [(c.retrieval, c.used) for c in record.chunks] == [(0, True)] * 4
    assert root_of(traced)["ragtrace.context.used"] == (0, 1, 2, 3)


def test_a_streamed_chain_is_marked_from_the_prompt_it_sent(traced: Traced) -> None:
    chain = rag_chain(retriever=ListRetriever(k=2))
    assert "".join(chain.stream(QUESTION, config=cfg(traced)))
    record = traced.only_record()
    assert [c.used for c in record.chunks] == [True, True]


def test_prompt_references_still_count_the_chunks_as_used(
    provider: Any, registry: Any, exporter: Any
) -> None:
    """``dedupe_prompt_chunks`` shortens the LLM span's prompt; capture reads the one sent."""
    rt = ragtrace.init(
        app="test-app", tracer_provider=provider, registry=registry, dedupe_prompt_chunks=True
    )
    traced = Traced(rt, exporter)
    try:
        rag_chain().invoke(QUESTION, config=cfg(traced))
        (llm,) = of_kind(traced.spans(), "LLM")
        assert "[ragtrace.chunk:0]" in str(llm.attributes["llm.input_messages.0.message.content"])
        record = traced.only_record()
        assert [c.used for c in record.chunks] == [True] * 4
        assert ingested(traced).chunks == record.chunks
    finally:
        rt.shutdown()


def test_a_prompt_that_holds_only_some_chunks_marks_the_rest_unused(traced: Traced) -> None:
    """A chain that reranks by hand and keeps the top two: the other two were retrieved, not
    sent."""
    chain = (
        {
            "context": ListRetriever() | RunnableLambda(lambda docs: docs[:2]),
            "question": lambda q: q,
        }
        | RunnableLambda(
            lambda x: "\n\n".join(d.page_content for d in x["context"]) + "\n\n" + x["question"]
        )
        | fake_llm()
    )
    chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert [c.used for c in record.chunks] == [True, True, False, False]


def test_model_calls_running_at_once_are_told_apart(traced: Traced) -> None:
    """Two branches ask two models at once, each with part of the context; the answer is the
    first branch's."""

    def branch(docs: slice, answer: str) -> Any:
        return RunnableLambda(lambda x: "\n\n".join(d.page_content for d in x[docs])) | fake_llm(
            answer
        )

    chain = (
        ListRetriever()
        | RunnableParallel(
            first=branch(slice(0, 1), "The first lighthouse was built in 1850."),
            rest=branch(slice(1, 4), "The others came later, one a year."),
        )
        | RunnableLambda(lambda x: x["first"].content)
    )
    chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert record.response == "The first lighthouse was built in 1850."
    assert [c.used for c in record.chunks] == [True, False, False, False]


def test_no_model_call_seen_leaves_every_chunk_unknown(traced: Traced) -> None:
    """An answer made outside LangChain's callbacks (here: no model at all) says nothing of
    which chunks it read."""
    chain = ListRetriever(k=2) | RunnableLambda(lambda docs: f"{len(docs)} documents")
    chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert [c.used for c in record.chunks] == [None, None]
    assert [c.retrieval for c in record.chunks] == [0, 0]
    assert "ragtrace.context.used" not in root_of(traced)


def test_an_answer_made_outside_the_model_calls_seen_leaves_every_chunk_unknown(
    traced: Traced,
) -> None:
    """A model call is seen (here, one that checks the documents), but the answer comes from
    elsewhere (a client called without callbacks): which chunks it read is not known."""
    check = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs)) | fake_llm("yes")
    chain = ListRetriever(k=2) | check | RunnableLambda(lambda _: "An answer made elsewhere.")
    chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert (record.response, record.llm_calls) == ("An answer made elsewhere.", 1)
    assert [c.used for c in record.chunks] == [None, None]


def test_odd_documents_and_messages_never_break_capture(traced: Traced) -> None:
    """A huge chunk (cut: its kept beginning is looked for), an empty one, a model call whose
    prompt is not text: the request is recorded and nothing is counted as an error."""
    huge = "The lighthouse keeper's log. " * 200_000  # ~5.8 MB
    docs = [
        Document(page_content=huge, id="huge"),
        Document(page_content="", id="empty"),
        Document(page_content="Fact: built in 1850.", id="short"),
    ]

    def prompt(found: list[Document]) -> list[Any]:
        return [
            ("system", [{"type": "text", "text": found[0].page_content}]),  # content blocks
            ("human", QUESTION),
        ]

    chain = ListRetriever(docs=docs, k=3) | RunnableLambda(prompt) | fake_llm()
    chain.invoke(QUESTION, config=cfg(traced))
    record = traced.only_record()
    assert [(c.id, c.used) for c in record.chunks] == [
        ("huge", True),
        ("empty", None),  # no text to look for
        ("short", False),
    ]
    assert traced.rt.diagnostics.counts() == {}


# -- LlamaIndex: query engines ------------------------------------------------------------------


@pytest.fixture
def li(traced: Traced) -> Iterator[Traced]:
    from ragtrace.integrations.llama_index import instrument, uninstrument

    instrument(traced.rt)
    yield traced
    uninstrument()


def mock_engine(**kwargs: Any) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from tests.integrations.li_app import ListRetriever as NodeRetriever

    return RetrieverQueryEngine.from_args(NodeRetriever(), llm=MockLLM(max_tokens=8), **kwargs)


def test_a_llama_index_query_engine_on_mock_llm_marks_every_node_used(li: Traced) -> None:
    response = mock_engine().query(QUESTION)
    record = li.only_record()
    assert record.response == str(response) == " ".join(["text"] * 8)
    assert [(c.id, c.retrieval, c.used) for c in record.chunks] == [
        (f"doc-{i}", 0, True) for i in range(4)
    ]
    assert root_of(li)["ragtrace.context.used"] == (0, 1, 2, 3)
    assert ingested(li).chunks == record.chunks


def test_nodes_a_postprocessor_filters_out_are_unused(li: Traced) -> None:
    """The retriever returns four nodes (scores 0.9 to 0.6); the similarity cutoff lets two
    reach the synthesizer's prompt."""
    from llama_index.core.postprocessor import SimilarityPostprocessor

    mock_engine(node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.75)]).query(
        QUESTION
    )
    record = li.only_record()
    assert [(c.id, c.used) for c in record.chunks] == [
        ("doc-0", True),
        ("doc-1", True),
        ("doc-2", False),
        ("doc-3", False),
    ]
    root = root_of(li)
    assert (root["ragtrace.context.used"], root["ragtrace.context.unused"]) == ((0, 1), (2, 3))
    (retriever,) = of_kind(li.spans(), "RETRIEVER")
    assert json.loads(str(retriever.attributes["gen_ai.retrieval.documents"]))[3]["id"] == "doc-3"


def test_a_streamed_llama_index_answer_is_marked_too(li: Traced) -> None:
    response = mock_engine(streaming=True).query(QUESTION)
    "".join(response.response_gen)
    record = li.only_record()
    assert [c.used for c in record.chunks] == [True] * 4


def test_ingest_of_spans_that_left_chunks_off_does_not_guess_the_marks(
    registry: Any, exporter: Any
) -> None:
    """A tracer provider whose attribute limit leaves chunks off the retriever span: the root's
    places name the record's chunks, which the spans no longer all show."""
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(span_limits=SpanLimits(max_span_attributes=20))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt = ragtrace.init(app="test-app", tracer_provider=provider, registry=registry)
    traced = Traced(rt, exporter)
    try:
        rag_chain().invoke(QUESTION, config=cfg(traced))
        record = traced.only_record()
        assert [c.used for c in record.chunks] == [True] * 4
        (retriever,) = of_kind(traced.spans(), "RETRIEVER")
        assert retriever.attributes["ragtrace.retrieval.documents_omitted"] > 0
        assert {c.used for c in ingested(traced).chunks} == {None}
    finally:
        rt.shutdown()
