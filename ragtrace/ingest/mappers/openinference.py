"""OpenInference spans (Arize Phoenix's instrumentations) to records.

A request is the outermost span with ``openinference.span.kind``. From it:

- query: the root's ``input.value`` (text, or JSON looked up by ``QUERY_KEYS``: ``query``,
  ``question``, ``input``, ..., ``query_str``, ``query_bundle.query_str``); else the first
  retriever's ``input.value``.
- chunks: each RETRIEVER span's ``retrieval.documents.N.document.{id,content,score,metadata}``,
  retrievers in the order they ran; a retriever nested in another retriever that has documents
  is not counted again (LlamaIndex writes ``retrieve`` and ``_retrieve``). The LangChain
  instrumentation writes no ``document.id``/``document.score``: ids come from the documents of
  its ``output.value`` JSON (``documents[i].id``), scores from the metadata keys ragtrace's
  capture reads (``Config.chunk_score_keys``), so the record equals what ragtrace captures.
- rerankers: when a RERANKER span has ``reranker.output_documents``, the record's chunks are the
  (last) reranker's output, not the retrievers' documents: that is what the model was given
  and what groundedness must be judged against (ragtrace's own LangChain capture does the same
  for a compression retriever, whose outer span returns the reranked documents).
- response: the root's ``output.value`` (text, or JSON by ``ANSWER_KEYS``); else the last LLM
  span's last ``llm.output_messages`` content.
- model: the last LLM span's ``llm.model_name`` (else ``model``/``model_name`` in
  ``llm.invocation_parameters``).

``OpenInferenceMapper`` has small hooks (``_source``, ``_app``, ``_status``, ``_root_model``)
that the mapper of ragtrace's own spans overrides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragtrace.capture import semconv as sc
from ragtrace.ingest.mappers import common as cm
from ragtrace.ingest.mappers import genai as ga
from ragtrace.ingest.mappers.base import MappedRecord, build_record, parse_json
from ragtrace.ingest.spans import IngestSpan, TraceView
from ragtrace.model import Chunk, RequestStatus

KIND = sc.OI_SPAN_KIND
RETRIEVER, RERANKER, LLM = sc.OI_KIND_RETRIEVER, "RERANKER", sc.OI_KIND_LLM
RERANKER_OUTPUT = "reranker.output_documents"


def span_kind(span: IngestSpan) -> str | None:
    """The span's ``openinference.span.kind`` in capitals, or None."""
    value = span.attributes.get(KIND)
    return value.upper() if isinstance(value, str) else None


def value_text(span: IngestSpan, key: str, keys: Sequence[str]) -> str | None:
    """``input.value``/``output.value`` as text: plain, or pulled out of JSON by ``keys``."""
    raw = span.text(key)
    if raw is None:
        return None
    mime = span.text(key.replace(".value", ".mime_type"))
    if mime == sc.MIME_JSON or (mime is None and raw[:1] in '{["'):
        parsed = parse_json(raw)
        if parsed is not None:
            return cm.find_text(parsed, keys)
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
        chunks = self._chunks(view, retrievers, rerankers)
        query = value_text(root, sc.INPUT_VALUE, cm.QUERY_KEYS)
        if query is None and retrievers:
            query = value_text(retrievers[0], sc.INPUT_VALUE, cm.QUERY_KEYS)
        response = value_text(root, sc.OUTPUT_VALUE, cm.ANSWER_KEYS)
        if response is None:
            response = cm.last_found(llms, _llm_answer)
        if not (retrievers or rerankers or llms or query or response):
            return None
        return build_record(
            view=view,
            root=root,
            convention=self.convention,
            query=query,
            chunks=chunks,
            response=response,
            model=self._root_model(root) or cm.last_found(llms, _llm_model),
            retrieved=bool(retrievers),
            app=self._app(root),
            status=self._status(root),
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

    # -- chunks -----------------------------------------------------------------------------

    def _chunks(
        self, view: TraceView, retrievers: list[IngestSpan], rerankers: list[IngestSpan]
    ) -> list[Chunk]:
        for reranker in reversed(rerankers):
            reranked = self._documents(reranker, RERANKER_OUTPUT)
            if reranked:
                return reranked
        found = [(s, self._documents(s, sc.RETRIEVAL_DOCUMENTS_PREFIX)) for s in retrievers]
        with_docs = [s for s, docs in found if docs]
        keep = {s.span_id for s in cm.outermost(view, with_docs)}
        return [c for s, docs in found if s.span_id in keep for c in docs]

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


def _llm_answer(span: IngestSpan) -> str | None:
    answer = ga.last_text(messages(span, sc.LLM_OUTPUT_MESSAGES), ga.ASSISTANT)
    return answer or value_text(span, sc.OUTPUT_VALUE, cm.ANSWER_KEYS)


def _llm_model(span: IngestSpan) -> str | None:
    name = cm.model_name(span.attributes.get(sc.LLM_MODEL_NAME))
    params = cm.json_value(span, sc.LLM_INVOCATION_PARAMETERS) if name is None else None
    if isinstance(params, Mapping):
        name = cm.model_name(params.get("model")) or cm.model_name(params.get("model_name"))
    return name
