"""LangChain callback handler: each top-level run (one user turn) becomes a trace and a RagRecord.

Per call::

    handler = RagtraceCallbackHandler()
    chain.invoke("What is X?", config={"callbacks": [handler]})

or for every run in the process with ``ragtrace.integrations.langchain.instrument()``.

The handler runs inline (``run_inline = True``): LangChain calls it on the application's own
thread or task instead of through its thread pool, so async requests never wait on a pool and
each run's events arrive in order. Runs are keyed by ``run_id`` and parented by
``parent_run_id``. Only the root run, retrievers, LLMs and tool calls get spans; every other
run is linked to its request so its children find it.

A LangGraph graph (``create_agent``, a compiled ``StateGraph``, its subgraphs) is one request:
its nodes, LLM steps and tools are parts of it. The query is the last user message of the
input in any form LangChain accepts (a message object, a ``{"role": ..., "content": ...}`` or
``{"type": "human", ...}`` dict, a ``("user", text)`` pair, a plain string), or the first of
``Config.query_keys``; the answer the first of ``Config.answer_keys`` in the output, else its
last AI message when that message calls no tool. The messages before the user's last one
(in the input, or in the output of a graph that keeps its thread with a checkpointer) are the
conversation's earlier turns; LangGraph's ``thread_id`` and the metadata's ``session_id`` /
``user_id`` name it (``Config.session_id_keys``, ``Config.user_id_keys``), else the same keys in
the call's ``configurable``, read at the request's first step that sees it. A tool that returns
documents as its artifact (``response_format="content_and_artifact"``) gives them to the record.

Chunk ids come from ``Document.id``, else the first of ``Config.chunk_id_keys`` in the metadata;
scores from the first of ``Config.chunk_score_keys`` in the metadata.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from ragtrace import _semconv as sc
from ragtrace._capture import Capture, Message, Request
from ragtrace._runtime import Ragtrace, current
from ragtrace.integrations.langchain._documents import raw_chunks, tool_result
from ragtrace.integrations.langchain._messages import (
    ROLES,
    content_text,
    earlier_turns,
    find_answer,
    find_query,
)

_MAP_KEY_TAG = "map:key:"


def _start_callback(body: Callable[..., None]) -> Callable[..., None]:
    """A start callback with LangChain's signature (``on_chain_start``, ``on_retriever_start``,
    ``on_chat_model_start``, ``on_llm_start``, ``on_tool_start``) around ``body``, which never
    raises: what ``body`` raises is logged and counted at ``langchain.<callback>``.

    ``body(handler, serialized, payload, run_id, parent_run_id, tags, metadata, kwargs)`` gets
    the arguments as they came, positionally, the rest of the keywords as one dict: the guard
    adds a call, and builds no tuple or dict of its own per call.
    """
    site = f"langchain.{body.__name__}"

    def callback(
        self: RagtraceCallbackHandler,
        serialized: dict[str, Any] | None,
        payload: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            body(self, serialized, payload, run_id, parent_run_id, tags, metadata, kwargs)
        except Exception as exc:
            self._error(site, exc)

    return _named(callback, body)


def _end_callback(body: Callable[..., None]) -> Callable[..., None]:
    """An end or error callback with LangChain's signature (``on_chain_end``,
    ``on_retriever_end``, ``on_llm_end``, ``on_tool_end``, ``on_*_error``) around ``body``,
    guarded as ``_start_callback``'s: ``body(handler, payload, run_id, parent_run_id,
    kwargs)``."""
    site = f"langchain.{body.__name__}"

    def callback(
        self: RagtraceCallbackHandler,
        payload: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            body(self, payload, run_id, parent_run_id, kwargs)
        except Exception as exc:
            self._error(site, exc)

    return _named(callback, body)


def _named(callback: Callable[..., None], body: Callable[..., None]) -> Callable[..., None]:
    callback.__name__, callback.__qualname__ = body.__name__, body.__qualname__
    callback.__doc__ = body.__doc__
    return callback


class RagtraceCallbackHandler(BaseCallbackHandler):
    """Captures LangChain runs into ragtrace spans and records.

    Args:
        ragtrace: The instance to report to; default: the current one (``ragtrace.init``).
    """

    run_inline = True
    raise_error = False

    def __init__(self, ragtrace: Ragtrace | None = None) -> None:
        super().__init__()
        self._ragtrace = ragtrace

    def _capture(self) -> Capture:
        return (self._ragtrace or current()).capture

    def _error(self, site: str, exc: BaseException) -> None:
        with contextlib.suppress(Exception):
            (self._ragtrace or current()).diagnostics.error(site, exc)

    # -- chains (the root of a request, or linked runs) ---------------------------------------

    @_start_callback
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        capture = self._capture()
        if parent_run_id is not None:
            request = capture.link(run_id, parent_run_id)
            if request is not None:
                _seek_ids(capture, request)
                if request.turn is None and isinstance(inputs, Mapping):
                    # A history-injecting wrapper (``RunnableWithMessageHistory``) hands
                    # the earlier turns to its inner chain only.
                    history = earlier_turns(inputs, from_messages=False)
                    if history is not None:
                        capture.set_conversation(request.key, history)
                return
        cfg = capture.config
        request = capture.begin_request(
            run_id,
            name=kwargs.get("name") or _serialized_name(serialized),
            query=find_query(inputs, cfg.query_keys),
            input_fallback=inputs,
            metadata=_user_metadata(metadata),
            agent=_is_agent(metadata),
        )
        if request is not None:
            history = earlier_turns(inputs)
            if history is not None:
                capture.set_conversation(run_id, history)

    @_end_callback
    def on_chain_end(
        self, outputs: Any, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any]
    ) -> None:
        capture = self._capture()
        if parent_run_id is not None and capture.request_of(parent_run_id) is not None:
            capture.unlink(run_id)
            return
        cfg = capture.config
        if "inputs" in kwargs:
            capture.set_query(run_id, find_query(kwargs["inputs"], cfg.query_keys))
        history = earlier_turns(outputs)
        if history:  # a graph with a checkpointer: the thread's earlier turns
            capture.set_conversation(run_id, history)
        capture.end_request(run_id, answer=find_answer(outputs, cfg.answer_keys))

    @_end_callback
    def on_chain_error(
        self, error: BaseException, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any]
    ) -> None:
        """A chain, retriever or LLM failed (the same for all three)."""
        self._capture().fail_run(run_id, error)

    # -- tools --------------------------------------------------------------------------------

    @_start_callback
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        inputs = kwargs.get("inputs")
        self._capture().begin_tool(
            run_id,
            parent_run_id,
            name=_serialized_name(serialized) or kwargs.get("name"),
            arguments=inputs if inputs is not None else input_str,
            call_id=kwargs.get("tool_call_id"),
        )

    @_end_callback
    def on_tool_end(
        self, output: Any, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any]
    ) -> None:
        content, documents, failure = tool_result(output)
        self._capture().end_tool(run_id, output=content, documents=documents, error=failure)

    @_end_callback
    def on_tool_error(
        self, error: BaseException, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any]
    ) -> None:
        self._capture().end_tool(run_id, error=error)

    # -- retrievers ---------------------------------------------------------------------------

    @_start_callback
    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        name = kwargs.get("name") or _serialized_name(serialized) or sc.SPAN_NAME_RETRIEVAL
        map_key = _map_key(tags)
        source = f"{map_key}/{name}" if map_key else name
        capture = self._capture()
        _seek_ids(capture, capture.request_of(parent_run_id))
        capture.begin_retrieval(run_id, parent_run_id, name=source, query=query)

    @_end_callback
    def on_retriever_end(
        self,
        documents: Sequence[Document],
        run_id: UUID,
        parent_run_id: UUID | None,
        kwargs: dict[str, Any],
    ) -> None:
        self._capture().end_retrieval(run_id, raw_chunks(documents))

    on_retriever_error = on_chain_error

    # -- LLMs ---------------------------------------------------------------------------------

    @_start_callback
    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        prompt: list[Message] = []
        for message in (messages or [[]])[0] or ():
            role = getattr(message, "type", "user")
            prompt.append((ROLES.get(role, role), content_text(message)))
        self._begin_llm(
            run_id, parent_run_id, serialized, metadata, kwargs, prompt, sc.GEN_AI_OP_CHAT
        )

    @_start_callback
    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        prompt: list[Message] = [("user", p) for p in (prompts or ())[:1]]
        operation = sc.GEN_AI_OP_TEXT_COMPLETION
        self._begin_llm(run_id, parent_run_id, serialized, metadata, kwargs, prompt, operation)

    def _begin_llm(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        serialized: dict[str, Any] | None,
        metadata: dict[str, Any] | None,
        kwargs: dict[str, Any],
        prompt: list[Message],
        operation: str,
    ) -> None:
        meta = metadata or {}
        params = kwargs.get("invocation_params") or {}
        model = (
            meta.get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or params.get("_type")
        )
        capture = self._capture()
        _seek_ids(capture, capture.request_of(parent_run_id))
        capture.begin_llm(
            run_id,
            parent_run_id,
            name=kwargs.get("name") or _serialized_name(serialized),
            model=model,
            provider=meta.get("ls_provider"),
            messages=prompt,
            operation=operation,
        )

    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """One streamed token. Guarded inline, not by ``_end_callback``: it runs once per token,
        and LangChain passes ``token`` by name."""
        try:
            if isinstance(token, str):
                self._capture().llm_token(run_id, token)
        except Exception as exc:
            self._error("langchain.on_llm_new_token", exc)

    @_end_callback
    def on_llm_end(
        self, response: LLMResult, run_id: UUID, parent_run_id: UUID | None, kwargs: dict[str, Any]
    ) -> None:
        text, model, n_in, n_out = _llm_result(response)
        self._capture().end_llm(
            run_id, output=text, model=model, input_tokens=n_in, output_tokens=n_out
        )

    on_llm_error = on_chain_error


# -- extractors: small, each tolerant of anything ---------------------------------------------


def _serialized_name(serialized: Mapping[str, Any] | None) -> str | None:
    if not isinstance(serialized, Mapping):
        return None
    name = serialized.get("name")
    if isinstance(name, str):
        return name
    ident = serialized.get("id")
    if isinstance(ident, list) and ident and isinstance(ident[-1], str):
        return ident[-1]
    return None


def _seek_ids(capture: Capture, request: Request | None) -> None:
    """Give a request the session and user ids of its ``configurable``. LangChain shows the
    config only to the runs inside a request (LangGraph only to those inside its nodes): it is
    read at the first run that sees it."""
    if request is None or request.ids_sought:
        return
    config = var_child_runnable_config.get()
    if not config:
        return
    found = config.get("configurable")
    capture.set_ids(
        request.key,
        {
            key: value
            for key, value in found.items()
            if isinstance(value, str | int) and not isinstance(value, bool)
        }
        if isinstance(found, Mapping)
        else None,
    )


def _is_agent(metadata: Mapping[str, Any] | None) -> bool:
    """Whether a root run is a LangChain agent (``create_agent`` says so in its metadata)."""
    return bool(metadata) and str(metadata.get("ls_integration", "")).endswith("_agent")  # type: ignore[union-attr]


def _map_key(tags: list[str] | None) -> str | None:
    for tag in reversed(tags or ()):
        if isinstance(tag, str) and tag.startswith(_MAP_KEY_TAG):
            return tag[len(_MAP_KEY_TAG) :]
    return None


def _user_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not metadata:
        return None
    return {k: v for k, v in metadata.items() if not str(k).startswith("ls_")} or None


def _llm_result(response: Any) -> tuple[Any, Any, Any, Any]:
    """(text, response model, input tokens, output tokens) of an LLMResult."""
    text = model = n_in = n_out = None
    generations = getattr(response, "generations", None) or [[]]
    first = generations[0][0] if generations and generations[0] else None
    if first is not None:
        message = getattr(first, "message", None)
        text = content_text(message) if message is not None else getattr(first, "text", None)
        usage = getattr(message, "usage_metadata", None)
        if isinstance(usage, Mapping):
            n_in, n_out = usage.get("input_tokens"), usage.get("output_tokens")
        meta = getattr(message, "response_metadata", None)
        if isinstance(meta, Mapping):
            model = meta.get("model_name") or meta.get("model")
    llm_output = getattr(response, "llm_output", None)
    if isinstance(llm_output, Mapping):
        model = model or llm_output.get("model_name") or llm_output.get("model")
        usage = llm_output.get("token_usage") or llm_output.get("usage")
        if isinstance(usage, Mapping) and n_in is None:
            n_in = usage.get("prompt_tokens", usage.get("input_tokens"))
            n_out = usage.get("completion_tokens", usage.get("output_tokens"))
    return text, model, n_in, n_out
