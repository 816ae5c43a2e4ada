"""OpenTelemetry GenAI semantic-convention spans to records.

A request is the outermost span with ``gen_ai.operation.name`` (``invoke_workflow``,
``invoke_agent``, or a lone ``retrieval`` / ``chat``). From it:

- query: the last user message of the root's ``gen_ai.input.messages`` (JSON list of
  ``{role, parts: [{type: "text", content}]}``); else the first retrieval span's
  ``gen_ai.retrieval.query.text`` (not one inside a tool call).
- chunks: each ``retrieval`` span's ``gen_ai.retrieval.documents`` (JSON list of
  ``{id, score, content?}``), retrievals in the order they ran (nested ones once). The
  convention does not carry chunk text by default; chunks without text are NOT put in
  ``record.chunks`` (evaluators would score empty text): their ids and scores go to
  ``record.attributes["ragtrace.retrieval.documents"]`` and ``chunk_text`` is named missing.
- response: the last assistant message of the root's ``gen_ai.output.messages``; else of the
  last ``chat`` / ``text_completion`` / ``generate_content`` span.
- model: that last inference span's ``gen_ai.response.model``, else ``gen_ai.request.model``
  (the placeholder ``unknown`` counts as absent).
- tool calls: each ``execute_tool`` span (``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments``, its status); retrievals inside one are tagged with it.
  ``llm_calls``: the inference spans. Conversation: ``gen_ai.conversation.id`` (and
  ``session.id`` / ``user.id`` where an app adds them), earlier turns from the root's
  ``gen_ai.input.messages`` (an agent given the whole chat); see ``agents``.

Content (messages, query text, documents) is opt-in in the convention: when it was not
captured the record carries what the spans have and names the rest in ``missing``. The message
readers here are shared with the OpenLLMetry mapper, which writes the same attributes
(``last_text`` with the OpenInference one too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace import _semconv as sc
from ragtrace._ingest.mappers import agents as ag
from ragtrace._ingest.mappers import common as cm
from ragtrace._ingest.mappers.base import MappedRecord
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._model import Chunk

OPERATION = sc.GEN_AI_OPERATION_NAME
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
INFERENCE_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
RETRIEVAL = sc.GEN_AI_OP_RETRIEVAL
TOOL = sc.GEN_AI_OP_EXECUTE_TOOL


def operation(span: IngestSpan) -> str | None:
    """The span's ``gen_ai.operation.name``, or None."""
    return span.text(OPERATION)


def message_list(span: IngestSpan, key: str) -> list[tuple[str | None, str | None]]:
    """``(role, text)`` of a ``gen_ai.input.messages``/``gen_ai.output.messages`` attribute."""
    parsed = cm.json_value(span, key)
    out: list[tuple[str | None, str | None]] = []
    if not isinstance(parsed, list):
        return out
    for message in parsed[: cm.MAX_DOCUMENTS]:
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        content = cm.content_text(message.get("parts", message.get("content")))
        out.append((role if isinstance(role, str) else None, content))
    return out


def last_text(
    items: list[tuple[str | None, str | None]], roles: frozenset[str | None]
) -> str | None:
    """Text of the last message whose role is in ``roles``."""
    for role, content in reversed(items):
        if role in roles and content is not None:
            return content
    return None


USER = frozenset({"user", "human"})
ASSISTANT = frozenset({"assistant", "ai", "model", None})


def inference_model(span: IngestSpan) -> str | None:
    """``gen_ai.response.model``, else ``gen_ai.request.model`` (``unknown`` is no model)."""
    return cm.model_name(span.attributes.get(sc.GEN_AI_RESPONSE_MODEL)) or cm.model_name(
        span.attributes.get(sc.GEN_AI_REQUEST_MODEL)
    )


def inference_answer(span: IngestSpan) -> str | None:
    """The last assistant text of the span's ``gen_ai.output.messages``."""
    return last_text(message_list(span, OUTPUT_MESSAGES), ASSISTANT)


def retrieval_documents(span: IngestSpan) -> list[Mapping[str, Any]]:
    """``gen_ai.retrieval.documents`` as a list of dicts (empty when absent or broken)."""
    parsed = cm.json_value(span, sc.GEN_AI_RETRIEVAL_DOCUMENTS)
    if not isinstance(parsed, list):
        return []
    return [d for d in parsed[: cm.MAX_DOCUMENTS] if isinstance(d, Mapping)]


def documents_to_chunks(
    docs: list[Mapping[str, Any]], source: str | None
) -> tuple[list[Chunk], list[dict[str, Any]]]:
    """Chunks of documents that carry text, and ``{id, score}`` of every document."""
    chunks: list[Chunk] = []
    refs: list[dict[str, Any]] = []
    for doc in docs:
        meta = cm.metadata_dict(doc.get("metadata"))
        refs.append(
            {
                "id": cm.chunk_id(doc.get("id"), meta),
                "score": cm.chunk_score(doc.get("score"), meta),
            }
        )
        chunk = cm.make_chunk(
            doc.get("content", doc.get("text")), doc.get("id"), doc.get("score"), meta, source
        )
        if chunk is not None:
            chunks.append(chunk)
    return chunks, refs


class GenAIMapper:
    """Maps OpenTelemetry GenAI traces; see the module docstring."""

    convention = "genai"

    def detects(self, view: TraceView) -> bool:
        return any(operation(s) is not None for s in view.spans)

    def map(self, view: TraceView) -> list[MappedRecord]:
        return cm.map_requests(view, lambda s: operation(s) is not None, self._map_request)

    def _map_request(self, view: TraceView, root: IngestSpan) -> MappedRecord | None:
        spans = cm.request_spans(view, root)
        retrievals = cm.outermost(view, [s for s in spans if operation(s) == RETRIEVAL])
        inferences = [s for s in spans if operation(s) in INFERENCE_OPERATIONS]
        tools = [_tool(s) for s in spans if operation(s) == TOOL and s is not root]
        query = last_text(message_list(root, INPUT_MESSAGES), USER)
        outside = [s for s in retrievals if not any(map(_is_tool, view.ancestors(s)))]
        asked = [cm.text(s.attributes.get(sc.GEN_AI_RETRIEVAL_QUERY_TEXT)) for s in outside]
        if query is None and asked:  # a retrieval's own query, unless a tool call asked it
            query = asked[0]
        chunks: list[Chunk] = []
        refs: list[dict[str, Any]] = []
        text_missing = False
        steps = []
        for span in retrievals:
            docs = retrieval_documents(span)
            found, span_refs = documents_to_chunks(docs, cm.span_source(span))
            refs.extend(span_refs)
            if len(found) < len(docs) or not docs:
                text_missing = True
            steps.append(
                (span, found, cm.text(span.attributes.get(sc.GEN_AI_RETRIEVAL_QUERY_TEXT)))
            )
        if not text_missing:  # never a partial list: ranks would no longer be the retriever's
            chunks = ag.tag_chunks(view, steps, tools, query)
        response = last_text(message_list(root, OUTPUT_MESSAGES), ASSISTANT)
        if response is None:
            response = cm.last_found(inferences, inference_answer)
        seen = [
            (ag.prompt_text(message_list(s, INPUT_MESSAGES)), inference_answer(s))
            for s in inferences
        ]
        chunks = ag.mark_used(chunks, seen, response)
        if not (retrievals or inferences or tools or query or response):
            return None
        attributes = {cm.RETRIEVAL_DOCUMENTS_ATTR: refs} if refs and not chunks else None
        given = cm.json_value(root, INPUT_MESSAGES)
        requested = [
            c for s in inferences for c in ag.requested_in(cm.json_value(s, OUTPUT_MESSAGES))
        ]
        return ag.turn_record(
            view,
            root,
            spans,
            self.convention,
            query=query,
            asked=asked,
            given=given,
            returned=None,
            chunks=chunks,
            response=response,
            model=cm.last_found(inferences, inference_model),
            retrieved=bool(retrievals),
            attributes=attributes,
            tool_calls=ag.tool_calls(tools, requested),
            llm_calls=len(inferences),
        )


def _is_tool(span: IngestSpan) -> bool:
    return operation(span) == TOOL


def _tool(span: IngestSpan) -> ag.ToolSpan:
    """An ``execute_tool`` span: ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and
    ``gen_ai.tool.call.arguments`` (opt-in content), its status."""
    attrs = span.attributes
    return ag.ToolSpan(
        span,
        cm.text(attrs.get(sc.GEN_AI_TOOL_NAME)) or span.name or "tool",
        arguments=cm.text(attrs.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)),
        call_id=cm.text(attrs.get(sc.GEN_AI_TOOL_CALL_ID)),
    )
