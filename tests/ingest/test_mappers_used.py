"""Which chunks reached the answering LLM call, read from other instrumentations' spans: the
LLM spans' input messages (OpenInference ``llm.input_messages``, GenAI
``gen_ai.input.messages``, OpenLLMetry ``gen_ai.prompt.N``), as capture reads the prompts."""

from __future__ import annotations

import json
from typing import Any

from ragtrace._ingest.spans import IngestSpan
from tests.ingest.test_mappers_odd import records, span

QUERY = "How long do refunds take?"
REWRITTEN = "refund processing time in days"
ANSWER = "Refunds take 5 days and go back to the card."
DOCS = {
    "a": "Refunds take 5 days.",
    "b": "Our office is closed on Sundays.",
    "c": "Credits go back to the card used to pay.",
    "d": "Gift cards cannot be exchanged.",
}


def oi(kind: str, parent: IngestSpan | None, name: str, **attrs: Any) -> IngestSpan:
    return span({"openinference.span.kind": kind, **attrs}, parent, name=name)


def oi_retriever(parent: IngestSpan, asked: str, ids: list[str]) -> IngestSpan:
    attrs: dict[str, Any] = {"input.value": asked}
    for i, doc_id in enumerate(ids):
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
        attrs[f"retrieval.documents.{i}.document.content"] = DOCS[doc_id]
    return oi("RETRIEVER", parent, "VectorStoreRetriever", **attrs)


def oi_llm(parent: IngestSpan, prompt: list[tuple[str, str]] | None, output: str) -> IngestSpan:
    attrs: dict[str, Any] = {
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": output,
    }
    for i, (role, content) in enumerate(prompt or ()):
        attrs[f"llm.input_messages.{i}.message.role"] = role
        attrs[f"llm.input_messages.{i}.message.content"] = content
    return oi("LLM", parent, "ChatOpenAI", **attrs)


def corrective_turn(final_prompt: list[tuple[str, str]] | None) -> list[IngestSpan]:
    """A corrective RAG as the OpenInference LangChain instrumentation writes it: retrieve,
    grade each document, rewrite, retrieve again, grade, answer from the kept ones."""
    root = oi("CHAIN", None, "LangGraph", **{"input.value": QUERY, "output.value": ANSWER})
    spans = [root, oi_retriever(root, QUERY, ["a", "b"])]
    for doc_id, verdict in (("a", "yes"), ("b", "no")):
        spans.append(oi_llm(root, [("user", f"Relevant? {DOCS[doc_id]}\n{QUERY}")], verdict))
    spans.append(oi_llm(root, [("user", f"Rewrite: {QUERY}")], REWRITTEN))
    spans.append(oi_retriever(root, REWRITTEN, ["c", "d"]))
    for doc_id, verdict in (("c", "yes"), ("d", "no")):
        spans.append(oi_llm(root, [("user", f"Relevant? {DOCS[doc_id]}\n{REWRITTEN}")], verdict))
    spans.append(oi_llm(root, final_prompt, ANSWER))
    return spans


def test_openinference_marks_the_chunks_the_answering_call_was_given() -> None:
    final = [("system", f"Context:\n{DOCS['a']}\n\n{DOCS['c']}"), ("user", REWRITTEN)]
    [mapped] = records(*corrective_turn(final))
    record = mapped.record
    assert (record.query, record.response, record.llm_calls) == (QUERY, ANSWER, 6)
    assert [(c.id, c.retrieval, c.query, c.used) for c in record.chunks] == [
        ("a", 0, None, True),
        ("b", 0, None, False),
        ("c", 1, REWRITTEN, True),
        ("d", 1, REWRITTEN, False),
    ]


def test_an_llm_span_without_its_input_messages_leaves_the_chunks_unknown() -> None:
    """The instrumentation hid the prompt (``OPENINFERENCE_HIDE_INPUT_MESSAGES``)."""
    [mapped] = records(*corrective_turn(None))
    assert [c.used for c in mapped.record.chunks] == [None] * 4


def test_a_json_input_value_is_not_read_as_the_prompt() -> None:
    """Only text is searched: JSON escapes a chunk's newlines and quotes."""
    spans = corrective_turn(None)
    final = spans[-1]
    final.attributes.update(
        {
            "input.value": json.dumps({"messages": [["system", f"Context:\n{DOCS['a']}"]]}),
            "input.mime_type": "application/json",
        }
    )
    [mapped] = records(*spans)
    assert [c.used for c in mapped.record.chunks] == [None] * 4
    final.attributes.update({"input.value": DOCS["a"], "input.mime_type": "text/plain"})
    [mapped] = records(*spans)
    assert [c.used for c in mapped.record.chunks] == [True, False, False, False]


def test_genai_input_messages_mark_the_chunks_used() -> None:
    def genai(op: str, parent: IngestSpan | None = None, **attrs: Any) -> IngestSpan:
        return span({"gen_ai.operation.name": op, **attrs}, parent, name=op)

    def messages(role: str, text: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    root = genai("invoke_workflow", **{"gen_ai.input.messages": messages("user", QUERY)})
    docs = [{"id": k, "content": DOCS[k]} for k in ("a", "b")]
    retrieval = genai("retrieval", root, **{"gen_ai.retrieval.documents": json.dumps(docs)})
    chat = genai(
        "chat",
        root,
        **{
            "gen_ai.input.messages": messages("user", f"{DOCS['b']}\n\n{QUERY}"),
            "gen_ai.output.messages": messages("assistant", ANSWER),
        },
    )
    [mapped] = records(root, retrieval, chat)
    assert [(c.id, c.used) for c in mapped.record.chunks] == [("a", False), ("b", True)]


def test_openllmetry_legacy_prompts_mark_the_chunks_used() -> None:
    root = span(
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"inputs": {"question": QUERY}}),
        },
        name="rag.workflow",
    )
    output = {"documents": [{"page_content": DOCS[k], "metadata": {"id": k}} for k in "ab"]}
    retriever = span(
        {
            "traceloop.span.kind": "task",
            "gen_ai.operation.name": "vector_db_retrieve",
            "traceloop.entity.input": json.dumps({"inputs": {"query": QUERY}}),
            "traceloop.entity.output": json.dumps(output),
        },
        root,
        name="VectorStoreRetriever.task",
    )
    llm = span(
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": f"{DOCS['a']}\n\n{QUERY}",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": ANSWER,
        },
        root,
        name="openai.chat",
    )
    [mapped] = records(root, retriever, llm)
    assert [(c.id, c.used) for c in mapped.record.chunks] == [("a", True), ("b", False)]
