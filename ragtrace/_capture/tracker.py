"""Framework-neutral request capture: runs in, spans and one RagRecord per request out.

The integrations translate their framework's callbacks into a handful of calls on ``Capture``:
``begin_request`` / ``end_request`` for the root of a request, ``begin_retrieval`` /
``end_retrieval``, ``begin_llm`` / ``end_llm`` and ``begin_tool`` / ``end_tool`` for the steps
that get a span, ``link`` for any other run (so its children find their request), ``fail_run``
for errors, ``set_conversation`` for the earlier turns an app sent, ``set_standalone_query`` for
a follow-up the app rewrote, ``set_ids`` for a session or user id seen only inside the request.
Runs are keyed by the framework's own run ids and parented by the parent's run id, never by the
ambient OTel context, so threads and asyncio tasks cannot mix requests up. Only the root,
retrievers, LLM calls and an agent's tool calls get spans (a plain chain costs three), which is
what keeps the overhead low.

One request is one user turn, whatever the app's shape: an agent's LLM steps, tool calls and
the retrievals inside them are parts of it. A retriever that runs inside another one (an
ensemble's members) keeps its chunks on its own span; the outermost result is the request's
context. A tool that hands back documents (LangChain's ``content_and_artifact``, LlamaIndex's
source nodes) gives them to the request when no retriever inside it already did. A document
that several retrievals of the turn return is in the context once (``TurnChunks``).

Every public method is safe to call in any order, twice, or with junk: problems are counted in
``Diagnostics`` and never raised. A request whose end never arrives is closed as ``incomplete``
after ``Config.request_timeout_s``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.context import get_current
from opentelemetry.trace import Status, StatusCode, Tracer

from ragtrace import _semconv as sc
from ragtrace._capture import tool_calls as tools
from ragtrace._capture.attributes import (
    Message,
    RawChunk,
    SpanAttributes,
    describe,
    mark_error,
)
from ragtrace._capture.content import TextPolicy
from ragtrace._capture.conversation import earlier_turns, session_ids
from ragtrace._capture.drafts import SpanDraft
from ragtrace._capture.records import InlineHook, RawRecordHook, RecordBuilder
from ragtrace._capture.requests import Request, RequestTable, Step
from ragtrace._capture.span_writers import SpanWriter, span_attribute_limit, span_writer
from ragtrace._config import Config
from ragtrace._diagnostics import Diagnostics
from ragtrace._model import RagRecord, RequestStatus, like_merged, probe
from ragtrace._text import short_text, to_text

if TYPE_CHECKING:
    from ragtrace._redaction import Redaction

_ABANDONED = "abandoned: the consumer stopped reading the stream before it finished"
_OK = Status(StatusCode.OK)


class Capture:
    """Turns framework runs into spans and RagRecords.

    Args:
        tracer: Where spans go.
        config: Limits, keys and capture switches.
        emit: Called once per finished request with its record (must not block).
        diagnostics: Where internal errors are counted.
        inline: Called with the record (and the record before redaction, or None) just
            before the RAG span ends; the attributes it returns (inline evaluators' scores)
            are set on that span.
        writer: How a finished request's spans reach ``tracer`` (default: ``span_writer``
            for it, direct to the SDK when ``Config.direct_spans`` allows).
        emit_with_raw: With a redaction policy on, called instead of ``emit`` with the
            record and the same record before redaction (query, chunks, response), for the
            evaluators that must see the raw text; that second record is never written
            anywhere (docs/data-safety.md).
        redaction: The policy every captured text goes through (``ragtrace._redaction``,
            built from ``Config.redact`` by the runtime); None: none.
    """

    def __init__(
        self,
        tracer: Tracer,
        config: Config,
        emit: Callable[[RagRecord], object],
        diagnostics: Diagnostics,
        inline: InlineHook | None = None,
        writer: SpanWriter | None = None,
        emit_with_raw: RawRecordHook | None = None,
        redaction: Redaction | None = None,
    ) -> None:
        self._config = config
        self._diag = diagnostics
        self._text = TextPolicy(redaction)
        self._keep_raw = emit_with_raw is not None and self._text.redacts
        self._attributes = SpanAttributes(
            config, self._text, diagnostics, span_attribute_limit(tracer)
        )
        if writer is None:
            writer = span_writer(tracer, direct=config.direct_spans)
        self._records = RecordBuilder(
            config,
            self._text,
            emit,
            diagnostics,
            inline,
            writer,
            emit_with_raw if self._keep_raw else None,
        )
        self._table = RequestTable(config.max_open_requests, config.request_timeout_s)
        # The table's maps, read (and, for links, written) directly on the hot path.
        self._requests = self._table.requests
        self._runs = self._table.runs
        self._steps = self._table.steps

    # -- lookups --------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        return self._config

    @property
    def span_writer(self) -> SpanWriter:
        """How finished requests' spans reach the tracer (``span_writers``)."""
        return self._records.writer

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
        agent: bool = False,
    ) -> Request | None:
        """Open a request (and its RAG root span) for root run ``key``.

        Args:
            key: The root run's id.
            name: The root span's name.
            query: The user's question, when the input shows it.
            input_fallback: What the root span shows as its input when there is no query.
            metadata: The request's metadata (kept on the record; the conversation's session
                and user ids are looked up in it).
            agent: The root is an agent (its span is an AGENT, ``invoke_agent``); a request
                that calls a tool becomes one anyway.
        """
        try:
            if key in self._runs:
                self._diag.error("capture.duplicate_start", f"run {key!r} started twice")
                return None
            now = time.monotonic()
            while (stale := self._table.pop_stale(now)) is not None:
                self._diag.error("capture.incomplete_request", stale.error or "")
                self._finish(stale, None, "incomplete")
            start_ns = time.time_ns()
            query_text, cut, raw_query = self._text.take(
                query, self._config.max_text_chars, self._keep_raw
            )
            attrs: dict[str, Any] = {
                sc.OI_SPAN_KIND: sc.OI_KIND_CHAIN,
                sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_INVOKE_WORKFLOW,
                sc.RAGTRACE_APP: self._config.app,
            }
            cfg = self._config
            session_id, user_id = session_ids(metadata, cfg.session_id_keys, cfg.user_id_keys)
            user_id = self._text.identity(user_id) if user_id is not None else None
            if session_id is not None:
                attrs[sc.SESSION_ID] = attrs[sc.GEN_AI_CONVERSATION_ID] = session_id
            if user_id is not None:
                attrs[sc.USER_ID] = user_id
            if self._config.capture_content:
                shown = query_text
                if shown is None and input_fallback is not None:
                    shown, cut = self._text.clean(input_fallback, self._config.max_text_chars)
                if shown is not None:
                    attrs[sc.INPUT_VALUE] = shown
                    attrs[sc.INPUT_MIME_TYPE] = sc.MIME_TEXT
            span = SpanDraft(short_text(name) or sc.SPAN_NAME_RAG, start_ns, attrs)
            request = Request(key, span, get_current(), query_text, start_ns)
            request.session_id = session_id
            request.user_id = user_id
            if agent:
                request.mark_agent()
            if self._keep_raw:
                request.raw_query = raw_query
                request.raw_chunks = []
            if cut:
                request.truncated.append("query")
            if metadata:
                request.attributes[sc.METADATA] = self._text.metadata(metadata)
            self._table.add(request)
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
                self._table.late_ignored += 1
                return
            status: RequestStatus = "ok"
            # A root that ends while its children still run was cut short: the consumer closed
            # the stream (the framework closes the inner generators only afterwards).
            if abandoned or ((request.open_steps or request.open_links) and error is None):
                status = "abandoned"
                request.error = _ABANDONED
            elif error is not None:
                status = "error"
                request.error = describe(error, self._text)
                mark_error(request.span, error, self._text)
            self._finish(request, answer, status)
        except Exception as exc:
            self._diag.error("capture.end_request", exc)

    def set_query(self, key: object, query: object) -> None:
        """Set the query of root run ``key`` when it is only known at the end (streamed input)."""
        request = self._requests.get(key)
        if request is None or query is None or query == "":
            return
        with self._diag.guard("capture.set_query"):
            text, cut, raw = self._text.take(query, self._config.max_text_chars, self._keep_raw)
            if text is None:
                return
            if text != request.query:
                request.query = text
                request.raw_query = raw
                if cut:
                    request.truncated.append("query")
            # The root may show a placeholder from the start (a stream's empty first input)
            # even where a retriever already told the request its query.
            request.shows_query = True
            if self._config.capture_content:
                request.span.set_attribute(sc.INPUT_VALUE, text)
                request.span.set_attribute(sc.INPUT_MIME_TYPE, sc.MIME_TEXT)

    def set_ids(self, key: object, found: Mapping[str, object] | None) -> None:
        """Ids of the conversation of root run ``key`` found once the request has begun (the
        framework shows them only to the request's own runs: LangChain's ``configurable``).

        Each fills only an id the request lacks (``ragtrace.session`` and the request's
        metadata come first); ``found`` is read with ``Config.session_id_keys`` and
        ``Config.user_id_keys``. Only the first call for a request counts.
        """
        request = self._requests.get(key)
        if request is None or request.ids_sought:
            return
        request.ids_sought = True
        if not found or (request.session_id is not None and request.user_id is not None):
            return
        with self._diag.guard("capture.set_ids"):
            cfg = self._config
            session_id, user_id = session_ids(found, cfg.session_id_keys, cfg.user_id_keys)
            if request.session_id is None and session_id is not None:
                request.session_id = session_id
                request.span.set_attribute(sc.SESSION_ID, session_id)
                request.span.set_attribute(sc.GEN_AI_CONVERSATION_ID, session_id)
            user_id = self._text.identity(user_id) if user_id is not None else None
            if request.user_id is None and user_id is not None:
                request.user_id = user_id
                request.span.set_attribute(sc.USER_ID, user_id)

    def set_conversation(
        self, key: object, history: Sequence[tuple[str, object]], turn: int | None = None
    ) -> None:
        """Set the earlier turns of root run ``key``'s conversation, as the app sent them.

        Args:
            key: The root run's id.
            history: (role, content) of each earlier message, oldest first; roles other than
                ``user`` and ``assistant`` (system prompts, tool results) are left out, and only
                the latest ``Config.max_history_turns`` are kept, each cut and redacted.
            turn: How many user turns came before this one (default: the user messages in
                ``history``).
        """
        request = self._requests.get(key)
        if request is None:
            return
        with self._diag.guard("capture.set_conversation"):
            cfg = self._config
            kept, users, cut = earlier_turns(
                history, self._text, cfg.max_text_chars, cfg.max_history_turns
            )
            if cut:
                request.truncated.append("conversation.history")
            request.history = kept
            request.turn = users if turn is None else turn

    def set_standalone_query(self, key: object, question: object) -> None:
        """Set the standalone question of root run ``key``: the follow-up as the app rewrote
        it (a chat engine's condense step), cut and redacted like the query. The record keeps
        it only for a follow-up (a turn with earlier turns)."""
        request = self._requests.get(key)
        if request is None or question is None:
            return
        with self._diag.guard("capture.set_standalone_query"):
            text, _, _ = self._text.take(question, self._config.max_text_chars, False)
            if text:
                request.standalone_query = text

    def link(self, key: object, parent_key: object) -> Request | None:
        """Attach a run that gets no span of its own to its parent's request."""
        request = self._runs.get(parent_key) if parent_key is not None else None
        if request is not None and not request.finished:
            self._runs[key] = request
            request.run_keys.append(key)
            request.open_links.add(key)
            step = self._table.enclosing(parent_key)
            if step is not None:
                self._table.scope[key] = step
        return request

    def unlink(self, key: object) -> None:
        """Forget a run linked with ``link`` (its end arrived)."""
        request = self._runs.pop(key, None)
        if request is not None:
            request.open_links.discard(key)
            self._table.scope.pop(key, None)

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
            query_text, _, raw_query = self._text.take(
                query, self._config.max_text_chars, self._keep_raw
            )
            outer = self._table.enclosing(parent_key)
            tool = outer.within("tool") if outer is not None else None
            if query_text is not None and tool is None:
                if request.query is None:
                    request.query = query_text
                    request.raw_query = raw_query
                elif query_text != request.query and request.standalone_query is None:
                    request.standalone_query = query_text  # a rewritten follow-up
            attrs: dict[str, Any] = {
                sc.OI_SPAN_KIND: sc.OI_KIND_RETRIEVER,
                sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_RETRIEVAL,
            }
            if self._config.capture_content and query_text is not None:
                attrs[sc.INPUT_VALUE] = query_text
                attrs[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] = query_text
            source = name or sc.SPAN_NAME_RETRIEVAL
            if tool is not None:
                source = f"{tool.name}/{source}"
            self._open_step(key, "retriever", source, request, attrs, outer)
        except Exception as exc:
            self._diag.error("capture.begin_retrieval", exc)

    def end_retrieval(self, key: object, documents: Iterable[RawChunk] | None) -> None:
        """Close a RETRIEVER span with the documents it returned, in rank order."""
        try:
            step = self._table.close_step(key)
            if step is None:
                return
            self._add_documents(step, documents)
            step.request.end_step(step)
            if step.request.implicit:
                self._finish(step.request, None, "ok")
        except Exception as exc:
            self._diag.error("capture.end_retrieval", exc)

    def _add_documents(self, step: Step, documents: Iterable[RawChunk] | None) -> None:
        """Put a retrieval step's documents on its span and, unless it ran inside another
        retriever, into the request's context (tagged with the query it was asked when that is
        not the user's, the tool call it served and its index among the turn's retrievals),
        each document once: one that an earlier retrieval of the turn returned merges with it
        (``TurnChunks``)."""
        request = step.request
        inner = step.parent.within("retriever") if step.parent is not None else None
        tool = step.parent.within("tool") if step.parent is not None else None
        asked = step.span.attributes.get(sc.GEN_AI_RETRIEVAL_QUERY_TEXT)
        asked = asked if isinstance(asked, str) else None
        tag: tuple[str | None, int | None] = (
            asked if asked != request.query else None,
            tool.index if tool is not None else None,
        )
        context = request.context
        offset = len(context.chunks)
        attrs, kept, total = self._attributes.chunks(
            request, step.name, documents, offset, step.span.attributes, tag
        )
        step.span.attributes = attrs
        step.span.set_status(_OK)
        if inner is not None:
            step.span.set_attribute(sc.RAGTRACE_RETRIEVAL_NESTED, True)
            return
        retrieval = request.retrievals
        if kept:
            request.retrievals += 1
            step.span.set_attribute(sc.RAGTRACE_RETRIEVAL_STEP, retrieval)
        raw_chunks = request.raw_chunks
        for chunk, full_text, unredacted in kept:
            at, new = context.add(chunk, retrieval, asked)
            if new:
                request.raw_chunk_texts.append(full_text)
                request.chunk_probes.append(
                    probe(full_text if full_text is not None else unredacted.text)
                )
                if raw_chunks is not None:
                    raw_chunks.append(unredacted)
            elif raw_chunks is not None:
                raw_chunks[at] = like_merged(raw_chunks[at], context.chunks[at])
        if tool is not None:
            tool.chunks_added += len(kept)
        if total > len(kept):
            request.attributes[sc.RAGTRACE_CHUNKS_DROPPED] = (
                request.attributes.get(sc.RAGTRACE_CHUNKS_DROPPED, 0) + total - len(kept)
            )

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
        """Open an LLM span; prompt messages repeating chunk text are shortened to references.

        The messages' text is looked through for the request's chunks and earlier calls'
        outputs (``Request.calls``), whatever ``Config.capture_content`` says: only which
        chunks reached the answer is kept of it."""
        try:
            request = self._parent_request(key, parent_key, name or "llm", None)
            if request is None:
                return
            request.llm_calls += 1
            call = request.calls.saw(self._prompt(messages), request.chunk_probes)
            attrs = self._attributes.llm_request(request, model, provider, messages, operation)
            outer = self._table.enclosing(parent_key)
            self._open_step(key, "llm", name or "llm", request, attrs, outer)
            step = self._steps.get(key)
            if step is not None:
                step.call = call
        except Exception as exc:
            self._diag.error("capture.begin_llm", exc)

    def _prompt(self, messages: Sequence[Message]) -> str | None:
        """The text of an LLM call's messages, one after another (None: none can be read)."""
        try:
            texts = [to_text(content) for _, content in messages]
        except Exception as exc:
            self._diag.error("capture.llm_prompt", exc)
            return None
        return "\n".join(text for text in texts if text) or None

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
            step = self._table.close_step(key)
            if step is None:
                return
            request = step.request
            if output is None and step.tokens:
                output = "".join(step.tokens)
            request.calls.answered(step.call, to_text(output))
            attrs = self._attributes.llm_response(
                request, output, model, input_tokens, output_tokens
            )
            step.span.set_attributes(attrs)
            step.span.set_status(_OK)
            step.request.end_step(step)
            if request.implicit:
                self._finish(request, output, "ok")
        except Exception as exc:
            self._diag.error("capture.end_llm", exc)

    # -- tools ----------------------------------------------------------------------------------

    def begin_tool(
        self,
        key: object,
        parent_key: object,
        *,
        name: str | None,
        arguments: object = None,
        call_id: object = None,
    ) -> None:
        """Open a TOOL span for an agent's tool call inside the request of ``parent_key``.

        A tool run outside any request is left alone (nothing to attach it to).
        """
        try:
            request = self._runs.get(parent_key) if parent_key is not None else None
            if request is None or request.finished or key in self._steps:
                return
            request.mark_agent()
            tool_name = short_text(name) or "tool"
            attrs = tools.start_attributes(tool_name, call_id)
            given = None if arguments is None else tools.arguments_text(arguments)
            if self._config.capture_content and given is not None:
                text, _ = self._text.clean(given, self._config.max_text_chars)
                if text is not None:
                    attrs[sc.INPUT_VALUE] = attrs[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = text
            outer = self._table.enclosing(parent_key)
            self._open_step(key, "tool", tool_name, request, attrs, outer)
            step = self._steps[key]
            step.arguments = given
            step.index = request.tools_started
            request.tools_started += 1
        except Exception as exc:
            self._diag.error("capture.begin_tool", exc)

    def end_tool(
        self,
        key: object,
        *,
        output: object = None,
        documents: Iterable[RawChunk] | None = None,
        error: BaseException | str | None = None,
    ) -> None:
        """Close a tool call's span and add it to the request's ``tool_calls``.

        Args:
            key: The tool run's id.
            output: What the tool returned (its text goes on the span).
            documents: Documents the tool returned beside its text (an artifact, source
                nodes); they become the request's chunks unless a retriever inside the tool
                already gave them, on a RETRIEVER span under the tool's.
            error: The exception it raised, or the error text it reported.
        """
        try:
            step = self._table.close_step(key)
            if step is None:
                self.unlink(key)
                return
            request = step.request
            attrs: dict[str, Any] = {}
            if self._config.capture_content and output is not None:
                text, _ = self._text.clean(output, self._config.max_text_chars)
                attrs[sc.OUTPUT_VALUE] = text or ""
                attrs[sc.OUTPUT_MIME_TYPE] = sc.MIME_TEXT
            step.span.set_attributes(attrs)
            failure = tools.mark_outcome(step, error, self._text)
            if documents is not None and step.chunks_added == 0:
                self._artifact_step(step, documents)
            request.end_step(step)
            call = tools.tool_call(step, failure, self._text, self._config.max_text_chars)
            request.tool_calls.append((step.index, call))
        except Exception as exc:
            self._diag.error("capture.end_tool", exc)

    def _artifact_step(self, tool: Step, documents: Iterable[RawChunk]) -> None:
        """The documents a tool returned, as a RETRIEVER span under its own (same times)."""
        attrs: dict[str, Any] = {
            sc.OI_SPAN_KIND: sc.OI_KIND_RETRIEVER,
            sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OP_RETRIEVAL,
        }
        asked = tools.query_argument(tool.arguments)
        if asked is not None and self._config.capture_content:
            text, _ = self._text.clean(asked, self._config.max_text_chars)
            if text is not None:
                attrs[sc.INPUT_VALUE] = attrs[sc.GEN_AI_RETRIEVAL_QUERY_TEXT] = text
        span = SpanDraft(tool.name, tool.span.start_ns, attrs, tool.span)
        step = Step(tool.name, tool.request, span, "retriever", tool)
        self._add_documents(step, documents)
        span.end()
        tool.request.steps_done.append(span)

    # -- errors ---------------------------------------------------------------------------------

    def fail_run(self, key: object, error: BaseException | None) -> None:
        """A run failed: mark its span ERROR; a root run ends its request with the error."""
        try:
            if key in self._requests:
                abandoned = isinstance(error, GeneratorExit | _cancelled_error())
                self.end_request(key, error=None if abandoned else error, abandoned=abandoned)
                return
            step = self._steps.get(key)
            if step is not None and step.kind == "tool":
                self.end_tool(key, error=error if error is not None else "error")
                return
            step = self._table.close_step(key)
            if step is None:
                self.unlink(key)
                return
            if error is not None:
                mark_error(step.span, error, self._text)
            if step.kind == "llm" and step.tokens:
                step.request.calls.answered(step.call, "".join(step.tokens))
            if step.tokens:
                step.span.set_attribute(
                    sc.message_attr(sc.LLM_OUTPUT_MESSAGES, 0, sc.MESSAGE_CONTENT),
                    self._text.clean("".join(step.tokens), self._config.max_text_chars)[0] or "",
                )
            step.request.end_step(step)
            if step.request.implicit:
                step.request.error = describe(error, self._text) if error is not None else None
                self._finish(step.request, None, "error")
        except Exception as exc:
            self._diag.error("capture.fail_run", exc)

    def close_all(self, reason: str = "incomplete: ragtrace shut down") -> None:
        """Close every open request as incomplete (at shutdown)."""
        for request in list(self._requests.values()):
            if self._requests.pop(request.key, None) is not None:
                request.error = reason
                with self._diag.guard("capture.close_all"):
                    self._finish(request, None, "incomplete")

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
        self,
        key: object,
        kind: str,
        name: str,
        request: Request,
        attrs: dict[str, Any],
        outer: Step | None = None,
    ) -> None:
        if outer is not None and outer.request is not request:
            outer = None
        parent_span = outer.span if outer is not None else None
        span = SpanDraft(short_text(name) or kind, time.time_ns(), attrs, parent_span)
        self._table.add_step(key, Step(name, request, span, kind, outer))

    def _finish(self, request: Request, answer: object, status: RequestStatus) -> None:
        self._table.release(request)
        self._records.finish(request, answer, status)


def _cancelled_error() -> type[BaseException]:
    import asyncio

    return asyncio.CancelledError
