"""Framework-neutral request capture: runs in, spans and one RagRecord per request out.

The integrations translate their framework's callbacks into a handful of calls on ``Capture``:
``begin_request`` / ``end_request`` for the root of a request, ``begin_retrieval`` /
``end_retrieval`` and ``begin_llm`` / ``end_llm`` for the steps that get a span, ``link`` for any
other run (so its children find their request), ``fail_run`` for errors. Runs are keyed by the
framework's own run ids and parented by the parent's run id, never by the ambient OTel context,
so threads and asyncio tasks cannot mix requests up. Only three kinds of span are made per
request (RAG root, retriever, LLM), which is what keeps the overhead low.

Every public method is safe to call in any order, twice, or with junk: problems are counted in
``Diagnostics`` and never raised. A request whose end never arrives is closed as ``incomplete``
after ``Config.request_timeout_s``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ragtrace.capture import semconv as sc
from ragtrace.capture.content import (
    TextPolicy,
    as_score,
    dump_json,
    safe_metadata,
    short_text,
    to_text,
)
from ragtrace.config import Config
from ragtrace.diagnostics import Diagnostics
from ragtrace.model import Chunk, RagRecord, RequestStatus

RawChunk = tuple[object, object, object, object]
"""What an integration hands over per retrieved document: (text, id, score, metadata)."""

Message = tuple[str, object]
"""A prompt message: (role, content)."""

_ABANDONED = "abandoned: the consumer stopped reading the stream before it finished"


def _hex_ids(span: Span) -> tuple[str, str]:
    ctx = span.get_span_context()
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


class _Step:
    """An open retriever or LLM span inside a request."""

    __slots__ = ("kind", "name", "request", "span", "tokens")

    def __init__(self, kind: str, name: str, request: Request, span: Span) -> None:
        self.kind = kind
        self.name = name
        self.request = request
        self.span = span
        self.tokens: list[str] = []


class Request:
    """State of one in-flight request; owned by ``Capture``."""

    __slots__ = (
        "attributes",
        "chunks",
        "error",
        "finished",
        "implicit",
        "input_tokens",
        "key",
        "model",
        "open_links",
        "open_steps",
        "output_tokens",
        "query",
        "raw_chunk_texts",
        "retrievals",
        "run_keys",
        "span",
        "span_id",
        "start_mono",
        "start_ns",
        "trace_id",
        "truncated",
    )

    def __init__(self, key: object, span: Span, query: str | None, start_ns: int) -> None:
        self.key = key
        self.span = span
        self.trace_id, self.span_id = _hex_ids(span)
        self.query = query
        self.start_ns = start_ns
        self.start_mono = time.monotonic()
        self.chunks: list[Chunk] = []
        self.raw_chunk_texts: list[str] = []
        self.model: str | None = None
        self.error: str | None = None
        self.finished = False
        self.implicit = False
        self.run_keys: list[object] = []
        self.open_steps: dict[object, _Step] = {}
        self.open_links: set[object] = set()
        self.truncated: list[str] = []
        self.attributes: dict[str, Any] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.retrievals = 0


class Capture:
    """Turns framework runs into spans and RagRecords.

    Args:
        tracer: Where spans go.
        config: Limits, keys and capture switches.
        emit: Called once per finished request with its record (must not block).
        diagnostics: Where internal errors are counted.
        inline: Called with the record just before the RAG span ends; the attributes it
            returns (inline evaluators' scores) are set on that span.
    """

    def __init__(
        self,
        tracer: Tracer,
        config: Config,
        emit: Callable[[RagRecord], None],
        diagnostics: Diagnostics,
        inline: Callable[[RagRecord], Mapping[str, Any]] | None = None,
    ) -> None:
        self._tracer = tracer
        self._config = config
        self._emit = emit
        self._inline = inline
        self._diag = diagnostics
        self._text = TextPolicy(config.redact)
        self._requests: dict[object, Request] = {}
        self._runs: dict[object, Request] = {}
        self._steps: dict[object, _Step] = {}
        self._late_ignored = 0

    # -- lookups --------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        return self._config

    def request_of(self, key: object) -> Request | None:
        """The open request that run ``key`` belongs to."""
        return self._runs.get(key) if key is not None else None

    def open_requests(self) -> int:
        return len(self._requests)

    # -- requests -------------------------------------------------------------------------------

    def begin_request(
        self,
        key: object,
        *,
        name: str | None,
        query: object,
        input_fallback: object = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Request | None:
        """Open a request (and its RAG root span) for root run ``key``."""
        try:
            if key in self._runs:
                self._diag.error("capture.duplicate_start", f"run {key!r} started twice")
                return None
            self._evict_stale()
            start_ns = time.time_ns()
            query_text, cut = self._text.clean(query, self._config.max_text_chars)
            attrs: dict[str, Any] = {
                sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
                sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_INVOKE_WORKFLOW,
                sc.RAGTRACE_APP: self._config.app,
            }
            if self._config.capture_content:
                shown = query_text
                if shown is None and input_fallback is not None:
                    shown, cut = self._text.clean(input_fallback, self._config.max_text_chars)
                if shown is not None:
                    attrs[sc.INPUT_VALUE] = shown
                    attrs[sc.INPUT_MIME_TYPE] = sc.MIME_TEXT
            span = self._tracer.start_span(
                short_text(name) or sc.SPAN_NAME_RAG,
                kind=SpanKind.INTERNAL,
                attributes=attrs,
                start_time=start_ns,
            )
            request = Request(key, span, query_text, start_ns)
            if cut:
                request.truncated.append("query")
            if metadata:
                request.attributes[sc.METADATA] = safe_metadata(metadata)
            self._requests[key] = request
            self._runs[key] = request
            return request
        except Exception as exc:
            self._diag.error("capture.begin_request", exc)
            return None

    def end_request(
        self,
        key: object,
        *,
        answer: object = None,
        error: BaseException | None = None,
        abandoned: bool = False,
    ) -> None:
        """Close the request of root run ``key`` and emit its record."""
        try:
            request = self._requests.pop(key, None)
            if request is None or request.finished:
                self._late_ignored += 1
                return
            status: RequestStatus = "ok"
            # A root that ends while its children still run was cut short: the consumer closed
            # the stream (the framework closes the inner generators only afterwards).
            if abandoned or ((request.open_steps or request.open_links) and error is None):
                status = "abandoned"
                request.error = _ABANDONED
            elif error is not None:
                status = "error"
                request.error = _describe(error)
                _mark_error(request.span, error)
            self._finish(request, answer, status)
        except Exception as exc:
            self._diag.error("capture.end_request", exc)

    def set_query(self, key: object, query: object) -> None:
        """Set the query of root run ``key`` when it is only known at the end (streamed input)."""
        request = self._requests.get(key)
        if request is None or query is None or query == "":
            return
        with self._diag.guard("capture.set_query"):
            text, cut = self._text.clean(query, self._config.max_text_chars)
            if text is None or text == request.query:
                return
            request.query = text
            if cut:
                request.truncated.append("query")
            if self._config.capture_content:
                request.span.set_attribute(sc.INPUT_VALUE, text)
                request.span.set_attribute(sc.INPUT_MIME_TYPE, sc.MIME_TEXT)

    def link(self, key: object, parent_key: object) -> Request | None:
        """Attach a run that gets no span of its own to its parent's request."""
        request = self._runs.get(parent_key) if parent_key is not None else None
        if request is not None and not request.finished:
            self._runs[key] = request
            request.run_keys.append(key)
            request.open_links.add(key)
        return request

    def unlink(self, key: object) -> None:
        """Forget a run linked with ``link`` (its end arrived)."""
        request = self._runs.pop(key, None)
        if request is not None:
            request.open_links.discard(key)

    # -- retrieval ------------------------------------------------------------------------------

    def begin_retrieval(
        self, key: object, parent_key: object, *, name: str | None, query: object
    ) -> None:
        """Open a RETRIEVER span under the request of ``parent_key``.

        A retrieval with no enclosing request (a retriever called on its own) becomes a request
        of its own that ends with it.
        """
        try:
            request = self._parent_request(key, parent_key, name or "retriever", query)
            if request is None:
                return
            query_text, _ = self._text.clean(query, self._config.max_text_chars)
            if request.query is None and query_text is not None:
                request.query = query_text
            attrs: dict[str, Any] = {
                sc.OI_SPAN_KIND: sc.OI_KIND_RETRIEVER,
                sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_RETRIEVAL,
            }
            if self._config.capture_content and query_text is not None:
                attrs[sc.INPUT_VALUE] = query_text
                attrs[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] = query_text
            self._open_step(key, "retriever", name or sc.SPAN_NAME_RETRIEVAL, request, attrs)
        except Exception as exc:
            self._diag.error("capture.begin_retrieval", exc)

    def end_retrieval(self, key: object, documents: Iterable[RawChunk] | None) -> None:
        """Close a RETRIEVER span with the documents it returned, in rank order."""
        try:
            step = self._close_step(key)
            if step is None:
                return
            request = step.request
            offset = len(request.chunks)
            request.retrievals += 1
            attrs, chunks, total = self._chunk_attributes(request, step.name, documents, offset)
            if offset:
                attrs[sc.RAGTRACE_CHUNK_SOURCE + ".offset"] = offset
            step.span.set_attributes(attrs)
            step.span.end()
            request.chunks.extend(chunks)
            if total > len(chunks):
                request.attributes[sc.RAGTRACE_CHUNKS_DROPPED] = (
                    request.attributes.get(sc.RAGTRACE_CHUNKS_DROPPED, 0) + total - len(chunks)
                )
            if request.implicit:
                self._finish(request, None, "ok")
        except Exception as exc:
            self._diag.error("capture.end_retrieval", exc)

    def _chunk_attributes(
        self,
        request: Request,
        source: str,
        documents: Iterable[RawChunk] | None,
        offset: int,
    ) -> tuple[dict[str, Any], list[Chunk], int]:
        cfg = self._config
        attrs: dict[str, Any] = {sc.RAGTRACE_CHUNK_SOURCE: source}
        chunks: list[Chunk] = []
        refs: list[dict[str, Any]] = []
        total = 0
        for raw in documents or ():
            total += 1
            if len(chunks) >= cfg.max_chunks:
                continue
            with self._diag.guard("capture.chunk"):
                chunk, raw_text = self._make_chunk(request, raw, source, offset + len(chunks))
                i = len(chunks)
                chunks.append(chunk)
                if raw_text:
                    request.raw_chunk_texts.append(raw_text)
                refs.append({"id": chunk.id, "score": chunk.score})
                if chunk.id is not None:
                    attrs[sc.document_attr(i, sc.DOC_ID)] = chunk.id
                if chunk.score is not None:
                    attrs[sc.document_attr(i, sc.DOC_SCORE)] = chunk.score
                if cfg.capture_content:
                    attrs[sc.document_attr(i, sc.DOC_CONTENT)] = chunk.text
                    if chunk.metadata:
                        meta, cut = dump_json(chunk.metadata, cfg.max_metadata_chars)
                        attrs[sc.document_attr(i, sc.DOC_METADATA)] = meta
                        if cut:
                            request.truncated.append(f"chunk.{offset + i}.metadata")
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

    # -- LLM ------------------------------------------------------------------------------------

    def begin_llm(
        self,
        key: object,
        parent_key: object,
        *,
        name: str | None,
        model: object = None,
        provider: object = None,
        messages: Sequence[Message] = (),
        operation: str = sc.GEN_AI_OP_CHAT,
    ) -> None:
        """Open an LLM span; prompt messages repeating chunk text are shortened to references."""
        try:
            request = self._parent_request(key, parent_key, name or "llm", None)
            if request is None:
                return
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
            if self._config.capture_content:
                self._message_attributes(request, messages, attrs)
            self._open_step(key, "llm", name or "llm", request, attrs)
        except Exception as exc:
            self._diag.error("capture.begin_llm", exc)

    def _message_attributes(
        self, request: Request, messages: Sequence[Message], attrs: dict[str, Any]
    ) -> None:
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

    def llm_token(self, key: object, token: object) -> None:
        """One streamed token (kept so an abandoned stream still shows what was sent)."""
        step = self._steps.get(key)
        if step is not None and isinstance(token, str):
            step.tokens.append(token)

    def end_llm(
        self,
        key: object,
        *,
        output: object = None,
        model: object = None,
        input_tokens: object = None,
        output_tokens: object = None,
    ) -> None:
        """Close an LLM span with its output text, response model and token usage."""
        try:
            step = self._close_step(key)
            if step is None:
                return
            request = step.request
            attrs: dict[str, Any] = {}
            if output is None and step.tokens:
                output = "".join(step.tokens)
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
            n_in, n_out = _count(input_tokens), _count(output_tokens)
            if n_in is not None:
                attrs[sc.LLM_TOKEN_PROMPT] = attrs[sc.GEN_AI_USAGE_INPUT_TOKENS] = n_in
                request.input_tokens += n_in
            if n_out is not None:
                attrs[sc.LLM_TOKEN_COMPLETION] = attrs[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = n_out
                request.output_tokens += n_out
            if n_in is not None and n_out is not None:
                attrs[sc.LLM_TOKEN_TOTAL] = n_in + n_out
            step.span.set_attributes(attrs)
            step.span.end()
            if request.implicit:
                self._finish(request, output, "ok")
        except Exception as exc:
            self._diag.error("capture.end_llm", exc)

    # -- errors ---------------------------------------------------------------------------------

    def fail_run(self, key: object, error: BaseException | None) -> None:
        """A run failed: mark its span ERROR; a root run ends its request with the error."""
        try:
            if key in self._requests:
                abandoned = isinstance(error, GeneratorExit | _cancelled_error())
                self.end_request(key, error=None if abandoned else error, abandoned=abandoned)
                return
            step = self._close_step(key)
            if step is None:
                self.unlink(key)
                return
            if error is not None:
                _mark_error(step.span, error)
            if step.tokens:
                step.span.set_attribute(
                    sc.message_attr(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_CONTENT),
                    self._text.clean("".join(step.tokens), self._config.max_text_chars)[0] or "",
                )
            step.span.end()
            if step.request.implicit:
                step.request.error = _describe(error) if error is not None else None
                self._finish(step.request, None, "error")
        except Exception as exc:
            self._diag.error("capture.fail_run", exc)

    # -- internals ------------------------------------------------------------------------------

    def _parent_request(
        self, key: object, parent_key: object, name: str, query: object
    ) -> Request | None:
        if key in self._steps:
            self._diag.error("capture.duplicate_start", f"run {key!r} started twice")
            return None
        request = self._runs.get(parent_key) if parent_key is not None else None
        if request is None:
            request = self.begin_request(key, name=name, query=query)
            if request is None:
                return None
            del self._requests[key]
            request.implicit = True
        return None if request.finished else request

    def _open_step(
        self, key: object, kind: str, name: str, request: Request, attrs: dict[str, Any]
    ) -> None:
        ctx = trace.set_span_in_context(request.span)
        span = self._tracer.start_span(
            short_text(name) or kind,
            context=ctx,
            kind=SpanKind.INTERNAL,
            attributes=attrs,
            start_time=time.time_ns(),
        )
        step = _Step(kind, name, request, span)
        self._steps[key] = step
        request.open_steps[key] = step
        self._runs[key] = request
        request.run_keys.append(key)

    def _close_step(self, key: object) -> _Step | None:
        step = self._steps.pop(key, None)
        if step is None:
            self._late_ignored += 1
            return None
        step.request.open_steps.pop(key, None)
        self._runs.pop(key, None)
        return step

    def _finish(self, request: Request, answer: object, status: RequestStatus) -> None:
        request.finished = True
        for key in request.run_keys:
            self._runs.pop(key, None)
        self._runs.pop(request.key, None)
        self._requests.pop(request.key, None)
        tokens: list[str] = []
        for key, step in list(request.open_steps.items()):
            self._steps.pop(key, None)
            tokens.extend(step.tokens)
            step.span.set_attribute(sc.RAGTRACE_STATUS, status)
            step.span.end()
        request.open_steps.clear()
        if tokens and (answer is None or status == "abandoned"):
            # An abandoned stream: the tokens pulled so far are what the consumer was sent; the
            # framework's own accumulated output lags one chunk behind.
            answer = "".join(tokens)
        response, cut = self._text.clean(answer, self._config.max_text_chars)
        if cut:
            request.truncated.append("response")
        span = request.span
        attrs: dict[str, Any] = {sc.RAGTRACE_STATUS: status}
        if self._config.capture_content and response is not None:
            attrs[sc.OUTPUT_VALUE] = response
            attrs[sc.OUTPUT_MIME_TYPE] = sc.MIME_TEXT
        if request.model:
            attrs[sc.GEN_AI_REQUEST_MODEL] = request.model
        if request.input_tokens or request.output_tokens:
            request.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] = request.input_tokens
            request.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = request.output_tokens
        if request.truncated:
            attrs[sc.RAGTRACE_TRUNCATED] = list(request.truncated)
            request.attributes[sc.RAGTRACE_TRUNCATED] = tuple(request.truncated)
        if status == "abandoned":
            span.set_status(Status(StatusCode.UNSET))
        span.set_attributes(attrs)
        end_ns = time.time_ns()
        record = RagRecord(
            trace_id=request.trace_id,
            span_id=request.span_id,
            query=request.query,
            chunks=tuple(request.chunks),
            response=response,
            app=self._config.app,
            model=request.model,
            start_ns=request.start_ns,
            end_ns=end_ns,
            error=request.error,
            status=status,
            attributes=request.attributes,
        )
        if self._inline is not None:
            with self._diag.guard("capture.inline"):
                span.set_attributes(self._inline(record))
        span.end(end_time=end_ns)
        self._emit(record)

    def _evict_stale(self) -> None:
        """Close the oldest requests when too many are open or they are older than the timeout."""
        cfg = self._config
        deadline = time.monotonic() - cfg.request_timeout_s
        while self._requests:
            try:
                oldest = next(iter(self._requests.values()))
            except (StopIteration, RuntimeError):
                return
            too_many = len(self._requests) >= cfg.max_open_requests
            if not too_many and oldest.start_mono > deadline:
                return
            if self._requests.pop(oldest.key, None) is None:
                continue
            oldest.error = (
                "incomplete: too many open requests"
                if too_many
                else f"incomplete: no end event within {cfg.request_timeout_s:g} s"
            )
            self._diag.error("capture.incomplete_request", oldest.error)
            self._finish(oldest, None, "incomplete")

    def close_all(self, reason: str = "incomplete: ragtrace shut down") -> None:
        """Close every open request as incomplete (at shutdown)."""
        for request in list(self._requests.values()):
            if self._requests.pop(request.key, None) is not None:
                request.error = reason
                with self._diag.guard("capture.close_all"):
                    self._finish(request, None, "incomplete")


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


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None


def _describe(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return short_text(text, 2000) or type(error).__name__


def _mark_error(span: Span, error: BaseException) -> None:
    """Status ERROR and an ``exception`` event, every text made valid UTF-8 for the wire."""
    span.set_status(Status(StatusCode.ERROR, _describe(error)[:500]))
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


def _cancelled_error() -> type[BaseException]:
    import asyncio

    return asyncio.CancelledError
