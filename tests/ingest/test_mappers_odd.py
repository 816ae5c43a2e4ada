"""Mappers on odd traces: no retriever, several requests, an HTTP span on top, rerankers,
broken JSON, wrong types, huge values, orphans and cycles (GenAI and OpenLLMetry specifics are
in ``test_mappers_conventions``).

Spans are built directly as ``IngestSpan`` values (what the decoder hands the mappers).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import pytest

from ragtrace._ingest.mappers import MAPPERS, map_trace, select
from ragtrace._ingest.mappers.base import MappedRecord
from ragtrace._ingest.mappers.common import MAX_TEXT_CHARS
from ragtrace._ingest.spans import STATUS_ERROR, IngestEvent, IngestSpan, TraceView

TRACE = "0af7651916cd43dd8448eb211c80319c"
RESOURCE = {"service.name": "support-bot"}
_ids = itertools.count(1)
_clock = itertools.count(1)


def span(
    attrs: Mapping[str, Any],
    parent: IngestSpan | None = None,
    *,
    name: str = "step",
    parent_id: str | None = None,
    span_id: str | None = None,
    events: tuple[IngestEvent, ...] = (),
    status_code: int = 0,
) -> IngestSpan:
    start = next(_clock) * 1000
    return IngestSpan(
        trace_id=TRACE,
        span_id=span_id or f"{next(_ids):016x}",
        parent_span_id=parent.span_id if parent else parent_id,
        name=name,
        start_ns=start,
        end_ns=start + 500,
        attributes=dict(attrs),
        events=events,
        status_code=status_code,
        resource=RESOURCE,
    )


def oi_chain(query: Any, answer: Any, parent: IngestSpan | None = None, **kw: Any) -> IngestSpan:
    attrs = {"openinference.span.kind": "CHAIN", "input.value": query, "output.value": answer}
    return span(attrs, parent, name="chain", **kw)


def oi_retriever(parent: IngestSpan, docs: list[tuple[Any, Any, Any]]) -> IngestSpan:
    attrs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": "q"}
    for i, (doc_id, text, score) in enumerate(docs):
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
        attrs[f"retrieval.documents.{i}.document.content"] = text
        attrs[f"retrieval.documents.{i}.document.score"] = score
    return span(attrs, parent, name="Retriever")


def records(*spans: IngestSpan) -> list[Any]:
    return map_trace(TraceView(spans))


# -- OpenInference -----------------------------------------------------------------------------


def test_no_retriever_names_chunks_missing_but_not_chunk_text() -> None:
    root = oi_chain("hi?", "hello")
    llm = span({"openinference.span.kind": "LLM", "llm.model_name": "m-1"}, root)
    [mapped] = records(root, llm)
    assert mapped.missing == ("chunks",)
    assert (mapped.record.query, mapped.record.response, mapped.record.model) == (
        "hi?",
        "hello",
        "m-1",
    )
    assert mapped.record.app == "support-bot"


def test_http_span_on_top_and_two_requests_in_one_trace() -> None:
    http = span({"http.method": "POST", "http.route": "/chat"}, name="POST /chat")
    first = oi_chain("first?", "one", http)
    r1 = oi_retriever(first, [("a", "text a", 0.9)])
    second = oi_chain("second?", "two", http)
    r2 = oi_retriever(second, [("b", "text b", 0.8)])
    out = records(http, first, r1, second, r2)
    assert [m.record.span_id for m in out] == [first.span_id, second.span_id]
    assert [m.record.query for m in out] == ["first?", "second?"]
    assert [[c.id for c in m.record.chunks] for m in out] == [["a"], ["b"]]


def test_json_inputs_outputs_and_several_retrievers_in_run_order() -> None:
    root = oi_chain(
        json.dumps({"query_bundle": {"query_str": "deep?"}}),
        json.dumps({"answer": "yes", "sources": []}),
        **{},
    )
    root = IngestSpan(
        **{
            **_fields(root),
            "attributes": {
                **root.attributes,
                "input.mime_type": "application/json",
                "output.mime_type": "application/json",
            },
        }
    )
    r1 = oi_retriever(root, [("a", "A", 0.5), ("b", "B", 0.4)])
    inner = oi_retriever(r1, [("dup", "DUP", 0.1)])  # nested: not counted again
    r2 = oi_retriever(root, [("c", "C", 0.9)])
    [mapped] = records(root, r1, inner, r2)
    assert mapped.record.query == "deep?" and mapped.record.response == "yes"
    assert [c.id for c in mapped.record.chunks] == ["a", "b", "c"]
    assert [c.score for c in mapped.record.chunks] == [0.5, 0.4, 0.9]


def _fields(s: IngestSpan) -> dict[str, Any]:
    return {f: getattr(s, f) for f in IngestSpan.__dataclass_fields__}


def test_reranker_output_replaces_the_retrieved_chunks() -> None:
    root = oi_chain("q?", "a")
    oi_retriever(root, [("a", "A", 0.5), ("b", "B", 0.4)])
    retriever = oi_retriever(root, [("a", "A", 0.5), ("b", "B", 0.4)])
    reranker = span(
        {
            "openinference.span.kind": "RERANKER",
            "reranker.output_documents.0.document.id": "b",
            "reranker.output_documents.0.document.content": "B",
            "reranker.output_documents.0.document.score": 0.99,
        },
        root,
        name="Rerank",
    )
    [mapped] = records(root, retriever, reranker)
    assert [(c.id, c.score, c.source) for c in mapped.record.chunks] == [("b", 0.99, "Rerank")]


def test_broken_json_wrong_types_and_huge_values_never_raise() -> None:
    huge = "x" * (5 * MAX_TEXT_CHARS)
    root = span(
        {
            "openinference.span.kind": "CHAIN",
            "input.value": '{"query": "unterminated',
            "input.mime_type": "application/json",
            "output.value": huge,
        }
    )
    retriever = span(
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": 12345,  # not text: no chunk
            "retrieval.documents.1.document.content": "ok",
            "retrieval.documents.1.document.score": "high",  # not a number: no score
            "retrieval.documents.1.document.metadata": "{not json",
            "retrieval.documents.1.document.id": ["a", "list"],
            "retrieval.documents.99999999.document.content": "index out of range",
        },
        root,
    )
    llm = span({"openinference.span.kind": 7, "llm.model_name": {"a": 1}}, root)
    [mapped] = records(root, retriever, llm)
    record = mapped.record
    assert record.query is None and len(record.response or "") == MAX_TEXT_CHARS
    assert [(c.text, c.id, c.score, dict(c.metadata)) for c in record.chunks] == [
        ("ok", None, None, {})
    ]
    assert mapped.missing == ("query",)


def test_orphans_whose_parents_never_arrive_become_their_own_requests() -> None:
    lost = "feedfacefeedface"
    retriever = span(
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "orphan q?",
            "retrieval.documents.0.document.content": "T",
        },
        parent_id=lost,
    )
    [mapped] = records(retriever)
    assert mapped.record.span_id == retriever.span_id
    assert mapped.record.query == "orphan q?"
    assert mapped.missing == ("response",)


def test_cycles_in_parent_links_do_not_hang_or_raise() -> None:
    a = span(
        {"openinference.span.kind": "CHAIN", "input.value": "a"},
        span_id="a" * 16,
        parent_id="b" * 16,
    )
    b = span(
        {"openinference.span.kind": "CHAIN", "input.value": "b"},
        span_id="b" * 16,
        parent_id="a" * 16,
    )
    self_loop = span(
        {"openinference.span.kind": "CHAIN", "input.value": "c"},
        span_id="c" * 16,
        parent_id="c" * 16,
    )
    assert records(a, b, self_loop) == []


def test_error_status_on_the_root() -> None:
    root = span(
        {"openinference.span.kind": "CHAIN", "input.value": "q?"},
        status_code=STATUS_ERROR,
        events=(
            IngestEvent(
                "exception", 1, {"exception.type": "ValueError", "exception.message": "boom"}
            ),
        ),
    )
    [mapped] = records(root)
    assert (mapped.record.status, mapped.record.error) == ("error", "ValueError: boom")


# -- ragtrace's own ----------------------------------------------------------------------------


def test_own_spans_app_source_and_status() -> None:
    root = span(
        {
            "openinference.span.kind": "CHAIN",
            "ragtrace.app": "shop",
            "ragtrace.request.status": "abandoned",
            "input.value": "q?",
            "gen_ai.request.model": "m-2",
        }
    )
    retriever = oi_retriever(root, [("a", "A", 0.5)])
    retriever = IngestSpan(
        **{
            **_fields(retriever),
            "attributes": {
                **retriever.attributes,
                "ragtrace.retrieval.source": "context/FixedRetriever",
            },
        }
    )
    view = TraceView([root, retriever])
    assert select(view).convention == "ragtrace"  # type: ignore[union-attr]
    [mapped] = map_trace(view)
    assert (mapped.record.app, mapped.record.status, mapped.record.model) == (
        "shop",
        "abandoned",
        "m-2",
    )
    assert mapped.record.chunks[0].source == "context/FixedRetriever"
    assert mapped.missing == ("response",)


def test_detection_order_prefers_the_specific_convention() -> None:
    assert [m.convention for m in MAPPERS] == ["ragtrace", "openinference", "openllmetry", "genai"]
    ol = span({"traceloop.span.kind": "workflow", "gen_ai.operation.name": "invoke_agent"})
    assert select(TraceView([ol])).convention == "openllmetry"  # type: ignore[union-attr]
    assert select(TraceView([span({"http.method": "GET"})])) is None
    assert map_trace(TraceView([span({"http.method": "GET"})])) == []
    assert map_trace(TraceView([])) == []


JUNK: list[Any] = [
    None,
    0,
    -1.5,
    float("nan"),
    True,
    "",
    "{",
    "[1, 2",
    '"str"',
    "null",
    ["a", 1],
    {"k": {"k": {}}},
    "x" * 100_000,
    json.dumps([{"node": 1}]),
]
KEYS = [
    "openinference.span.kind",
    "input.value",
    "output.value",
    "input.mime_type",
    "retrieval.documents.0.document.content",
    "retrieval.documents.0.document.metadata",
    "llm.output_messages.0.message.content",
    "llm.invocation_parameters",
    "gen_ai.operation.name",
    "gen_ai.retrieval.documents",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "gen_ai.completion.0.content",
    "ragtrace.app",
    "ragtrace.request.status",
    "reranker.output_documents.0.document.content",
]


@pytest.mark.parametrize("junk", JUNK, ids=range(len(JUNK)))
def test_every_mapper_survives_junk_in_every_attribute(junk: Any) -> None:
    kinds = ["CHAIN", "RETRIEVER", "LLM", "RERANKER"]
    ops = ["retrieval", "chat", "invoke_workflow", "vector_db_retrieve"]
    for n, key in enumerate(KEYS):
        root = span(
            {
                "openinference.span.kind": kinds[n % 4],
                "gen_ai.operation.name": ops[n % 4],
                "traceloop.span.kind": "workflow",
                key: junk,
            }
        )
        child = span(
            {
                key: junk,
                "gen_ai.operation.name": ops[(n + 1) % 4],
                "openinference.span.kind": kinds[(n + 1) % 4],
            },
            root,
            events=(IngestEvent("db.query.result", 0, {key: junk}),),
        )
        view = TraceView([root, child])
        for mapper in MAPPERS:
            for mapped in mapper.map(view):
                assert mapped.record.trace_id == TRACE


def test_one_request_that_cannot_be_mapped_costs_only_itself() -> None:
    from ragtrace._ingest.mappers import common
    from ragtrace._ingest.mappers.base import RequestsFailed, build_record

    first = span({"openinference.span.kind": "CHAIN", "input.value": "q1"})
    second = span({"openinference.span.kind": "CHAIN", "input.value": "boom"})
    view = TraceView([first, second])

    def map_one(view: TraceView, root: IngestSpan) -> MappedRecord:
        if root.attributes["input.value"] == "boom":
            raise ValueError("odd request")
        return build_record(view=view, root=root, convention="t", query="q1", chunks=None,
                            response=None)  # fmt: skip

    with pytest.raises(RequestsFailed) as failed:
        common.map_requests(view, lambda s: True, map_one)
    assert [m.record.query for m in failed.value.records] == ["q1"]
    assert [str(e) for e in failed.value.errors] == ["odd request"]
