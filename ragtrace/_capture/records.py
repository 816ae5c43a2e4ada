"""The end of a request: its last spans closed, its ``RagRecord`` built and handed on.

``RecordBuilder.finish`` runs once per request, after ``RequestTable.release``: it ends any
step still open (an abandoned stream), sets the outcome on the RAG root's draft, writes the
request's spans (``span_writers``; the root's ids go into the record), builds the record, lets
inline evaluators add their scores to the root, ends it and calls ``emit``. A writer that fails
is counted (``capture.write_spans``); the record is emitted all the same.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.trace import Status, StatusCode

from ragtrace import _semconv as sc
from ragtrace._capture.content import TextPolicy
from ragtrace._capture.requests import Request
from ragtrace._capture.span_writers import NOT_WRITTEN, SpanWriter, WrittenRoot
from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._model import Chunk, Conversation, RagRecord, RequestStatus, ToolCall, with_used
from ragtrace._redaction import unmarked
from ragtrace._text import to_text

_OK = Status(StatusCode.OK)
_UNSET = Status(StatusCode.UNSET)

RawRecordHook = Callable[[RagRecord, RagRecord], object]
"""Called with a finished request's record and the same record before redaction."""
InlineHook = Callable[[RagRecord, RagRecord | None], Mapping[str, Any]]
"""Called with a finished request's record (and the record before redaction, when it was
kept) before its RAG span ends; returns attributes for that span."""


def _status(status: RequestStatus, error: str | None) -> Status:
    """The span status of a request that ended with ``status``: OK when it succeeded; UNSET
    when it was abandoned (the consumer stopped reading a streamed answer: neither a success
    nor a failure of the app, so trace UIs and error-rate alerts do not count it as an error;
    ``ragtrace.request.status`` says ``abandoned``); else ERROR with why (an error's type and
    message, or ``incomplete: ...``: its end never came)."""
    if status == "ok":
        return _OK
    if status == "abandoned":
        return _UNSET
    return Status(StatusCode.ERROR, (error or status)[:500])


class RecordBuilder:
    """Finishes released requests: ends their spans and emits one ``RagRecord`` each.

    Args:
        config: The app name, the answer's length limit and whether content goes on spans.
        text: Truncation and redaction of the answer.
        emit: Called once per finished request with its record (must not block).
        diagnostics: Where a failing inline evaluator is counted.
        inline: ``Capture``'s ``inline`` hook (the inline evaluators' scores for the RAG span).
        writer: Writes the request's spans.
        emit_with_raw: Called instead of ``emit`` with the record and the record before
            redaction (query, chunks, response), when the request kept its raw text.
    """

    __slots__ = ("_config", "_diag", "_emit", "_emit_raw", "_inline", "_text", "writer")

    def __init__(
        self,
        config: Config,
        text: TextPolicy,
        emit: Callable[[RagRecord], object],
        diagnostics: Diagnostics,
        inline: InlineHook | None,
        writer: SpanWriter,
        emit_with_raw: RawRecordHook | None = None,
    ) -> None:
        self._config = config
        self.writer = writer
        self._text = text
        self._emit = emit
        self._emit_raw = emit_with_raw
        self._diag = diagnostics
        self._inline = inline

    def finish(self, request: Request, answer: object, status: RequestStatus) -> None:
        """End ``request``'s open steps and root span with ``status`` and emit its record.

        Args:
            request: A request already released from the ``RequestTable``.
            answer: The final answer as the framework gave it (None if unknown).
            status: How the request ended.
        """
        tokens: list[str] = []
        outcome = _status(status, request.error)
        for step in list(request.open_steps.values()):
            tokens.extend(step.tokens)
            step.span.set_attribute(sc.RAGTRACE_STATUS, status)
            step.span.set_status(outcome)
            request.end_step(step)
        request.open_steps.clear()
        if tokens and (answer is None or status == "abandoned"):
            # An abandoned stream: the tokens pulled so far are what the consumer was sent; the
            # framework's own accumulated output lags one chunk behind.
            answer = "".join(tokens)
        policy = self._text
        response, cut, raw_response = policy.take(
            answer, self._config.max_text_chars, request.raw_chunks is not None
        )
        if cut:
            request.truncated.append("response")
        attrs: dict[str, Any] = {sc.RAGTRACE_STATUS: status}
        if policy.redaction is not None and policy.redacts:
            request.attributes = policy.redaction.mark(request.attributes)
            attrs[sc.RAGTRACE_REDACTION] = request.attributes[sc.RAGTRACE_REDACTION]
        if self._config.capture_content:
            if response is not None:
                attrs[sc.OUTPUT_VALUE] = response
                attrs[sc.OUTPUT_MIME_TYPE] = sc.MIME_TEXT
            if not request.shows_query and request.query is not None:
                # The root showed a placeholder (no query in its input): the query a retriever
                # or the stream's end supplied is the request's input.
                attrs[sc.INPUT_VALUE] = request.query
                attrs[sc.INPUT_MIME_TYPE] = sc.MIME_TEXT
        _usage(request, attrs)
        chunks, raw_chunks = self._context(request, answer, attrs)
        conversation, tool_calls = self._turn(request, attrs)
        if request.truncated:
            attrs[sc.RAGTRACE_TRUNCATED] = list(request.truncated)
            request.attributes[sc.RAGTRACE_TRUNCATED] = tuple(request.truncated)
        request.span.set_status(outcome)
        request.span.set_attributes(attrs)
        end_ns = time.time_ns()
        root = self._write_spans(request)
        record = RagRecord(
            trace_id=root.trace_id,
            span_id=root.span_id,
            query=request.query,
            chunks=chunks,
            response=response,
            app=self._config.app,
            model=request.model,
            start_ns=request.start_ns,
            end_ns=end_ns,
            error=request.error,
            status=status,
            attributes=request.attributes,
            conversation=conversation,
            tool_calls=tool_calls,
            llm_calls=request.llm_calls,
        )
        raw = (
            None
            if raw_chunks is None
            else dataclasses.replace(
                unmarked(record),
                query=request.raw_query,
                chunks=raw_chunks,
                response=raw_response,
            )
        )
        inline: Mapping[str, Any] = {}
        if self._inline is not None:
            with self._diag.guard("capture.inline"):
                inline = self._inline(record, raw)
        with self._diag.guard("capture.write_spans"):
            root.close(inline, end_ns)
        if raw is None or self._emit_raw is None:
            self._emit(record)
        else:
            self._emit_raw(record, raw)

    def _context(
        self, request: Request, answer: object, attrs: dict[str, Any]
    ) -> tuple[tuple[Chunk, ...], tuple[Chunk, ...] | None]:
        """The request's chunks (and those before redaction, when kept), each marked with
        whether it reached the model call that produced ``answer`` when that is known
        (``ModelCalls``), which the root span then shows (``ragtrace.context.used`` and
        ``ragtrace.context.unused``: places in the record's chunks)."""
        chunks = tuple(request.context.chunks)
        raw = None if request.raw_chunks is None else tuple(request.raw_chunks)
        flags = None
        with self._diag.guard("capture.used_chunks"):
            flags = request.calls.used(request.chunk_probes, to_text(answer))
        if flags is None:
            return chunks, raw
        attrs[sc.RAGTRACE_CONTEXT_USED] = [i for i, flag in enumerate(flags) if flag is True]
        attrs[sc.RAGTRACE_CONTEXT_UNUSED] = [i for i, flag in enumerate(flags) if flag is False]
        return with_used(chunks, flags), (None if raw is None else with_used(raw, flags))

    def _turn(
        self, request: Request, attrs: dict[str, Any]
    ) -> tuple[Conversation | None, tuple[ToolCall, ...]]:
        """The request's conversation and tool calls, with what the root span shows of them
        added to ``attrs`` (turn, history length, standalone question, agent step counts)."""
        conversation = _conversation(request)
        if conversation is not None:
            if conversation.turn is not None:
                attrs[sc.RAGTRACE_TURN] = conversation.turn
            if conversation.history:
                attrs[sc.RAGTRACE_HISTORY_TURNS] = len(conversation.history)
            if conversation.standalone_query is not None and self._config.capture_content:
                attrs[sc.RAGTRACE_STANDALONE_QUERY] = conversation.standalone_query
        tool_calls = tuple(call for _, call in sorted(request.tool_calls, key=_first))
        if request.agent:
            attrs[sc.RAGTRACE_LLM_CALLS] = request.llm_calls
            attrs[sc.RAGTRACE_TOOL_CALLS] = len(tool_calls)
        return conversation, tool_calls

    def _write_spans(self, request: Request) -> WrittenRoot:
        try:
            root = self.writer.open(request.span, request.parent, request.steps_done)
        except Exception as exc:
            self._diag.error("capture.write_spans", exc)
            root = NOT_WRITTEN
        return root


def _usage(request: Request, attrs: dict[str, Any]) -> None:
    """The model that answered on the root (``attrs``), the tokens it used in the record."""
    if request.model:
        attrs[sc.GEN_AI_REQUEST_MODEL] = request.model
    if request.input_tokens or request.output_tokens:
        request.attributes[sc.GEN_AI_USAGE_INPUT_TOKENS] = request.input_tokens
        request.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] = request.output_tokens


def _first(item: tuple[int, ToolCall]) -> int:
    return item[0]


def _conversation(request: Request) -> Conversation | None:
    """The conversation a finished request belongs to, or None when nothing is known of one.

    A rewritten question is kept only for a follow-up (a turn with earlier turns): in a
    first turn a retriever's own query is not a rewrite of anything."""
    follow_up = bool(request.history) or bool(request.turn)
    if request.session_id is None and request.user_id is None and not follow_up:
        return None
    return Conversation(
        session_id=request.session_id,
        user_id=request.user_id,
        turn=request.turn,
        history=request.history,
        standalone_query=request.standalone_query if follow_up else None,
    )
