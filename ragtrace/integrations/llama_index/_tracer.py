"""Maps LlamaIndex dispatcher spans and events onto ``Capture``: one request per query or chat.

LlamaIndex opens a span for every decorated method and fires events inside them. The
outermost ``query``/``chat``/``stream_chat`` span (one with no known parent) begins a request;
every span below it is linked to that request, keyed by its LlamaIndex span id and parented by
``parent_id`` (never by ambient context). Retrieval and LLM start/end events, which carry the
id of the span they fire in, turn that span into a RETRIEVER or LLM step. A retriever or LLM
called on its own becomes a request of its own.

Agent workflows (``agents``): the outermost ``run`` span of a ``FunctionAgent``, ``ReActAgent``,
``CodeActAgent`` or ``AgentWorkflow`` begins a request whose query is the user's message and
whose answer is the agent's final response. Inside it, spans are linked to their own parent
(not to the root), each ``call_tool`` step becomes a TOOL step, and retrievals and LLM calls
open under the innermost step they run in, so a tool's query engine nests under its tool call.

Chat engines (``chats``): a chat's request gets its earlier turns when it begins, and a
condensing engine's first LLM answer is the turn's standalone question.

Streaming: a root that returns a ``StreamingResponse`` ends when its reader has read it (see
``streams``); a chat engine's stream ends when its ``write_response_to_history`` span ends. A
stream nobody reads is closed as ``incomplete`` by ``Capture`` after ``request_timeout_s``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.response.schema import AsyncStreamingResponse
from llama_index.core.chat_engine.types import StreamingAgentChatResponse
from llama_index.core.instrumentation.events.exception import ExceptionEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatInProgressEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionInProgressEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)

from ragtrace import _semconv as sc
from ragtrace._capture import Capture, RawChunk
from ragtrace._runtime import Ragtrace, current
from ragtrace.integrations.llama_index import _agents as ag
from ragtrace.integrations.llama_index import _chats as chats
from ragtrace.integrations.llama_index import _extract as ex
from ragtrace.integrations.llama_index._streams import StreamEnd, lent, relay, relay_async

ROOT_METHODS = frozenset({"query", "aquery", "chat", "achat", "stream_chat", "astream_chat"})
"""Methods whose outermost span begins a request (on any component that is not an LLM)."""

_SWEEP_INTERVAL_S = 5.0
_IN_RETRIEVAL, _IN_LLM = 1, 2
_NOT_ROOT, _ENGINE, _CHAT, _AGENT = range(4)  # what a component's outermost span may begin


class _Root:
    """The integration's side of one request (``Capture`` keeps the rest)."""

    __slots__ = (
        "agent",
        "capture",
        "condenses",
        "done_writers",
        "error",
        "finished",
        "heard",
        "history_sent",
        "key",
        "last_output",
        "result",
        "streams",
        "waiting",
    )

    def __init__(self, key: str, capture: Capture) -> None:
        self.key = key
        self.capture = capture
        self.finished = False
        self.waiting = False  # the root span ended; the answer is still streaming
        self.result: object = None
        self.last_output: object = None
        self.error: BaseException | None = None
        self.streams: dict[str, str] = {}  # open streaming LLM steps: span id -> LLM class
        self.done_writers: list[object] = []
        self.agent = False  # an agent workflow's run: spans link to their own parents
        self.heard = False  # the agent's input (its conversation so far) was read
        self.condenses = False  # a chat engine's first LLM call rewrites the follow-up
        self.history_sent = False  # its history comes from its answer LLM's messages


class LlamaIndexTracer:
    """The state machine behind the dispatcher handlers; thread- and task-safe.

    Args:
        ragtrace: The instance to report to; default: the current one at each request.
    """

    def __init__(self, ragtrace: Ragtrace | None = None) -> None:
        self.ragtrace = ragtrace
        self._span_root: dict[str, _Root] = {}  # every open span inside a request
        # Spans inside a retrieval (_IN_RETRIEVAL) or LLM step (_IN_LLM): a retriever or LLM
        # they call is part of that step, not a step of its own (CustomLLM.chat -> complete).
        self._inside: dict[str, int] = {}
        self._retrievals: dict[str, _Root] = {}
        self._llms: dict[str, _Root] = {}
        self._waiting: dict[str, _Root] = {}
        # Inside agent requests: each span's parent, and the open tool steps.
        self._parent: dict[str, str] = {}
        self._tools: dict[str, _Root] = {}
        self._next_sweep = 0.0
        self._root_types: dict[type, int] = {}
        self._result_kinds = dict(ex.RESULT_KINDS)
        self._events: dict[type, Callable[[Any], None] | None] = {
            RetrievalStartEvent: self._on_retrieval_start,
            RetrievalEndEvent: self._on_retrieval_end,
            LLMChatStartEvent: self._on_chat_start,
            LLMCompletionStartEvent: self._on_completion_start,
            LLMChatInProgressEvent: self._on_token,
            LLMCompletionInProgressEvent: self._on_token,
            LLMChatEndEvent: self._on_llm_end,
            LLMCompletionEndEvent: self._on_llm_end,
            ExceptionEvent: self._on_exception,
        }

    def _capture(self) -> Capture:
        return (self.ragtrace or current()).capture

    def _error(self, site: str, exc: BaseException) -> None:
        with contextlib.suppress(Exception):
            (self.ragtrace or current()).diagnostics.error(site, exc)

    def open_requests(self) -> int:
        """Requests this tracer is following (for tests and debugging)."""
        return sum(1 for key, root in list(self._span_root.items()) if key == root.key)

    # -- spans ----------------------------------------------------------------------------------

    def span_enter(
        self, id_: str, bound_args: Any, instance: Any, parent_id: str | None, tags: Any
    ) -> None:
        try:
            root = self._span_root.get(parent_id) if parent_id is not None else None
            if root is None:
                root = lent.get()  # a span started while a wrapped stream is being read
                if root is None or root.finished:
                    self._maybe_begin(id_, bound_args, instance, tags)
                    return
            elif self._inside and (flags := self._inside.get(parent_id or "")):
                self._inside[id_] = flags
            self._span_root[id_] = root
            if root.agent and parent_id is not None and parent_id in self._span_root:
                self._agent_span(root, id_, bound_args, parent_id)
            else:
                root.capture.link(id_, root.key)
        except Exception as exc:
            self._error("llama_index.span_enter", exc)

    def _maybe_begin(self, id_: str, bound_args: Any, instance: Any, tags: Any) -> None:
        if instance is None:
            return
        cls = type(instance)
        kind = self._root_types.get(cls)
        if kind is None:
            if isinstance(instance, ag.AGENT_TYPES):
                kind = _AGENT
            elif isinstance(instance, chats.CHAT_ENGINES):
                kind = _CHAT
            elif not isinstance(instance, BaseLLM) and any(hasattr(cls, m) for m in ROOT_METHODS):
                kind = _ENGINE
            else:
                kind = _NOT_ROOT
            self._root_types[cls] = kind
        if kind == _AGENT and ex.span_method(id_) == ag.RUN_METHOD:
            self._begin_agent(id_, bound_args, tags)
            return
        if kind not in (_ENGINE, _CHAT) or ex.span_method(id_) not in ROOT_METHODS:
            return
        capture = self._capture()
        metadata = tags if isinstance(tags, dict) and tags else None
        turn = chats.ChatTurn(instance, bound_args) if kind == _CHAT else None
        if turn is not None and turn.session_id is not None and capture.config.session_id_keys:
            metadata = dict(metadata or {})
            metadata.setdefault(capture.config.session_id_keys[0], turn.session_id)
        request = capture.begin_request(
            id_,
            name=ex.span_name(id_),
            query=ex.query_text(ex.first_argument(bound_args)),
            metadata=metadata,
        )
        if request is not None:
            root = _Root(id_, capture)
            self._span_root[id_] = root
            if turn is not None:
                self._begin_chat(root, turn)
            if self._waiting:
                self._sweep()

    def _begin_chat(self, root: _Root, turn: chats.ChatTurn) -> None:
        """Give a chat engine's turn its earlier turns (``chats``), now or from its answer."""
        root.condenses = turn.condenses
        if turn.history is not None:
            root.capture.set_conversation(root.key, turn.history)
        else:
            root.history_sent = turn.history_in_messages

    def _begin_agent(self, id_: str, bound_args: Any, tags: Any) -> None:
        """Open the request of an agent workflow's run (one user turn)."""
        capture = self._capture()
        start = ag.start_event(bound_args)
        request = capture.begin_request(
            id_,
            name=ex.span_name(id_),
            query=ag.user_query(start),
            metadata=ag.request_metadata(start, tags, capture.config.session_id_keys),
            agent=True,
        )
        if request is not None:
            root = _Root(id_, capture)
            root.agent = True
            self._span_root[id_] = root

    def _agent_span(self, root: _Root, id_: str, bound_args: Any, parent_id: str) -> None:
        """A span inside an agent's run: a tool call, or a run linked to its own parent (and
        the first agent input gives the request its conversation)."""
        capture = root.capture
        self._parent[id_] = parent_id
        tool = ag.tool_start(bound_args)
        if tool is not None:
            name, arguments, call_id = tool
            capture.begin_tool(id_, parent_id, name=name, arguments=arguments, call_id=call_id)
            self._tools[id_] = root
            return
        capture.link(id_, parent_id)
        if root.heard:
            return
        event = ag.agent_input(bound_args)
        if event is None:
            return
        root.heard = True
        history, question = ag.conversation(event)
        request = capture.request_of(root.key)
        if request is not None and request.query is None:
            capture.set_query(root.key, question)
        capture.set_conversation(root.key, history)

    def _end_tool(self, owner: _Root, id_: str, result: Any) -> None:
        """End a tool call with what its ``ToolCallResult`` says (an unreadable one still ends
        it, so that its request is not left with an open step)."""
        errors: list[BaseException] = []
        output = documents = error = None
        try:
            output, documents, error = ag.tool_end(result, owner.capture.config.max_chunks, errors)
        except Exception as exc:
            errors.append(exc)
        for failure in errors:
            self._error("llama_index.tool_result", failure)
        owner.capture.end_tool(id_, output=output, documents=documents, error=error)

    def span_exit(self, id_: str, instance: Any, result: Any) -> None:
        try:
            if self._inside:
                self._inside.pop(id_, None)
            if self._parent:
                self._parent.pop(id_, None)
                if self._tools and (owner := self._tools.pop(id_, None)) is not None:
                    self._span_root.pop(id_, None)
                    self._end_tool(owner, id_, result)
                    return
            if self._retrievals and id_ in self._retrievals:  # ended without its end event
                self._retrievals.pop(id_).capture.end_retrieval(id_, ())
            root = self._span_root.get(id_)
            if root is None:
                return
            if id_ == root.key:
                self._end_root(root, result)
                return
            self._span_root.pop(id_, None)
            if id_ not in self._llms:  # an LLM step that still streams keeps its run
                root.capture.unlink(id_)
            if type(instance) is StreamingAgentChatResponse:
                self._writer_done(root, instance, None)
        except Exception as exc:
            self._error("llama_index.span_exit", exc)

    def span_drop(self, id_: str, instance: Any, err: BaseException | None) -> None:
        try:
            if self._inside:
                self._inside.pop(id_, None)
            if self._parent:
                self._parent.pop(id_, None)
                if self._tools and (owner := self._tools.pop(id_, None)) is not None:
                    self._span_root.pop(id_, None)
                    owner.capture.fail_run(id_, err)
                    return
            step = self._retrievals.pop(id_, None) or self._llms.pop(id_, None)
            if step is not None:
                step.streams.pop(id_, None)
                step.capture.fail_run(id_, err)
            root = self._span_root.get(id_)
            if root is None:
                return
            if id_ == root.key:
                self._finish(root, error=err)
                return
            self._span_root.pop(id_, None)
            if step is None:
                root.capture.unlink(id_)
            if type(instance) is StreamingAgentChatResponse:
                self._writer_done(root, instance, err)
        except Exception as exc:
            self._error("llama_index.span_drop", exc)

    # -- request ends ---------------------------------------------------------------------------

    def _end_root(self, root: _Root, result: Any) -> None:
        if root.agent:  # a run that ends with no result was cancelled by its caller
            self._finish(root, answer=ag.answer(result), abandoned=result is None)
            return
        kind = ex.result_kind(result, self._result_kinds)
        if kind == ex.ANSWER:
            self._finish(root, answer=result.response)
        elif kind == ex.STRING:
            self._finish(root, answer=result)
        elif kind == ex.TOKEN_STREAM:
            gen = result.response_gen
            if gen is None or result.response_txt is not None:
                self._finish(root, answer=result.response_txt)
                return
            self._wait(root, result)
            wrap = relay_async if isinstance(result, AsyncStreamingResponse) else relay
            result.response_gen = wrap(gen, root, self._stream_ender(root))
        elif kind == ex.CHAT_STREAM:
            if result.chat_stream is None and result.achat_stream is None:
                self._finish(root, answer=result.response)
                return
            self._wait(root, result)
            if any(w is result for w in root.done_writers):  # the writer was quicker
                self._finish(root, answer=result.response or root.last_output, error=root.error)
        else:
            answer = getattr(result, "response", None)
            self._finish(root, answer=answer if isinstance(answer, str) else None)

    def _wait(self, root: _Root, result: object) -> None:
        root.result = result
        root.waiting = True
        self._waiting[root.key] = root

    def _writer_done(self, root: _Root, writer: Any, err: BaseException | None) -> None:
        """A chat stream's history writer ended: its request ends now (or at its root's end)."""
        if err is not None:
            root.error = err
        root.done_writers.append(writer)
        if root.waiting and writer is root.result:
            self._finish(
                root, answer=getattr(writer, "response", None) or root.last_output, error=root.error
            )

    def _finish(
        self,
        root: _Root,
        *,
        answer: object = None,
        error: BaseException | None = None,
        abandoned: bool = False,
        closed: bool = False,
    ) -> None:
        """Forget ``root`` and end its request (``closed``: ``Capture`` already closed it)."""
        self._waiting.pop(root.key, None)
        if self._span_root.pop(root.key, None) is None:  # someone else finished it
            return
        root.finished = True
        for key in root.streams:
            self._llms.pop(key, None)
        if closed:
            return
        root.streams.clear()
        if error is not None:
            root.capture.fail_run(root.key, error)
        else:
            root.capture.end_request(root.key, answer=answer, abandoned=abandoned)

    def _sweep(self) -> None:
        """Forget waiting requests that ``Capture`` closed (streams nobody read to the end)."""
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + _SWEEP_INTERVAL_S
        for root in list(self._waiting.values()):
            if root.capture.request_of(root.key) is None:
                self._finish(root, closed=True)

    def _stream_ender(self, root: _Root) -> StreamEnd:
        def on_end(answer: str, error: BaseException | None, abandoned: bool) -> None:
            try:
                self._finish(root, answer=answer, error=error, abandoned=abandoned)
            except Exception as exc:
                self._error("llama_index.stream_end", exc)

        return on_end

    # -- events ---------------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        """Dispatch one LlamaIndex event by its class (subclasses resolved once, then cached)."""
        cls = type(event)
        try:
            handler = self._events[cls]
        except KeyError:
            handler = next((self._events[c] for c in cls.__mro__ if c in self._events), None)
            self._events[cls] = handler
        if handler is not None:
            try:
                handler(event)
            except Exception as exc:
                self._error("llama_index.event", exc)

    def _on_retrieval_start(self, event: Any) -> None:
        key = event.span_id
        if key is None or self._inside.get(key, 0) & _IN_RETRIEVAL:
            return
        root = self._span_root.get(key)
        if root is None:  # a retriever called on its own: a request of its own
            root, parent = _Root(key, self._capture()), None
        else:
            root.capture.unlink(key)  # the span becomes a step instead of a link
            parent = self._parent.get(key, root.key) if self._parent else root.key
        root.capture.begin_retrieval(
            key,
            parent,
            name=ex.span_class(key),
            query=ex.query_text(event.str_or_query_bundle),
        )
        self._retrievals[key] = root
        self._inside[key] = self._inside.get(key, 0) | _IN_RETRIEVAL

    def _on_retrieval_end(self, event: Any) -> None:
        key = event.span_id
        owner = self._retrievals.pop(key, None)
        if owner is None:
            return
        chunks: list[RawChunk] = []
        errors: list[BaseException] = []
        try:
            chunks = list(ex.raw_chunks(event.nodes, owner.capture.config.max_chunks, errors))
        except Exception as exc:
            errors.append(exc)
        for error in errors:
            self._error("llama_index.chunk", error)
        owner.capture.end_retrieval(key, chunks)

    def _on_chat_start(self, event: Any) -> None:
        messages = ex.chat_messages(event.messages)
        self._begin_llm(event, messages, sc.GEN_AI_OP_CHAT)
        root = self._span_root.get(event.span_id) if event.span_id is not None else None
        if root is not None and root.history_sent:
            # The engine's memory was not read: the answer call shows the history it sent
            # (a condense call before it shows none, and the answer's messages replace it).
            history = chats.sent_history(messages)
            if history is not None:
                root.capture.set_conversation(root.key, history)

    def _on_completion_start(self, event: Any) -> None:
        self._begin_llm(event, [("user", event.prompt)], sc.GEN_AI_OP_TEXT_COMPLETION)

    def _begin_llm(self, event: Any, messages: list[tuple[str, object]], operation: str) -> None:
        key = event.span_id
        if key is None or self._inside.get(key, 0) & _IN_LLM:
            return
        name = ex.span_class(key)
        root = self._span_root.get(key)
        if root is None:  # an LLM called on its own: a request of its own
            root, parent = _Root(key, self._capture()), None
        elif root.streams and name in root.streams.values():
            # The same LLM starting while its stream is read: its own inner call (a
            # CustomLLM's stream_chat -> stream_complete), not a second step.
            self._inside[key] = self._inside.get(key, 0) | _IN_LLM
            return
        else:
            root.capture.unlink(key)
            parent = self._parent.get(key, root.key) if self._parent else root.key
        model, provider = ex.model_of(event.model_dict)
        root.capture.begin_llm(
            key,
            parent,
            name=name,
            model=model,
            provider=provider,
            messages=messages,
            operation=operation,
        )
        self._llms[key] = root
        if "stream" in ex.span_method(key):
            root.streams[key] = name
        self._inside[key] = self._inside.get(key, 0) | _IN_LLM

    def _on_token(self, event: Any) -> None:
        owner = self._llms.get(event.span_id)
        if owner is not None:
            owner.capture.llm_token(event.span_id, event.response.delta)

    def _on_llm_end(self, event: Any) -> None:
        key = event.span_id
        owner = self._llms.pop(key, None)
        if owner is None:
            return
        owner.streams.pop(key, None)
        response = event.response
        text = model = n_in = n_out = None
        try:
            text = ex.response_text(response)
            model, n_in, n_out = ex.usage_of(response)
        except Exception as exc:
            self._error("llama_index.llm_response", exc)
        owner.capture.end_llm(key, output=text, model=model, input_tokens=n_in, output_tokens=n_out)
        if text is not None:
            owner.last_output = text
            if owner.condenses:  # a condensing chat engine's first call: the rewrite
                owner.condenses = False
                owner.capture.set_standalone_query(owner.key, text)

    def _on_exception(self, event: Any) -> None:
        exc = event.exception
        if isinstance(exc, GeneratorExit):
            return  # the reader closed the stream: the request ends as abandoned
        owner = self._llms.pop(event.span_id, None)
        if owner is not None:
            owner.streams.pop(event.span_id, None)
            owner.capture.fail_run(event.span_id, exc)
