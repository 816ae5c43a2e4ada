"""Span attributes for what a request's steps carry: retrieved chunks, LLM calls, errors.

``SpanAttributes`` turns an integration's raw documents into ``Chunk`` values and the
OpenInference / GenAI attributes of a retriever span, and an LLM call's model, prompt messages
(chunk text repeated in a prompt shortened to a reference), output and token usage into an LLM
span's attributes. ``mark_error`` and ``describe`` put an exception on a span and into a
record. Every text goes through the request's ``TextPolicy``; whatever had to be cut is noted
in ``Request.truncated``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.trace import Status, StatusCode

from ragtrace.capture import semconv as sc
from ragtrace.capture.content import (
    TextPolicy,
    as_score,
    dump_json,
    safe_metadata,
    short_text,
    to_text,
)
from ragtrace.capture.drafts import SpanDraft
from ragtrace.capture.requests import Request
from ragtrace.config import Config
from ragtrace.diagnostics import Diagnostics
from ragtrace.model import Chunk

RawChunk = tuple[object, object, object, object]
"""What an integration hands over per retrieved document: (text, id, score, metadata)."""

Message = tuple[str, object]
"""A prompt message: (role, content)."""


class SpanAttributes:
    """Builds the attributes of retriever and LLM spans from what an integration captured.

    Args:
        config: Limits, chunk id and score keys, capture switches.
        text: Truncation and redaction of every text.
        diagnostics: Where a document that cannot be read is counted (it is skipped).
    """

    __slots__ = ("_config", "_diag", "_text")

    def __init__(self, config: Config, text: TextPolicy, diagnostics: Diagnostics) -> None:
        self._config = config
        self._text = text
        self._diag = diagnostics

    def chunks(
        self,
        request: Request,
        source: str,
        documents: Iterable[RawChunk] | None,
        offset: int,
    ) -> tuple[dict[str, Any], list[Chunk], int]:
        """A retriever span's attributes, the chunks kept and how many documents there were.

        Args:
            request: The request the documents are for (raw chunk texts and cuts go there).
            source: The retriever's name.
            documents: What the retriever returned, in rank order.
            offset: How many chunks the request already has (earlier retrievers).
        """
        cfg = self._config
        attrs: dict[str, Any] = {sc.RAGTRACE_CHUNK_SOURCE: source}
        chunks: list[Chunk] = []
        refs: list[dict[str, Any]] = []
        total = 0
        for raw in documents or ():
            total += 1
            if len(chunks) >= cfg.max_chunks:
                continue
            try:
                chunk, raw_text = self._make_chunk(request, raw, source, offset + len(chunks))
            except Exception as exc:
                self._diag.error("capture.chunk", exc)
                continue
            key_id, key_score, key_content, key_metadata = sc.document_keys(len(chunks))
            chunks.append(chunk)
            if raw_text:
                request.raw_chunk_texts.append(raw_text)
            refs.append({"id": chunk.id, "score": chunk.score})
            if chunk.id is not None:
                attrs[key_id] = chunk.id
            if chunk.score is not None:
                attrs[key_score] = chunk.score
            if cfg.capture_content:
                attrs[key_content] = chunk.text
                if chunk.metadata:
                    meta, cut = dump_json(chunk.metadata, cfg.max_metadata_chars)
                    attrs[key_metadata] = meta
                    if cut:
                        request.truncated.append(f"chunk.{offset + len(chunks) - 1}.metadata")
        attrs[sc.GEN_AI_RETRIEVAL_DOCUMENTS] = dump_json(refs, 1 << 20)[0]
        attrs[sc.RAGTRACE_CHUNKS_TOTAL] = total
        if total > len(chunks):
            attrs[sc.RAGTRACE_CHUNKS_DROPPED] = total - len(chunks)
        return attrs, chunks, total

    def _make_chunk(
        self, request: Request, raw: RawChunk, source: str, index: int
    ) -> tuple[Chunk, str | None]:
        raw_text, raw_id, raw_score, raw_meta = raw
        metadata = safe_metadata(raw_meta)
        text, cut = self._text.clean(raw_text, self._config.max_chunk_chars)
        if cut:
            request.truncated.append(f"chunk.{index}")
        chunk_id = short_text(raw_id) if raw_id not in (None, "") else None
        if chunk_id is None:
            chunk_id = _first_present(metadata, self._config.chunk_id_keys, short_text)
        score = as_score(raw_score)
        if score is None:
            score = _first_present(metadata, self._config.chunk_score_keys, as_score)
        chunk = Chunk(text or "", id=chunk_id, score=score, metadata=metadata, source=source)
        full = raw_text if isinstance(raw_text, str) and not cut else None
        return chunk, full

    def llm_request(
        self,
        request: Request,
        model: object,
        provider: object,
        messages: Sequence[Message],
        operation: str,
    ) -> dict[str, Any]:
        """An LLM span's start attributes: operation, model, provider and the prompt messages.

        Sets ``request.model``. Messages go on the span only with ``Config.capture_content``;
        text of the request's chunks repeated in one is replaced by a reference to the chunk
        when ``Config.dedupe_prompt_chunks`` is on.
        """
        attrs: dict[str, Any] = {
            sc.OI_SPAN_KIND: sc.OI_KIND_LLM,
            sc.GEN_AI_OPERATION_NAME: operation,
        }
        model_name = short_text(model)
        if model_name:
            attrs[sc.LLM_MODEL_NAME] = model_name
            attrs[sc.GEN_AI_REQUEST_MODEL] = model_name
            request.model = model_name
        provider_name = short_text(provider)
        if provider_name:
            attrs[sc.LLM_PROVIDER] = provider_name
            attrs[sc.GEN_AI_PROVIDER_NAME] = provider_name
        if not self._config.capture_content:
            return attrs
        refs = 0
        limit = self._config.max_text_chars
        for i, (role, content) in enumerate(messages[: self._config.max_chunks]):
            text = to_text(content)
            if text and self._config.dedupe_prompt_chunks:
                for n, chunk_text in enumerate(request.raw_chunk_texts):
                    if len(chunk_text) >= 32 and chunk_text in text:
                        text = text.replace(chunk_text, sc.CHUNK_REF_TEMPLATE % n)
                        refs += 1
            clean, cut = self._text.clean(text, limit)
            if cut:
                request.truncated.append(f"llm.input_messages.{i}")
            attrs[sc.message_attr(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_ROLE)] = (
                short_text(role, 32) or "user"
            )
            attrs[sc.message_attr(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_CONTENT)] = clean or ""
        if refs:
            attrs[sc.RAGTRACE_PROMPT_CHUNK_REFS] = refs
        return attrs

    def llm_response(
        self,
        request: Request,
        output: object,
        model: object,
        input_tokens: object,
        output_tokens: object,
    ) -> dict[str, Any]:
        """An LLM span's end attributes: output message, response model and token usage.

        Sets ``request.model`` and adds the token counts to the request's totals.
        """
        attrs: dict[str, Any] = {}
        if self._config.capture_content and output is not None:
            text, cut = self._text.clean(output, self._config.max_text_chars)
            if cut:
                request.truncated.append("llm.output")
            attrs[sc.message_attr(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_ROLE)] = "assistant"
            attrs[sc.message_attr(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_CONTENT)] = text or ""
        model_name = short_text(model)
        if model_name:
            attrs[sc.GEN_AI_RESPONSE_MODEL] = model_name
            request.model = model_name
        n_in, n_out = _token_count(input_tokens), _token_count(output_tokens)
        if n_in is not None:
            attrs[sc.LLM_TOKEN_PROMPT] = attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = n_in
            request.input_tokens += n_in
        if n_out is not None:
            attrs[sc.LLM_TOKEN_COMPLETION] = attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = n_out
            request.output_tokens += n_out
        if n_in is not None and n_out is not None:
            attrs[sc.LLM_TOKEN_TOTAL] = n_in + n_out
        return attrs


def describe(error: BaseException) -> str:
    """``Type: message`` of ``error``, short and valid UTF-8 (for ``RagRecord.error``)."""
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return short_text(text, 2000) or type(error).__name__


def mark_error(span: SpanDraft, error: BaseException) -> None:
    """Status ERROR and an ``exception`` event, every text made valid UTF-8 for the wire."""
    span.set_status(Status(StatusCode.ERROR, describe(error)[:500]))
    span.set_attribute(sc.RAGTRACE_ERROR_TYPE, type(error).__qualname__)
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    span.add_event(
        "exception",
        {
            "exception.type": type(error).__qualname__,
            "exception.message": short_text(message, 2000) or "",
            "exception.stacktrace": short_text(stack, 8000) or "",
        },
    )


def _first_present(
    metadata: Mapping[str, Any], keys: Sequence[str], convert: Callable[[object], Any]
) -> Any:
    for key in keys:
        value = metadata.get(key)
        if value is not None:
            converted = convert(value)
            if converted not in (None, ""):
                return converted
    return None


def _token_count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None
