"""Traceloop OpenLLMetry spans to records.

A request is the outermost OpenLLMetry span (``traceloop.span.kind`` workflow/task/agent/tool,
an LLM span with ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` or GenAI messages, or a
vector-store span with ``db.query.result`` events). From it:

- query: the root's ``traceloop.entity.input`` JSON (LangChain wraps it as ``{"inputs": ...}``;
  LlamaIndex writes the call's arguments, e.g. ``{"str_or_query_bundle": ...}``), looked up by
  ``QUERY_KEYS``; else the first retriever's input.
- chunks, retrievers in the order they ran (nested ones once):
  * LangChain retriever spans (``gen_ai.operation.name = vector_db_retrieve``): the
    ``{"documents": [{page_content, metadata}]}`` of ``traceloop.entity.output``. The id is
    not written there: it is taken from the same document (same text and metadata, one id
    only) serialised by LangChain in another span of the request (``format_docs``'s input);
    else from the metadata (``Config.chunk_id_keys``), like the score (``chunk_score_keys``).
  * LlamaIndex spans whose output is a list of ``NodeWithScore`` JSON strings
    (``{"node": {"id_", "text", "metadata"}, "score"}``). A later span whose input has
    ``nodes`` and whose output is again nodes is a node postprocessor (a reranker): its
    output replaces the chunks, as for OpenInference rerankers.
  * vector-store spans: one chunk per ``db.query.result`` event (``db.query.result.id``,
    ``.score``, ``.document``, ``.metadata``). A ``distance`` is not a similarity score: it is
    kept in the chunk's metadata as ``distance``, never turned into a score.
- response: the root's ``traceloop.entity.output`` (``{"outputs": ...}``, ``{"response": ...}``)
  by ``ANSWER_KEYS``; else the last LLM span's completion (``gen_ai.completion.N.content`` or
  ``gen_ai.output.messages``, read with the GenAI mapper's helpers).
- model: the last LLM span's response or request model (``unknown`` is no model).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ragtrace.ingest.mappers import common as cm
from ragtrace.ingest.mappers import genai as ga
from ragtrace.ingest.mappers.base import MappedRecord, build_record, parse_json
from ragtrace.ingest.spans import IngestSpan, TraceView
from ragtrace.model import Chunk

SPAN_KIND = "traceloop.span.kind"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
PROMPT, COMPLETION = "gen_ai.prompt", "gen_ai.completion"
VECTOR_RETRIEVE = "vector_db_retrieve"
QUERY_RESULT = "db.query.result"
_LC_DOCUMENT = ["langchain", "schema", "document", "Document"]


def is_openllmetry(span: IngestSpan) -> bool:
    """A span OpenLLMetry wrote: ``traceloop.*``, legacy prompt/completion, result events."""
    for key in span.attributes:
        if isinstance(key, str) and key.startswith(("traceloop.", PROMPT + ".", COMPLETION + ".")):
            return True
    return any(e.name == QUERY_RESULT for e in span.events)


def _request_span(span: IngestSpan) -> bool:
    return is_openllmetry(span) or ga.operation(span) is not None


def entity(span: IngestSpan, key: str, wrapper: str, keys: tuple[str, ...]) -> str | None:
    """Text in ``traceloop.entity.input/output``, unwrapping LangChain's ``inputs``/``outputs``."""
    parsed = cm.json_value(span, key)
    if parsed is None:
        return None
    if isinstance(parsed, Mapping) and wrapper in parsed:
        parsed = parsed[wrapper]
    return cm.find_text(parsed, keys)


def _is_inference(span: IngestSpan) -> bool:
    if ga.operation(span) in ga.INFERENCE_OPERATIONS or ga.OUTPUT_MESSAGES in span.attributes:
        return True
    return any(isinstance(k, str) and k.startswith(COMPLETION + ".") for k in span.attributes)


def _completion(span: IngestSpan) -> str | None:
    legacy = [
        (i.get("role") if isinstance(i.get("role"), str) else None, cm.text(i.get("content")))
        for i in cm.indexed(span.attributes, COMPLETION)
    ]
    return ga.last_text(legacy, ga.ASSISTANT) or ga.inference_answer(span)


class OpenLLMetryMapper:
    """Maps OpenLLMetry traces; see the module docstring."""

    convention = "openllmetry"

    def detects(self, view: TraceView) -> bool:
        return any(is_openllmetry(s) for s in view.spans)

    def map(self, view: TraceView) -> list[MappedRecord]:
        return cm.map_requests(view, _request_span, self._map_request)

    def _map_request(self, view: TraceView, root: IngestSpan) -> MappedRecord | None:
        spans = cm.request_spans(view, root)
        found = [(s, docs) for s in spans if (docs := _documents(s)) is not None]
        keep = {s.span_id for s in cm.outermost(view, [s for s, _ in found])}
        retrievals = [(s, docs) for s, docs in found if s.span_id in keep]
        chunks = _with_ids(_rank(retrievals), spans)
        inferences = [s for s in spans if _is_inference(s)]
        query = entity(root, ENTITY_INPUT, "inputs", cm.QUERY_KEYS)
        if query is None and retrievals:
            query = entity(retrievals[0][0], ENTITY_INPUT, "inputs", cm.QUERY_KEYS)
        response = entity(root, ENTITY_OUTPUT, "outputs", cm.ANSWER_KEYS)
        if response is None:
            response = cm.last_found(inferences, _completion)
        if not (retrievals or inferences or query or response):
            return None
        return build_record(
            view=view,
            root=root,
            convention=self.convention,
            query=query,
            chunks=chunks,
            response=response,
            model=cm.last_found(inferences, ga.inference_model),
            retrieved=bool(retrievals),
        )


def _rank(retrievals: list[tuple[IngestSpan, list[Chunk]]]) -> list[Chunk]:
    """Chunks in run order; a node postprocessor's output replaces what came before it."""
    chunks: list[Chunk] = []
    for span, docs in retrievals:
        parsed = cm.json_value(span, ENTITY_INPUT)
        if isinstance(parsed, Mapping) and "nodes" in parsed:
            chunks = []
        chunks.extend(docs)
    return chunks


def _documents(span: IngestSpan) -> list[Chunk] | None:
    """The chunks a retriever-like span returned, or None if it is not one."""
    source = cm.span_source(span, span.text("traceloop.entity.name"))
    events = [e for e in span.events if e.name == QUERY_RESULT]
    if events:
        return [c for e in events[: cm.MAX_DOCUMENTS] if (c := _event_chunk(e, source))]
    output = cm.json_value(span, ENTITY_OUTPUT)
    if ga.operation(span) == VECTOR_RETRIEVE:
        docs = output.get("documents") if isinstance(output, Mapping) else None
        if not isinstance(docs, list):
            return []
        return [
            c
            for d in docs[: cm.MAX_DOCUMENTS]
            if isinstance(d, Mapping)
            and (
                c := cm.make_chunk(
                    d.get("page_content"), d.get("id"), None, d.get("metadata"), source
                )
            )
        ]
    if isinstance(output, list) and output:
        nodes = [_node(item) for item in output[: cm.MAX_DOCUMENTS]]
        if all(n is not None for n in nodes):
            return [c for n in nodes if n is not None and (c := _node_chunk(n, source))]
    return None


def _node(item: Any) -> Mapping[str, Any] | None:
    """A ``NodeWithScore`` dict from one output item (a JSON string of one, or the dict)."""
    value = parse_json(item) if isinstance(item, str) else item
    if isinstance(value, Mapping) and isinstance(value.get("node"), Mapping):
        return value
    return None


def _node_chunk(scored: Mapping[str, Any], source: str | None) -> Chunk | None:
    node = scored["node"]
    return cm.make_chunk(
        node.get("text"), node.get("id_"), scored.get("score"), node.get("metadata"), source
    )


def _event_chunk(event: Any, source: str | None) -> Chunk | None:
    attrs = event.attributes
    meta = cm.metadata_dict(attrs.get(QUERY_RESULT + ".metadata"))
    distance = attrs.get(QUERY_RESULT + ".distance")
    if isinstance(distance, int | float) and not isinstance(distance, bool):
        meta.setdefault("distance", distance)
    return cm.make_chunk(
        attrs.get(QUERY_RESULT + ".document"),
        attrs.get(QUERY_RESULT + ".id"),
        attrs.get(QUERY_RESULT + ".score"),
        meta,
        source,
    )


def _with_ids(chunks: list[Chunk], spans: list[IngestSpan]) -> list[Chunk]:
    """Chunks without an id get the one LangChain serialised for the same document elsewhere
    in the request (same text and metadata, exactly one id), else keep None."""
    if all(c.id is not None for c in chunks):
        return chunks
    ids: dict[tuple[str, str], set[str]] = {}
    for span in spans:
        for key in (ENTITY_INPUT, ENTITY_OUTPUT):
            _collect_documents(cm.json_value(span, key), ids, 0)
    out = []
    for chunk in chunks:
        found = ids.get(_doc_key(chunk.text, chunk.metadata), set())
        if chunk.id is None and len(found) == 1:
            out.append(dataclasses.replace(chunk, id=next(iter(found))))
        else:
            out.append(chunk)
    return out


def _collect_documents(value: Any, ids: dict[tuple[str, str], set[str]], depth: int) -> None:
    if depth > 6:
        return
    if isinstance(value, list):
        for item in value[: cm.MAX_DOCUMENTS]:
            _collect_documents(item, ids, depth + 1)
    elif isinstance(value, Mapping):
        kwargs = value.get("kwargs")
        if value.get("id") == _LC_DOCUMENT and isinstance(kwargs, Mapping):
            doc_id, content = kwargs.get("id"), kwargs.get("page_content")
            if isinstance(doc_id, str) and isinstance(content, str):
                meta = cm.metadata_dict(kwargs.get("metadata"))
                ids.setdefault(_doc_key(content, meta), set()).add(doc_id)
            return
        for item in list(value.values())[: cm.MAX_DOCUMENTS]:
            _collect_documents(item, ids, depth + 1)


def _doc_key(text: str, metadata: Mapping[str, Any]) -> tuple[str, str]:
    return text, json.dumps(metadata, sort_keys=True, default=str)
