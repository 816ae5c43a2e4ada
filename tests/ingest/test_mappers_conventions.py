"""GenAI and OpenLLMetry specifics on hand-built spans: content not captured, documents with
and without text, vector-store ``db.query.result`` events, legacy completions, node
postprocessors."""

from __future__ import annotations

import json
from typing import Any

from ragtrace._ingest.mappers import map_trace, select
from ragtrace._ingest.mappers.common import RETRIEVAL_DOCUMENTS_ATTR
from ragtrace._ingest.spans import IngestEvent, IngestSpan, TraceView
from tests.ingest.test_mappers_odd import records, span

# -- GenAI -------------------------------------------------------------------------------------


def genai(op: str, parent: IngestSpan | None = None, **attrs: Any) -> IngestSpan:
    return span({"gen_ai.operation.name": op, **attrs}, parent, name=op)


def test_genai_documents_with_content_become_chunks() -> None:
    root = genai(
        "invoke_agent",
        **{
            "gen_ai.input.messages": json.dumps(
                [
                    {"role": "system", "parts": [{"type": "text", "content": "be nice"}]},
                    {"role": "user", "parts": [{"type": "text", "content": "why?"}]},
                ]
            )
        },
    )
    docs = [{"id": "d1", "score": 0.7, "content": "because"}, {"id": "d2", "content": "so"}]
    retrieval = genai("retrieval", root, **{"gen_ai.retrieval.documents": json.dumps(docs)})
    chat = genai(
        "chat",
        root,
        **{
            "gen_ai.request.model": "unknown",
            "gen_ai.response.model": "unknown",
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "because so"}]}]
            ),
        },
    )
    [mapped] = records(root, retrieval, chat)
    record = mapped.record
    assert (record.query, record.response, record.model) == ("why?", "because so", None)
    assert [(c.id, c.score, c.text) for c in record.chunks] == [
        ("d1", 0.7, "because"),
        ("d2", None, "so"),
    ]
    assert mapped.missing == () and record.attributes == {}


def test_genai_chunks_without_text_are_kept_as_references_only() -> None:
    root = genai("invoke_workflow")
    docs = [{"id": "d1", "score": 0.7, "content": "has text"}, {"id": "d2", "score": 0.5}]
    retrieval = genai(
        "retrieval",
        root,
        **{"gen_ai.retrieval.documents": json.dumps(docs), "gen_ai.retrieval.query.text": "q?"},
    )
    [mapped] = records(root, retrieval)
    assert mapped.record.chunks == () and mapped.record.query == "q?"
    assert mapped.record.attributes == {
        RETRIEVAL_DOCUMENTS_ATTR: [{"id": "d1", "score": 0.7}, {"id": "d2", "score": 0.5}]
    }
    assert mapped.missing == ("chunks", "chunk_text", "response")


# -- OpenLLMetry -------------------------------------------------------------------------------


def test_openllmetry_vector_store_events_and_legacy_completion() -> None:
    root = span(
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"inputs": {"question": "where?"}}),
        },
        name="rag.workflow",
    )
    hits = tuple(
        IngestEvent(
            "db.query.result",
            1,
            {
                "db.query.result.id": doc_id,
                "db.query.result.distance": dist,
                "db.query.result.document": text,
                "db.query.result.metadata": json.dumps({"page": n}),
            },
        )
        for n, (doc_id, dist, text) in enumerate([("p1", 0.1, "here"), ("p2", 0.3, "there")])
    )
    query = span({"db.system": "chroma"}, root, name="chroma.query", events=hits)
    llm = span(
        {
            "gen_ai.request.model": "gpt-x",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "where?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "here",
        },
        root,
        name="openai.chat",
    )
    view = TraceView([root, query, llm])
    assert select(view).convention == "openllmetry"  # type: ignore[union-attr]
    [mapped] = map_trace(view)
    record = mapped.record
    assert (record.query, record.response, record.model) == ("where?", "here", "gpt-x")
    # A distance is not a similarity: kept in the metadata, never turned into a score.
    assert [(c.id, c.score, c.text, dict(c.metadata)) for c in record.chunks] == [
        ("p1", None, "here", {"page": 0, "distance": 0.1}),
        ("p2", None, "there", {"page": 1, "distance": 0.3}),
    ]


def test_openllmetry_node_postprocessor_replaces_retrieved_nodes() -> None:
    def nodes(*items: tuple[str, float]) -> str:
        return json.dumps(
            [
                json.dumps({"node": {"id_": i, "text": i.upper(), "metadata": {}}, "score": s})
                for i, s in items
            ]
        )

    root = span(
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"str_or_query_bundle": "q?"}),
            "traceloop.entity.output": json.dumps({"response": "A!"}),
        }
    )
    retriever = span(
        {
            "traceloop.span.kind": "task",
            "traceloop.entity.name": "R.task",
            "traceloop.entity.output": nodes(("a", 0.2), ("b", 0.1)),
        },
        root,
    )
    rerank = span(
        {
            "traceloop.span.kind": "task",
            "traceloop.entity.name": "Rerank.task",
            "traceloop.entity.input": json.dumps({"nodes": [], "query_bundle": None}),
            "traceloop.entity.output": nodes(("b", 0.9)),
        },
        root,
    )
    [mapped] = records(root, retriever, rerank)
    assert [(c.id, c.score, c.text, c.source) for c in mapped.record.chunks] == [
        ("b", 0.9, "B", "Rerank")
    ]
    assert (mapped.record.query, mapped.record.response) == ("q?", "A!")
