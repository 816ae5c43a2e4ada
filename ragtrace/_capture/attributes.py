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

from ragtrace import _semconv as sc
from ragtrace._capture.content import TextPolicy
from ragtrace._capture.drafts import SpanDraft
from ragtrace._capture.requests import Request
from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics, RateLimitedWarning
from ragtrace._model import Chunk
from ragtrace._text import as_score, dump_json, safe_metadata, short_text, to_text

RawChunk = tuple[object, object, object, object]
"""What an integration hands over per retrieved document: (text, id, score, metadata)."""
KeptChunk = tuple[Chunk, str | None, Chunk]
"""A chunk as kept, its whole text when it was not cut, and the chunk before redaction."""

Message = tuple[str, object]
"""A prompt message: (role, content)."""

_CAP_MARKS = 2
"""Attributes a capped span gains: ``ragtrace.retrieval.documents_omitted`` and
``ragtrace.span.attributes_capped``."""
_LATE_ATTRIBUTES = 3
"""Room kept for attributes a step may get after its chunks or prompt: ``error.type``,
``ragtrace.request.status`` (an abandoned stream), ``ragtrace.retrieval.step`` (a retriever's
place among the turn's retrievals)."""
_LLM_LATE_ATTRIBUTES = 11
"""What an LLM span gets at its end: output message (2), output value (2), response model,
token counts (5), one spare."""
_CAPPED_WARNING = RateLimitedWarning()


class SpanAttributes:
    """Builds the attributes of retriever and LLM spans from what an integration captured.

    Args:
        config: Limits, chunk id and score keys, capture switches.
        text: Truncation and redaction of every text.
        diagnostics: Where a document that cannot be read is counted (it is skipped).
        max_attributes: The tracer provider's span attribute count limit (None: none). Chunk
            and message attributes are capped to fit it, never the span's kind or query.
    """

    __slots__ = ("_config", "_diag", "_max_attributes", "_text")

    def __init__(
        self,
        config: Config,
        text: TextPolicy,
        diagnostics: Diagnostics,
        max_attributes: int | None = None,
    ) -> None:
        self._config = config
        self._text = text
        self._diag = diagnostics
        self._max_attributes = max_attributes

    def chunks(
        self,
        request: Request,
        source: str,
        documents: Iterable[RawChunk] | None,
        offset: int,
        essentials: Mapping[str, Any],
        tag: tuple[str | None, int | None] = (None, None),
    ) -> tuple[dict[str, Any], list[KeptChunk], int]:
        """A retriever span's attributes, the chunks kept and how many documents there were.

        The attributes fit ``max_attributes`` (the provider's span attribute limit): the
        per-chunk attributes (``retrieval.documents.N.*``) of as many top-ranked chunks as fit,
        whole, then the span's essentials (its kind, query, the ranked list of every kept
        chunk's id and score in ``gen_ai.retrieval.documents``), written last so that a limit
        enforced later evicts chunk attributes before them. Chunks left off are counted in
        ``ragtrace.retrieval.documents_omitted`` and in the record.

        Args:
            request: The request the documents are for (cuts are noted there).
            source: The retriever's name.
            documents: What the retriever returned, in rank order.
            offset: How many chunks the request already has (earlier retrievers).
            essentials: The span's attributes so far (kind, operation, query).
            tag: The query the chunks were retrieved for when it is not the user's, and the
                index of the agent's tool call that retrieved them (``Chunk.query``,
                ``Chunk.step``).

        Returns:
            The span's attributes; each chunk kept, with its whole text when it was not cut
            (for the prompt dedupe) and the chunk before redaction; how many documents the
            retriever returned.
        """
        cfg = self._config
        chunks: list[Chunk] = []
        kept: list[KeptChunk] = []
        refs: list[dict[str, Any]] = []
        attrs: dict[str, Any] = {}
        fields: list[int] = []  # how many attributes each chunk got
        total = 0
        for raw in documents or ():
            total += 1
            if len(chunks) >= cfg.max_chunks:
                continue
            try:
                chunk, raw_text, unredacted = self._make_chunk(
                    request, raw, source, offset + len(chunks), tag
                )
            except Exception as exc:
                self._diag.error("capture.chunk", exc)
                continue
            key_id, key_score, key_content, key_metadata = sc.document_keys(len(chunks))
            chunks.append(chunk)
            kept.append((chunk, raw_text, unredacted))
            refs.append({"id": chunk.id, "score": chunk.score})
            before = len(attrs)
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
            fields.append(len(attrs) - before)
        tail: dict[str, Any] = {
            sc.RAGTRACE_CHUNK_SOURCE: source,
            **essentials,
            sc.GEN_AI_RETRIEVAL_DOCUMENTS: dump_json(refs, 1 << 20)[0],
            sc.RAGTRACE_CHUNKS_TOTAL: total,
        }
        if total > len(chunks):
            tail[sc.RAGTRACE_CHUNKS_DROPPED] = total - len(chunks)
        if offset:
            tail[sc.RAGTRACE_CHUNK_SOURCE + ".offset"] = offset
        shown = self._chunks_shown(fields, len(tail))
        if shown < len(fields):
            for index in range(shown, len(fields)):
                for key in sc.document_keys(index):
                    attrs.pop(key, None)
            capped = sum(fields[shown:])
            tail[sc.RAGTRACE_DOCUMENTS_OMITTED] = len(fields) - shown
            tail[sc.RAGTRACE_ATTRIBUTES_CAPPED] = capped
            self._note_capped(request, "retriever", capped, shown, len(fields))
        attrs.update(tail)  # the essentials last: a limit enforced later evicts chunks first
        return attrs, kept, total

    def _chunks_shown(self, fields: list[int], used: int) -> int:
        """How many of the top-ranked chunks' attributes (``fields[i]`` each) fit beside
        ``used`` others."""
        if self._max_attributes is None:
            return len(fields)
        room = self._max_attributes - used - _CAP_MARKS - _LATE_ATTRIBUTES
        for n, count in enumerate(fields):
            room -= count
            if room < 0:
                return n
        return len(fields)

    def _note_capped(
        self, request: Request, kind: str, capped: int, shown: int, total: int
    ) -> None:
        """Count attributes left off a span in the record, and warn (once a minute at most)."""
        counts = request.attributes.setdefault(sc.RAGTRACE_ATTRIBUTES_CAPPED, {})
        counts[kind] = counts.get(kind, 0) + capped
        _CAPPED_WARNING.warn(
            "ragtrace: the tracer provider's span attribute limit (%s) leaves room for %d of "
            "the %d %s on a %s span; the rest stay in the record%s and are counted in "
            "ragtrace_span_attributes_capped_total. Raise the limit "
            "(OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, or SpanLimits on your TracerProvider) to see "
            "them all (further warnings within a minute are not logged)",
            self._max_attributes,
            shown,
            total,
            "retrieved chunks" if kind == "retriever" else "prompt messages",
            kind,
            " and in gen_ai.retrieval.documents (ids and scores)" if kind == "retriever" else "",
        )

    def _make_chunk(
        self,
        request: Request,
        raw: RawChunk,
        source: str,
        index: int,
        tag: tuple[str | None, int | None],
    ) -> tuple[Chunk, str | None, Chunk]:
        """The chunk as kept (cut, redacted), its whole text when it was not cut (prompt
        dedupe looks for it), and the chunk before redaction (the same one when nothing is
        redacted)."""
        raw_text, raw_id, raw_score, raw_meta = raw
        policy = self._text
        metadata = policy.metadata(raw_meta)
        limit = self._config.max_chunk_chars
        unredacted, cut = policy.cut(raw_text, limit)
        text = unredacted
        if unredacted is not None and policy.redacts:
            text, cut = policy.redact(unredacted, limit, cut)
        if cut:
            request.truncated.append(f"chunk.{index}")
        chunk_id = policy.identity(raw_id) if raw_id not in (None, "") else None
        if chunk_id is None:
            chunk_id = _first_present(metadata, self._config.chunk_id_keys, short_text)
        score = as_score(raw_score)
        if score is None:
            score = _first_present(metadata, self._config.chunk_score_keys, as_score)
        asked, step = tag
        chunk = Chunk(
            text or "",
            id=chunk_id,
            score=score,
            metadata=metadata,
            source=source,
            query=asked,
            step=step,
        )
        full = raw_text if isinstance(raw_text, str) and not cut else None
        if not policy.redacts:
            return chunk, full, chunk
        before = Chunk(
            policy.raw(unredacted, limit) or "",
            id=chunk_id,
            score=score,
            metadata=safe_metadata(raw_meta),
            source=source,
            query=asked,
            step=step,
        )
        return chunk, full, before

    def llm_request(
        self,
        request: Request,
        model: object,
        provider: object,
        messages: Sequence[Message],
        operation: str,
    ) -> dict[str, Any]:
        """An LLM span's start attributes: operation, model, provider and the prompt messages.

        Sets ``request.model``. Messages go on the span only with ``Config.capture_content``
        (at most ``Config.max_chunks`` of them: the first and the latest); text of the
        request's chunks repeated in one is replaced by a reference to the chunk when
        ``Config.dedupe_prompt_chunks`` is on. ``input.value`` holds them all as text
        (``prompt_text``); the ``llm.input_messages.N.*`` attributes as many as fit the span's
        attribute limit.
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
        prompt: list[tuple[str, str]] = []
        for i in _messages_shown(len(messages), 2 * self._config.max_chunks):
            role, content = messages[i]
            text = to_text(content)
            if text and self._config.dedupe_prompt_chunks:
                for n, chunk_text in enumerate(request.raw_chunk_texts):
                    if chunk_text is not None and len(chunk_text) >= 32 and chunk_text in text:
                        text = text.replace(chunk_text, sc.CHUNK_REF_TEMPLATE % n)
                        refs += 1
            clean, cut = self._text.clean(text, limit)
            if cut:
                request.truncated.append(f"llm.input_messages.{i}")
            prompt.append((short_text(role, 32) or "user", clean or ""))
        shown = _messages_shown(len(prompt), self._message_room(len(attrs)))
        head, attrs = attrs, {}  # the messages first: a limit set elsewhere evicts them first
        for i, m in enumerate(shown):
            role, content = prompt[m]
            attrs[sc.message_attr(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_ROLE)] = role
            attrs[sc.message_attr(sc.LLM_INPUT_MESSAGES, i, sc.MESSAGE_CONTENT)] = content
        attrs.update(head)
        if len(shown) < len(prompt):
            capped = 2 * (len(prompt) - len(shown))
            attrs[sc.RAGTRACE_ATTRIBUTES_CAPPED] = capped
            self._note_capped(request, "llm", capped, len(shown), len(prompt))
        if prompt:
            attrs[sc.INPUT_VALUE] = prompt_text(prompt)
            attrs[sc.INPUT_MIME_TYPE] = sc.MIME_TEXT
        if refs:
            attrs[sc.RAGTRACE_PROMPT_CHUNK_REFS] = refs
        return attrs

    def _message_room(self, used: int) -> int | None:
        """How many message attributes an LLM span has room for (None: no limit)."""
        if self._max_attributes is None:
            return None
        return self._max_attributes - used - _LLM_LATE_ATTRIBUTES - _CAP_MARKS - _LATE_ATTRIBUTES

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
            attrs[sc.OUTPUT_VALUE] = text or ""
            attrs[sc.OUTPUT_MIME_TYPE] = sc.MIME_TEXT
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


def describe(error: BaseException, text: TextPolicy | None = None) -> str:
    """``Type: message`` of ``error``, short, valid UTF-8 and redacted by ``text``'s policy
    (for ``RagRecord.error``: an exception's message may quote what the user typed)."""
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    said = f"{type(error).__name__}: {message}" if message else type(error).__name__
    found = short_text(said, 2000) if text is None else text.short(said, 2000)
    return found or type(error).__name__


def mark_error(span: SpanDraft, error: BaseException, text: TextPolicy | None = None) -> None:
    """Status ERROR and an ``exception`` event, every text made valid UTF-8 for the wire and
    redacted by ``text``'s policy (message and stack trace)."""
    span.set_status(Status(StatusCode.ERROR, describe(error, text)[:500]))
    span.set_attribute(sc.RAGTRACE_ERROR_TYPE, type(error).__qualname__)
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    shorten = short_text if text is None else text.short
    span.add_event(
        "exception",
        {
            "exception.type": type(error).__qualname__,
            "exception.message": shorten(message, 2000) or "",
            "exception.stacktrace": shorten(stack, 8000) or "",
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


def prompt_text(prompt: Sequence[tuple[str, str]]) -> str:
    """An LLM call's ``input.value``: a single message's text, or each message as
    ``role: text``, separated by blank lines (plain text: cheaper than JSON, and as readable)."""
    if len(prompt) == 1:
        return prompt[0][1]
    return "\n\n".join(f"{role}: {content}" for role, content in prompt)


def _messages_shown(n: int, room: int | None) -> list[int]:
    """Which of ``n`` prompt messages fit ``room`` attributes (two each): all of them, else the
    first (the system prompt, in a RAG app usually holding the context) and the latest."""
    fit = n if room is None else max(0, room // 2)
    if fit >= n:
        return list(range(n))
    if fit <= 0:
        return []
    if fit == 1:
        return [n - 1]
    return [0, *range(n - fit + 1, n)]


def _token_count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None
