"""The LangChain adapter: how ``ragtrace eval`` and ``ragtrace.testing.ask`` call a runnable.

An app with a callable ``invoke`` is a LangChain runnable (a chain, a
``langchain.agents.create_agent`` agent, a compiled LangGraph graph). ``RunnableCaller(name,
runnable).call(query)`` invokes it with the input it wants for the question
(``ragtrace.integrations.langchain._inputs``: the question string for a chain over a string,
``{"messages": [...]}`` for a ``create_agent`` agent or a LangGraph graph over messages,
``{"question": ...}`` for a graph or chain over a query key) and a ``RagtraceCallbackHandler``
of a private ``Ragtrace`` (no evaluators, no exporters, its own tracer provider and metrics
registry, no port), so the call carries the record the capture saw of the turn: the documents
retrieved (by retrievers, inside tools, in a tool's artifact) in rank order with ids and scores,
the tools called, the LLM calls made, the conversation, the model's name, the final answer (an
agent's last AI message) and the tokens the model reported (``gen_ai.usage.*``). This works
whatever the runnable returns, which reading the return value could not. A runnable without
callbacks captures nothing: its return value is read instead.

``call(query, conversation)`` asks a multi-turn case:

- a LangGraph graph with a checkpointer is asked each earlier user turn in order, then the
  question, all in one thread (``configurable.thread_id``: the case's ``session_id``, or a
  fresh id; a session id asked again, e.g. perturbed, gets a new thread ``f"{id}~N"``); only
  the last turn is the answer. A graph with a checkpointer always gets a thread;
- a runnable over ``messages`` or with a ``chat_history`` / ``history`` input gets the earlier
  turns in it;
- any other runnable is asked the question alone.

Invocations are sequential; the capture's text limits are raised so nothing is cut offline.
A LangChain message returned by an app reads as its ``content``, a ``Document`` as a context
with its ``page_content``, ``id``, ``metadata`` and a score from its metadata (``SCORE_KEYS``).
Nothing here imports LangChain until a runnable is called.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ragtrace._model import Conversation, RagRecord
from ragtrace.integrations._adapters import Called
from ragtrace.integrations.langchain._inputs import input_shape

MAX_TEXT_CHARS = 10_000_000
MAX_CHUNKS = 10_000
SCORE_KEYS = ("score", "relevance_score", "similarity_score", "similarity")


class LangChainAdapter:
    """LangChain's ``FrameworkAdapter`` (``ragtrace.integrations._adapters``)."""

    name = "langchain"
    app_kind = "a LangChain runnable (.invoke)"

    def matches(self, app: object) -> bool:
        return callable(getattr(app, "invoke", None))

    def caller(self, name: str, app: Any) -> RunnableCaller:
        return RunnableCaller(name, app)

    def reply(self, value: object) -> Mapping[str, object] | None:
        content = getattr(value, "content", None)  # a message
        return {"response": content} if isinstance(content, str) else None

    def context(self, item: object) -> Mapping[str, object] | None:
        page = getattr(item, "page_content", None)
        if not isinstance(page, str):
            return None
        metadata = getattr(item, "metadata", None)
        score = (
            next((metadata[k] for k in SCORE_KEYS if k in metadata), None)
            if isinstance(metadata, Mapping)
            else None
        )
        return {"text": page, "id": getattr(item, "id", None), "score": score,
                "metadata": metadata}  # fmt: skip

    def passage_text(self, item: object) -> object | None:
        return getattr(item, "page_content", None)


ADAPTER = LangChainAdapter()


class RunnableCaller:
    """A LangChain runnable, asked with ``invoke(input, config=...)``.

    Args:
        name: The system's name (also the capture's app name).
        runnable: Anything with LangChain's ``invoke(input, config=...)``.
    """

    def __init__(self, name: str, runnable: Any) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from prometheus_client import CollectorRegistry

        from ragtrace._config import Config
        from ragtrace._runtime import Ragtrace
        from ragtrace.integrations.langchain._handler import RagtraceCallbackHandler

        self.name = name
        self.runnable = runnable
        config = Config(
            app=name,
            max_text_chars=MAX_TEXT_CHARS,
            max_chunk_chars=MAX_TEXT_CHARS,
            max_chunks=MAX_CHUNKS,
            evaluators=(),
        )
        self._ragtrace = Ragtrace(
            config,
            tracer_provider=TracerProvider(),
            registry=CollectorRegistry(),
            evaluators=[],
            export_evaluation_spans=False,
        )
        self._records: list[RagRecord] = []
        self._ragtrace.add_record_sink(self._records.append)
        self._callbacks = [RagtraceCallbackHandler(self._ragtrace)]
        self.shape = input_shape(runnable, config.query_keys)
        self._threads: dict[str, int] = {}

    def call(self, query: str, conversation: Conversation | None = None) -> Called:
        shape = self.shape
        history = conversation.history if conversation is not None else ()
        config: dict[str, Any] = {"callbacks": self._callbacks}
        if shape.threaded:
            config["configurable"] = {"thread_id": self._thread_id(conversation)}
            for turn in history:
                if turn.role == "user":
                    self.runnable.invoke(shape.build(turn.content), config=config)
        elif conversation is not None and conversation.session_id is not None:
            config["metadata"] = {"session_id": conversation.session_id}
        self._records.clear()
        given = history if shape.takes_history else ()
        result = self.runnable.invoke(shape.build(query, given), config=config)
        # The root request ends last.
        return Called(result, self._records[-1] if self._records else None)

    def _thread_id(self, conversation: Conversation | None) -> str:
        """The case's session id the first time it is asked, then ``f"{id}~N"``; else new."""
        session_id = conversation.session_id if conversation is not None else None
        if session_id is None:
            return uuid.uuid4().hex
        seen = self._threads.get(session_id, 0) + 1
        self._threads[session_id] = seen
        return session_id if seen == 1 else f"{session_id}~{seen}"

    def close(self) -> None:
        self._ragtrace.shutdown()
