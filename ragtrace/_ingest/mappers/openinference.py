"""OpenInference spans (Arize Phoenix's instrumentations) to records.

A request is the outermost span with ``openinference.span.kind`` (a CHAIN or an AGENT: a
LangGraph agent's TOOL, LLM and RETRIEVER spans are parts of its one record). From it:

- query: the root's ``input.value`` (text, or JSON looked up by ``QUERY_KEYS``: ``query``,
  ``question``, ``input``, ..., ``query_str``, ``query_bundle.query_str``, else the last user
  message of its ``messages`` in any form, see ``messages``); else the first retriever's
  ``input.value`` (not one inside a tool call: that is the tool's query).
- chunks: each RETRIEVER span's ``retrieval.documents.N.document.{id,content,score,metadata}``,
  retrievers in the order they ran; a retriever nested in another retriever that has documents
  is not counted again (LlamaIndex writes ``retrieve`` and ``_retrieve``). The LangChain
  instrumentation writes no ``document.id``/``document.score``: ids come from the documents of
  its ``output.value`` JSON (``documents[i].id``), scores from the metadata keys ragtrace's
  capture reads (``Config.chunk_score_keys``), so the record equals what ragtrace captures.
  A TOOL span whose result holds documents (a ``ToolMessage`` artifact) adds them when no
  retriever below it gave any. Chunks retrieved inside a tool call are tagged with it
  (``agents.tag_chunks``).
- rerankers: when a RERANKER span has ``reranker.output_documents``, the record's chunks are the
  (last) reranker's output, not the retrievers' documents: that is what the model was given
  and what groundedness must be judged against (ragtrace's own LangChain capture does the same
  for a compression retriever, whose outer span returns the reranked documents).
- response: the root's ``output.value`` (text, JSON by ``ANSWER_KEYS``, else its last message
  when it is the assistant's and calls no tool); else, when it holds no messages, the last LLM
  span's last ``llm.output_messages`` content.
- model: the last LLM span's ``llm.model_name`` (else ``model``/``model_name`` in
  ``llm.invocation_parameters``).
- tool calls: one per TOOL span (``tool.name``; arguments from the LLM's
  ``llm.output_messages.N.message.tool_calls`` or LangGraph's tool node input, matched by call
  id or name; status from the span), see ``agents``; ``llm_calls``: the LLM spans.
- conversation: ``session.id`` / ``user.id`` (else the ``metadata`` JSON's ``thread_id``,
  ``session_id``, ``user_id``), and the earlier turns in the root's messages.

``OpenInferenceMapper`` has small hooks (``_source``, ``_app``, ``_status``, ``_root_model``,
``_llm_calls``, ``_conversation``) that the mapper of ragtrace's own spans overrides.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace import _semconv as sc
from ragtrace._ingest.mappers import agents as ag
from ragtrace._ingest.mappers import common as cm
from ragtrace._ingest.mappers import genai as ga
from ragtrace._ingest.mappers import messages as msg
from ragtrace._ingest.mappers.base import MappedRecord, parse_json
from ragtrace._ingest.spans import IngestSpan, TraceView
from ragtrace._model import Chunk, Conversation, RequestStatus, ToolCall

KIND = sc.OI_SPAN_KIND
RETRIEVER, RERANKER, LLM, TOOL = sc.OI_KIND_RETRIEVER, "RERANKER", sc.OI_KIND_LLM, sc.OI_KIND_TOOL
RERANKER_OUTPUT = "reranker.output_documents"
# LLM spans that are no call to the model (LlamaIndex prepares a tool-calling chat in one).
_NOT_CALLS = ("._prepare_chat_with_tools",)
# A plain-text output that is a Python repr of an event, not an answer: ``StopEvent(result=``.
_EVENT_REPR = re.compile(r"[A-Z][A-Za-z0-9_]*\((?:[a-z_][a-z0-9_]*=|\))")


def span_kind(span: IngestSpan) -> str | None:
    """The span's ``openinference.span.kind`` in capitals, or None."""
    value = span.attributes.get(KIND)
    return value.upper() if isinstance(value, str) else None


def value_text(span: IngestSpan, key: str, keys: Sequence[str]) -> str | None:
    """``input.value``/``output.value`` as text: plain, or pulled out of JSON by ``keys``, else
    from its messages (an input's last user message; an output's last message when it is the
    assistant's final answer)."""
    raw = span.text(key)
    if raw is None:
        return None
    mime = span.text(key.replace(".value", ".mime_type"))
    if mime == sc.MIME_JSON or (mime is None and raw[:1] in '{["'):
        parsed = parse_json(raw)
        if parsed is not None:
            final = msg.final_answer if key == sc.OUTPUT_VALUE else msg.last_user_text
            return cm.find_text(parsed, keys, from_messages=final)
        if mime == sc.MIME_JSON:
            return None
    return cm.text(raw)


def messages(span: IngestSpan, prefix: str) -> list[tuple[str | None, str | None]]:
    """``(role, content)`` of ``llm.input_messages`` / ``llm.output_messages``."""
    out = []
    for item in cm.indexed(span.attributes, prefix):
        role = item.get(sc.MESSAGE_ROLE)
        content = cm.text(item.get(sc.MESSAGE_CONTENT))
        if content is None:
            parts = cm.indexed(item, "message.contents")
            content = cm.content_text(
                [
                    {"type": p.get("message_content.type"), "text": p.get("message_content.text")}
                    for p in parts
                ]
            )
        out.append((role if isinstance(role, str) else None, content))
    return out


class OpenInferenceMapper:
    """Maps OpenInference traces; see the module docstring."""

    convention = "openinference"

    def detects(self, view: TraceView) -> bool:
        return any(span_kind(s) is not None for s in view.spans)

    def is_request_span(self, span: IngestSpan) -> bool:
        """Spans that may begin a request (the mapper of ragtrace's own spans narrows it)."""
        return span_kind(span) is not None

    def map(self, view: TraceView) -> list[MappedRecord]:
        return cm.map_requests(view, self.is_request_span, self._map_request)

    def _map_request(self, view: TraceView, root: IngestSpan) -> MappedRecord | None:
        spans = cm.request_spans(view, root)
        retrievers = [s for s in spans if span_kind(s) == RETRIEVER]
        rerankers = [s for s in spans if span_kind(s) == RERANKER]
        llms = [s for s in spans if span_kind(s) == LLM]
        tools = [self._tool(s) for s in spans if span_kind(s) == TOOL and s is not root]
        given, returned = _parsed(root, sc.INPUT_VALUE), _parsed(root, sc.OUTPUT_VALUE)
        query = value_text(root, sc.INPUT_VALUE, cm.QUERY_KEYS)
        asked = [_query_text(s) for s in _outside(view, retrievers)]
        if query is None and asked:  # a retriever's own query, unless a tool call asked it
            query = asked[0]
        if query is None and tools:  # an agent: the user message of its first LLM call
            prompts = (ga.last_text(messages(s, sc.LLM_INPUT_MESSAGES), ga.USER) for s in llms)
            query = next((q for q in prompts if q is not None), None)
        response = value_text(root, sc.OUTPUT_VALUE, cm.ANSWER_KEYS)
        if response is not None and llms and _EVENT_REPR.match(response):
            response = None  # a workflow's result event (LlamaIndex ``StopEvent(...)``)
        if response is None and msg.messages_of(returned) is None:
            response = cm.last_found(llms, _llm_answer)
        if not (retrievers or rerankers or llms or tools or query or response):
            return None
        requested = _dedupe(
            [
                *(c for s in llms for c in _llm_tool_calls(s)),
                *(c for s in spans if s is not root for c in ag.requested_in(_node_calls(s))),
            ]
        )
        calls = ag.tool_calls(tools, requested)
        chunks = self._chunks(view, retrievers, rerankers, tools, calls, query)
        chunks = self._used(root, retrievers, llms, chunks, response)
        return ag.turn_record(
            view,
            root,
            spans,
            self.convention,
            query=query,
            asked=asked,
            given=given,
            returned=returned,
            converse=functools.partial(self._conversation, root, llms),
            chunks=chunks,
            response=response,
            model=self._root_model(root) or cm.last_found(llms, _llm_model),
            retrieved=bool(retrievers),
            app=self._app(root),
            status=self._status(root),
            tool_calls=calls,
            llm_calls=self._llm_calls(root, llms),
        )

    # -- hooks ------------------------------------------------------------------------------

    def _source(self, span: IngestSpan) -> str | None:
        return cm.span_source(span)

    def _app(self, root: IngestSpan) -> str | None:
        return None

    def _status(self, root: IngestSpan) -> RequestStatus | None:
        return None

    def _root_model(self, root: IngestSpan) -> str | None:
        return None

    def _llm_calls(self, root: IngestSpan, llms: list[IngestSpan]) -> int:
        return sum(not s.name.endswith(_NOT_CALLS) for s in llms)

    def _conversation(
        self,
        root: IngestSpan,
        llms: list[IngestSpan],
        ids: ag.Ids,
        history: ag.History | None,
        standalone: str | None,
    ) -> Conversation | None:
        return ag.conversation(ids, history, standalone_query=standalone)

    def _used(
        self,
        root: IngestSpan,
        retrievers: list[IngestSpan],
        llms: list[IngestSpan],
        chunks: list[Chunk],
        response: str | None,
    ) -> list[Chunk]:
        """The chunks marked with whether they reached the LLM call that answered, from the
        LLM spans' input messages (``agents.mark_used``)."""
        calls = [(_prompt(s), _llm_answer(s)) for s in llms if not s.name.endswith(_NOT_CALLS)]
        return ag.mark_used(chunks, calls, response)

    # -- tools ------------------------------------------------------------------------------

    def _tool(self, span: IngestSpan) -> ag.ToolSpan:
        name = (
            cm.text(span.attributes.get(sc.TOOL_NAME))
            or cm.text(span.attributes.get(sc.GEN_AI_TOOL_NAME))
            or span.name
            or "tool"
        )
        result = cm.json_value(span, sc.OUTPUT_VALUE)
        call_id, failure = ag.tool_result(ag.tool_message(result))
        return ag.ToolSpan(
            span,
            name,
            arguments=cm.text(span.attributes.get(sc.GEN_AI_TOOL_CALL_ARGUMENTS)),
            fallback=cm.text(span.attributes.get(sc.INPUT_VALUE)),
            call_id=cm.text(span.attributes.get(sc.GEN_AI_TOOL_CALL_ID)) or call_id,
            failure=failure or ag.tool_output_failure(result),
        )

    # -- chunks -----------------------------------------------------------------------------

    def _chunks(
        self,
        view: TraceView,
        retrievers: list[IngestSpan],
        rerankers: list[IngestSpan],
        tools: list[ag.ToolSpan],
        calls: Sequence[ToolCall],
        query: str | None,
    ) -> list[Chunk]:
        """The context: the last reranker's output, else each outermost retriever's documents
        and those of each tool that returned documents with no retriever below it giving any,
        in the order they ran; tagged with the tool call that retrieved them."""
        steps: list[tuple[IngestSpan, list[Chunk], str | None]] = []
        for reranker in reversed(rerankers):
            reranked = self._documents(reranker, RERANKER_OUTPUT)
            if reranked:
                steps = [(reranker, reranked, _query_text(reranker))]
                return ag.tag_chunks(view, steps, tools, query)
        found = [(s, self._documents(s, sc.RETRIEVAL_DOCUMENTS_PREFIX)) for s in retrievers]
        with_docs = [s for s, docs in found if docs]
        keep = {s.span_id for s in cm.outermost(view, with_docs)}
        steps = [(s, docs, _query_text(s)) for s, docs in found if s.span_id in keep]
        above = {a.span_id for s in with_docs for a in view.ancestors(s)}
        for tool, call in zip(tools, calls, strict=True):
            if tool.span.span_id in above:
                continue
            body = ag.tool_message(cm.json_value(tool.span, sc.OUTPUT_VALUE))
            docs = ag.artifact_chunks(body, tool.name)
            if docs:
                steps.append((tool.span, docs, ag.query_argument(call.arguments)))
        steps.sort(key=lambda step: (step[0].start_ns, step[0].end_ns))
        return ag.tag_chunks(view, steps, tools, query)

    def _documents(self, span: IngestSpan, prefix: str) -> list[Chunk]:
        items = cm.indexed(span.attributes, prefix)
        extra = _output_documents(span) if prefix == sc.RETRIEVAL_DOCUMENTS_PREFIX else []
        if len(extra) != len(items):
            extra = []
        source = self._source(span)
        chunks = []
        for i, item in enumerate(items):
            doc_id = item.get(sc.DOC_ID)
            content = item.get(sc.DOC_CONTENT)
            if extra:
                doc_id = doc_id if doc_id is not None else extra[i].get("id")
                content = content if content is not None else extra[i].get("page_content")
            chunk = cm.make_chunk(
                content, doc_id, item.get(sc.DOC_SCORE), item.get(sc.DOC_METADATA), source
            )
            if chunk is not None:
                chunks.append(chunk)
        return chunks


def _output_documents(span: IngestSpan) -> list[Mapping[str, Any]]:
    """LangChain's retriever ``output.value``: ``{"documents": [{id, page_content, ...}]}``."""
    parsed = cm.json_value(span, sc.OUTPUT_VALUE)
    docs = parsed.get("documents") if isinstance(parsed, Mapping) else None
    if not isinstance(docs, list):
        return []
    return [d if isinstance(d, Mapping) else {} for d in docs[: cm.MAX_DOCUMENTS]]


def _parsed(span: IngestSpan, key: str) -> Any:
    """``input.value``/``output.value`` parsed as JSON (None when it is text or broken)."""
    raw = span.text(key)
    return parse_json(raw) if raw is not None and raw[:1] in "{[" else None


def _query_text(span: IngestSpan) -> str | None:
    """The query a retriever (or reranker) span was asked."""
    return value_text(span, sc.INPUT_VALUE, cm.QUERY_KEYS) or cm.text(
        span.attributes.get(sc.GEN_AI_RETRIEVAL_QUERY_TEXT)
    )


def _outside(view: TraceView, spans: list[IngestSpan]) -> list[IngestSpan]:
    """The spans of ``spans`` that no TOOL span holds."""
    return [s for s in spans if not any(span_kind(a) == TOOL for a in view.ancestors(s))]


def _llm_tool_calls(span: IngestSpan) -> list[ag.Requested]:
    """The tool calls in an LLM span's ``llm.output_messages.N.message.tool_calls.M.*``."""
    out = []
    for message in cm.indexed(span.attributes, sc.LLM_OUTPUT_MESSAGES):
        for call in cm.indexed(message, "message.tool_calls"):
            name, ident = call.get("tool_call.function.name"), call.get("tool_call.id")
            out.append(
                ag.Requested(
                    name if isinstance(name, str) else None,
                    ident if isinstance(ident, str) and ident else None,
                    ag.arguments_text(call.get("tool_call.function.arguments")),
                )
            )
    return out


def _node_calls(span: IngestSpan) -> Any:
    """A LangGraph tool node's input: the list of tool calls it runs (else None)."""
    parsed = _parsed(span, sc.INPUT_VALUE)
    return parsed if isinstance(parsed, list) else None


def _dedupe(calls: list[ag.Requested]) -> list[ag.Requested]:
    """The calls, each call id once (the LLM's output and the tool node show the same)."""
    seen: set[str] = set()
    out = []
    for call in calls:
        if call.call_id is not None:
            if call.call_id in seen:
                continue
            seen.add(call.call_id)
        out.append(call)
    return out


def _prompt(span: IngestSpan) -> str | None:
    """An LLM span's input as text: its ``llm.input_messages``, else a plain-text
    ``input.value`` (never JSON, whose escapes would hide a chunk's text); None: not seen."""
    found = ag.prompt_text(messages(span, sc.LLM_INPUT_MESSAGES))
    if found is not None:
        return found
    if span.text(sc.INPUT_MIME_TYPE) == sc.MIME_TEXT:
        return cm.text(span.text(sc.INPUT_VALUE))
    return None


def _llm_answer(span: IngestSpan) -> str | None:
    answer = ga.last_text(messages(span, sc.LLM_OUTPUT_MESSAGES), ga.ASSISTANT)
    return answer or value_text(span, sc.OUTPUT_VALUE, cm.ANSWER_KEYS)


def _llm_model(span: IngestSpan) -> str | None:
    name = cm.model_name(span.attributes.get(sc.LLM_MODEL_NAME))
    params = cm.json_value(span, sc.LLM_INVOCATION_PARAMETERS) if name is None else None
    if isinstance(params, Mapping):
        name = cm.model_name(params.get("model")) or cm.model_name(params.get("model_name"))
    return name
