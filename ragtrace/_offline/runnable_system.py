"""A LangChain runnable as a ``ragtrace eval`` system, read through ragtrace's own capture.

``RunnableSystem(name, runnable).ask(query)`` invokes the runnable with the input it wants for
the question (``ragtrace._offline.runnable_inputs``: the question string for a chain over a
string, ``{"messages": [...]}`` for a ``create_agent`` agent or a LangGraph graph over
messages, ``{"question": ...}`` for a graph or chain over a query key) and a
``RagtraceCallbackHandler`` of a private ``Ragtrace`` (no evaluators, no exporters, its own
tracer provider and metrics registry, no port), so the answer carries what the capture saw of
the turn: the documents retrieved (by retrievers, inside tools, in a tool's artifact) in rank
order with ids and scores, the tools called, the LLM calls made, the conversation, the model's
name, the final answer (an agent's last AI message) and the tokens the model reported
(``gen_ai.usage.*``). This works whatever the runnable returns, which reading the return value
could not. When no request was captured (a runnable without callbacks), the return value is
read instead (``ragtrace._offline.answers.answer_from``).

``ask(query, conversation)`` asks a multi-turn case (``ragtrace._offline.case_conversations``):

- a LangGraph graph with a checkpointer is asked each earlier user turn in order, then the
  question, all in one thread (``configurable.thread_id``: the case's ``session_id``, or a
  fresh id; a session id asked again, e.g. perturbed, gets a new thread ``f"{id}~N"``); only
  the last turn is the answer. A graph with a checkpointer always gets a thread;
- a runnable over ``messages`` or with a ``chat_history`` / ``history`` input gets the earlier
  turns in it;
- any other runnable is asked the question alone.

The answer's ``conversation`` is the one the capture saw (the thread's real earlier turns),
else the case's. Invocations are sequential; the capture's text limits are raised so nothing
is cut offline.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from ragtrace import _semconv as sc
from ragtrace._model import Conversation, RagRecord
from ragtrace._offline.answers import Answer, answer_from, usage_from
from ragtrace._offline.runnable_inputs import input_shape

MAX_TEXT_CHARS = 10_000_000
MAX_CHUNKS = 10_000


class RunnableSystem:
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
        from ragtrace.integrations.langchain import RagtraceCallbackHandler

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

    def ask(self, query: str, conversation: Conversation | None = None) -> Answer:
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
        if not self._records:
            return answer_from(result)
        record = self._records[-1]  # the root request ends last
        response = record.response
        if response is None:
            response = answer_from(result).response
        usage = usage_from(
            {
                "input_tokens": record.attributes.get(sc.GEN_AI_USAGE_INPUT_TOKENS),
                "output_tokens": record.attributes.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS),
            }
        )
        return Answer(
            response,
            record.chunks,
            record.model,
            usage,
            tool_calls=record.tool_calls,
            llm_calls=record.llm_calls,
            conversation=merged(record.conversation, conversation),
        )

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


def merged(captured: Conversation | None, case: Conversation | None) -> Conversation | None:
    """The conversation of an answer: what the capture saw, with the case's earlier turns
    when the capture saw none (a runnable that was not given them)."""
    if captured is None:
        return case
    if case is None:
        return captured
    session_id = captured.session_id or case.session_id
    if captured.history or not case.history:
        return replace(captured, session_id=session_id)
    return replace(captured, session_id=session_id, history=case.history, turn=case.turn)
