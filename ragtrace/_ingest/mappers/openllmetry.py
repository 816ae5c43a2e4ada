"""Traceloop OpenLLMetry spans to records.

A request is the outermost OpenLLMetry span (``traceloop.span.kind`` workflow/task/agent/tool,
an LLM span with ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` or GenAI messages, or a
vector-store span with ``db.query.result`` events). From it:

- query: the root's ``traceloop.entity.input`` JSON (LangChain wraps it as ``{"inputs": ...}``;
  LlamaIndex writes the call's arguments, e.g. ``{"str_or_query_bundle": ...}``), looked up by
  ``QUERY_KEYS``, else the last user message of its ``messages``. A LangGraph agent's root is a
  bare GenAI ``invoke_agent`` span: its workflow span below shows the input and output. Else
  the first retriever's input (not one inside a tool call); else, for an agent, the user
  message of its first LLM call.
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
  by ``ANSWER_KEYS``, else its last message when it is the assistant's and calls no tool;
  else (when it holds no messages) the last LLM span's completion
  (``gen_ai.completion.N.content`` or ``gen_ai.output.messages``, read with the GenAI mapper's
  helpers).
- tool calls: ``tool`` spans (``execute_tool``; LlamaIndex's agent steps with ``tool.name``):
  arguments from LangChain's ``inputs`` (or ``tool.arguments``), call id from its
  ``tool_call_id`` (or the result's ``tool_id``), status from the span or the tool's own error
  result; a tool's ``ToolMessage`` artifact documents are chunks when no retriever below it
  gave any. ``llm_calls``: the LLM spans. Conversation: ``gen_ai.conversation.id``, the
  ``traceloop.association.properties.{thread_id,user_id}`` and the workflow's messages; see
  ``agents``.
- model: the last LLM span's response or request model (``unknown`` is no model).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ragtrace import _semconv as sc
from ragtrace._ingest.mappers import agents as ag
from ragtrace._ingest.mappers import common as cm
from ragtrace._ingest.mappers import genai as ga
from ragtrace._ingest.mappers import messages as msg
from ragtrace._ingest.mappers.base import MappedRecord, parse_json
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._model import Chunk

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
    """Text in ``traceloop.entity.input/output``, unwrapping LangChain's ``inputs``/``outputs``;
    else from its messages (an input's last user message, an output's final answer)."""
    parsed = _unwrapped(span, key, wrapper)
    if parsed is None:
        return None
    final = msg.final_answer if key == ENTITY_OUTPUT else msg.last_user_text
    return cm.find_text(parsed, keys, from_messages=final)


def _unwrapped(span: IngestSpan, key: str, wrapper: str) -> Any:
    parsed = cm.json_value(span, key)
    if isinstance(parsed, Mapping) and wrapper in parsed:
        return parsed[wrapper]
    return parsed


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
        top = _entity_span(root, spans)
        tools = [_tool(s) for s in spans if _is_tool(s) and s is not root]
        found = [(s, docs) for s in spans if (docs := _documents(s)) is not None]
        keep = {s.span_id for s in cm.outermost(view, [s for s, _ in found])}
        retrievals = [(s, docs) for s, docs in found if s.span_id in keep]
        above = {a.span_id for s, docs in found if docs for a in view.ancestors(s)}
        for tool in tools:
            docs = ag.artifact_chunks(_tool_message(tool.span), tool.name)
            if docs and tool.span.span_id not in above:
                retrievals.append((tool.span, docs))
        retrievals.sort(key=lambda r: (r[0].start_ns, r[0].end_ns))
        inferences = [s for s in spans if _is_inference(s)]
        query = entity(top, ENTITY_INPUT, "inputs", cm.QUERY_KEYS) or ga.last_text(
            ga.message_list(root, ga.INPUT_MESSAGES), ga.USER
        )
        outside = [s for s, _ in retrievals if not any(map(_is_tool, (s, *view.ancestors(s))))]
        asked = [entity(s, ENTITY_INPUT, "inputs", cm.QUERY_KEYS) for s in outside]
        if query is None and asked:
            query = asked[0]
        if query is None and tools:  # an agent: the user message of its first LLM call
            prompts = (ga.last_text(_prompt(s), ga.USER) for s in inferences)
            query = next((q for q in prompts if q is not None), None)
        returned = _unwrapped(top, ENTITY_OUTPUT, "outputs")
        response = entity(top, ENTITY_OUTPUT, "outputs", cm.ANSWER_KEYS)
        if response is None and msg.messages_of(returned) is None:
            response = cm.last_found(inferences, _completion)
        if not (retrievals or inferences or tools or query or response):
            return None
        requested = [
            *(c for s in inferences for c in _requested(s)),
            *(c for s in spans if s is not root for c in _node_calls(s)),
        ]
        calls = ag.tool_calls(tools, requested)
        arguments = {t.span.span_id: c.arguments for t, c in zip(tools, calls, strict=True)}
        steps = [(s, docs, _asked(s, arguments)) for s, docs in _rank(retrievals)]
        chunks = ag.tag_chunks(view, _with_ids(steps, spans), tools, query)
        seen = [(ag.prompt_text(_prompt(s)), _completion(s)) for s in inferences]
        chunks = ag.mark_used(chunks, seen, response)
        given = _unwrapped(top, ENTITY_INPUT, "inputs")
        if given is None:
            given = cm.json_value(root, ga.INPUT_MESSAGES)
        return ag.turn_record(
            view,
            root,
            spans,
            self.convention,
            query=query,
            asked=asked,
            given=given,
            returned=returned,
            chunks=chunks,
            response=response,
            model=cm.last_found(inferences, ga.inference_model),
            retrieved=bool(retrievals),
            tool_calls=calls,
            llm_calls=len(inferences),
        )


def _entity_span(root: IngestSpan, spans: list[IngestSpan]) -> IngestSpan:
    """The span whose ``traceloop.entity.*`` shows the request's input and output: the root,
    or under a bare GenAI root (``invoke_agent``, as OpenLLMetry writes for a LangGraph agent)
    its outermost workflow or agent span."""
    if ENTITY_INPUT in root.attributes or ENTITY_OUTPUT in root.attributes:
        return root
    for span in spans:
        if span is not root and span.text(SPAN_KIND) in ("workflow", "agent"):
            return span
    return root


# -- tools ----------------------------------------------------------------------------------------


def _is_tool(span: IngestSpan) -> bool:
    """A tool call: LangChain's ``tool`` spans, GenAI ``execute_tool``, and LlamaIndex agent
    workflow steps that name their tool (``tool.name``)."""
    return (
        span.text(SPAN_KIND) == "tool"
        or ga.operation(span) == sc.GEN_AI_OP_EXECUTE_TOOL
        or span.text(sc.TOOL_NAME) is not None
    )


def _prompt(span: IngestSpan) -> list[tuple[str | None, str | None]]:
    """An LLM span's prompt: ``gen_ai.input.messages``, else legacy ``gen_ai.prompt.N``."""
    found = ga.message_list(span, ga.INPUT_MESSAGES)
    if found:
        return found
    return [
        (i.get("role") if isinstance(i.get("role"), str) else None, cm.text(i.get("content")))
        for i in cm.indexed(span.attributes, PROMPT)
    ]


def _tool_message(span: IngestSpan) -> Mapping[str, Any] | None:
    return ag.tool_message(cm.json_value(span, ENTITY_OUTPUT))


def _tool(span: IngestSpan) -> ag.ToolSpan:
    """A tool span: LangChain's tool input (``input_str``, the call's ``inputs`` and, in
    ``kwargs``, its ``tool_call_id``) and its ``ToolMessage`` result; LlamaIndex's
    ``tool.name``, ``tool.arguments`` and ``ToolCallResult`` (``tool_id``, ``tool_output``)."""
    name = (
        cm.text(span.attributes.get(sc.GEN_AI_TOOL_NAME))
        or cm.text(span.attributes.get(sc.TOOL_NAME))
        or span.text("traceloop.entity.name")
        or span.name
        or "tool"
    )
    given = cm.json_value(span, ENTITY_INPUT)
    if not isinstance(given, Mapping):
        given = {}
    arguments = ag.arguments_text(given["inputs"]) if "inputs" in given else None
    if arguments is None:
        arguments = ag.arguments_text(span.attributes.get("tool.arguments"))
    if arguments is None:  # GenAI's own attribute, unless it is OpenLLMetry's whole input
        raw = span.text(sc.GEN_AI_TOOL_CALL_ARGUMENTS)
        wrapped = cm.json_value(span, sc.GEN_AI_TOOL_CALL_ARGUMENTS)
        if not (isinstance(wrapped, Mapping) and "input_str" in wrapped):
            arguments = cm.text(raw)
    kwargs = given.get("kwargs")
    call_id = kwargs.get("tool_call_id") if isinstance(kwargs, Mapping) else None
    result = cm.json_value(span, ENTITY_OUTPUT)
    if call_id is None and isinstance(result, Mapping):
        call_id = result.get("tool_id")
    result_id, failure = ag.tool_result(ag.tool_message(result))
    return ag.ToolSpan(
        span,
        name,
        arguments=arguments,
        fallback=cm.text(given.get("input_str")),
        call_id=cm.text(span.attributes.get(sc.GEN_AI_TOOL_CALL_ID))
        or cm.text(call_id)
        or result_id,
        failure=failure or ag.tool_output_failure(result),
    )


def _requested(span: IngestSpan) -> list[ag.Requested]:
    """Tool calls an LLM span's completion asked for: ``gen_ai.output.messages`` parts, or
    the legacy ``gen_ai.completion.N.tool_calls.M.{id,name,arguments}``."""
    found = ag.requested_in(cm.json_value(span, ga.OUTPUT_MESSAGES))
    for completion in cm.indexed(span.attributes, COMPLETION):
        for call in cm.indexed(completion, "tool_calls"):
            found.extend(c for c in [ag.requested_call(call)] if c is not None)
    return found


def _node_calls(span: IngestSpan) -> list[ag.Requested]:
    """The tool calls a LangGraph tool node ran (its ``inputs`` list)."""
    given = _unwrapped(span, ENTITY_INPUT, "inputs")
    return ag.requested_in(given) if isinstance(given, list) else []


def _asked(span: IngestSpan, arguments: Mapping[str, str | None]) -> str | None:
    """The query a retrieval step was asked: its input's, or (a tool's documents) the one
    in its tool call's arguments."""
    if span.span_id in arguments:
        return ag.query_argument(arguments[span.span_id])
    return entity(span, ENTITY_INPUT, "inputs", cm.QUERY_KEYS)


# -- chunks ---------------------------------------------------------------------------------------


def _rank(
    retrievals: list[tuple[IngestSpan, list[Chunk]]],
) -> list[tuple[IngestSpan, list[Chunk]]]:
    """Retrieval steps in run order; a node postprocessor's output replaces what came before."""
    steps: list[tuple[IngestSpan, list[Chunk]]] = []
    for span, docs in retrievals:
        parsed = cm.json_value(span, ENTITY_INPUT)
        if isinstance(parsed, Mapping) and "nodes" in parsed:
            steps = []
        steps.append((span, docs))
    return steps


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


Step = tuple[IngestSpan, list[Chunk], str | None]


def _with_ids(steps: list[Step], spans: list[IngestSpan]) -> list[Step]:
    """Chunks without an id get the one LangChain serialised for the same document elsewhere
    in the request (same text and metadata, exactly one id), else keep None."""
    if all(c.id is not None for _, docs, _ in steps for c in docs):
        return steps
    ids: dict[tuple[str, str], set[str]] = {}
    for span in spans:
        for key in (ENTITY_INPUT, ENTITY_OUTPUT):
            _collect_documents(cm.json_value(span, key), ids, 0)
    out = []
    for span, docs, asked in steps:
        filled = []
        for chunk in docs:
            found = ids.get(_doc_key(chunk.text, chunk.metadata), set())
            if chunk.id is None and len(found) == 1:
                filled.append(dataclasses.replace(chunk, id=next(iter(found))))
            else:
                filled.append(chunk)
        out.append((span, filled, asked))
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
