"""A LangChain agent traced by a peer's real instrumentation, exporting OTLP/HTTP: run it in the
peers' environment (``.venv-bench``, see ``requirements/peers.txt``)::

    .venv-bench/bin/python tests/ingest/peer_agent_app.py --instrumentation openinference \\
        --endpoint http://127.0.0.1:4318/v1/traces

The app is a ``langchain.agents.create_agent`` agent with a scripted tool-calling chat model
(``FakeMessagesListChatModel``), a retriever tool (``search_docs``, whose retriever returns
documents with ids and scores) and a tool that fails (``order_status``: a middleware turns its
exception into an error ``ToolMessage``, as an app does to let the model go on). It holds a
two-turn conversation on thread ``t-1`` for user ``u-1`` with LangGraph's ``InMemorySaver``:

- turn 1: ``search_docs``, ``order_status`` (fails), then the answer (3 LLM calls);
- turn 2: ``search_docs``, then the answer (2 LLM calls).

The chosen instrumentation (``openinference``, ``openllmetry`` or ``ragtrace``) exports to
``--endpoint``; ragtrace's own capture watches the same turns on a provider that exports nothing
(unless it is the chosen one) and prints its records as JSON lines: what ``ragtrace ingest``
must rebuild from the exported spans. ``--dump FILE`` writes the exported spans as JSON too
(to see what a peer exports).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

INSTRUMENTATIONS = ("openinference", "openllmetry", "ragtrace")
THREAD_ID, USER_ID = "t-1", "u-1"
QUESTIONS = (
    "How do I get a refund for my annual plan, and where is my order A-17?",
    "And how long does the credit take?",
)
ANSWERS = (
    "Cancel from the billing page: the unused months come back as a prorated credit. "
    "I could not look up order A-17 right now.",
    "The credit reaches the card on file within five business days.",
)
SEARCHES = ("refund annual plan", "prorated credit delay")
DOCS: dict[str, list[tuple[str, str, float]]] = {
    SEARCHES[0]: [
        ("kb-refund-1", "Annual plans can be cancelled at any time from the billing page.", 0.91),
        ("kb-refund-2", "Unused months are refunded as a prorated credit.", 0.84),
    ],
    SEARCHES[1]: [
        ("kb-credit-1", "Credits reach the card on file within five business days.", 0.88),
    ],
}
TOOL_NAMES = (("search_docs", "order_status"), ("search_docs",))


def record_json(record: Any) -> dict[str, Any]:
    """The fields of an agent's ``RagRecord`` that the rebuilt record is compared on, as JSON."""
    conversation = record.conversation
    return {
        "trace_id": record.trace_id,
        "span_id": record.span_id,
        "app": record.app,
        "query": record.query,
        "response": record.response,
        "model": record.model,
        "status": record.status,
        "error": record.error,
        "llm_calls": record.llm_calls,
        "chunks": [
            {
                "id": c.id,
                "score": c.score,
                "text": c.text,
                "source": c.source,
                "query": c.query,
                "step": c.step,
            }
            for c in record.chunks
        ],
        "tool_calls": [
            {
                "name": t.name,
                "arguments": t.arguments,
                "status": t.status,
                "error": t.error,
                "call_id": t.call_id,
            }
            for t in record.tool_calls
        ],
        "conversation": None
        if conversation is None
        else {
            "session_id": conversation.session_id,
            "user_id": conversation.user_id,
            "turn": conversation.turn,
            "history": [[t.role, t.content] for t in conversation.history],
        },
    }


def build_agent() -> Any:
    """The agent: scripted model, ``search_docs`` (a retriever tool) and ``order_status``
    (always fails), with an in-memory checkpointer."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import wrap_tool_call
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import create_retriever_tool, tool
    from langgraph.checkpoint.memory import InMemorySaver

    class ScriptedModel(FakeMessagesListChatModel):
        """A fake chat model that "binds" tools by ignoring them (its answers are scripted)."""

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    class HandbookRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(id=i, page_content=text, metadata={"score": score})
                for i, text, score in DOCS.get(query, [])
            ]

    search_docs = create_retriever_tool(
        HandbookRetriever(), "search_docs", "Search the help-centre handbook."
    )

    @tool
    def order_status(order_id: str) -> str:
        """Look up an order's status."""
        raise RuntimeError(f"order service unavailable for {order_id}")

    @wrap_tool_call  # type: ignore[arg-type]
    def tool_errors_to_messages(request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except Exception as exc:
            call = request.tool_call
            return ToolMessage(
                content=f"Tool failed: {exc}", tool_call_id=call["id"], status="error"
            )

    def calls(*items: tuple[str, dict[str, Any], str]) -> AIMessage:
        return AIMessage(
            content="",
            tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in items],
        )

    script = [
        calls(("search_docs", {"query": SEARCHES[0]}, "call-1")),
        calls(("order_status", {"order_id": "A-17"}, "call-2")),
        AIMessage(content=ANSWERS[0]),
        calls(("search_docs", {"query": SEARCHES[1]}, "call-3")),
        AIMessage(content=ANSWERS[1]),
    ]
    return create_agent(
        ScriptedModel(responses=script),
        tools=[search_docs, order_status],
        system_prompt="You answer billing questions from the handbook.",
        middleware=[tool_errors_to_messages],
        checkpointer=InMemorySaver(),
    )


def run_turns(agent: Any) -> list[Any]:
    """Both turns of the conversation; returns the agent's final states."""
    config = {"configurable": {"thread_id": THREAD_ID}, "metadata": {"user_id": USER_ID}}
    return [
        agent.invoke({"messages": [{"role": "user", "content": q}]}, config=config)
        for q in QUESTIONS
    ]


def span_json(span: Any) -> dict[str, Any]:
    """An SDK span as plain JSON (for ``--dump``)."""
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(span.context.trace_id, "032x"),
        "start": span.start_time,
        "end": span.end_time,
        "status_description": span.status.description,
        "events_full": [[e.name, dict(e.attributes or {})] for e in span.events],
        "span_id": format(span.context.span_id, "016x"),
        "parent": format(parent.span_id, "016x") if parent is not None else None,
        "status": span.status.status_code.name,
        "attributes": dict(span.attributes or {}),
        "events": [e.name for e in span.events],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instrumentation", choices=INSTRUMENTATIONS, required=True)
    parser.add_argument("--endpoint", default=None)
    parser.add_argument("--service", default="peer-agent")
    parser.add_argument("--dump", default=None, help="also write the exported spans as JSON")
    args = parser.parse_args()
    from _overhead_apps import _load, apply_offline_env
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import CollectorRegistry

    import ragtrace
    from ragtrace.integrations.langchain import instrument
    from tests.ingest.peer_app import exporting_provider

    apply_offline_env(os.environ)
    provider = exporting_provider(args.endpoint, args.service)
    memory = InMemorySpanExporter()
    if args.dump:
        provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    if args.instrumentation != "ragtrace":
        _load(args.instrumentation, "langchain")().instrument(tracer_provider=provider)
    own = provider if args.instrumentation == "ragtrace" else TracerProvider()
    rt = ragtrace.init(
        app="peer-app", tracer_provider=own, registry=CollectorRegistry(), evaluators=()
    )
    records: list[Any] = []
    rt.add_record_sink(records.append)
    instrument()
    run_turns(build_agent())
    if not provider.force_flush(30_000):
        print("export did not finish", file=sys.stderr)
        return 1
    if args.dump:
        spans = sorted(memory.get_finished_spans(), key=lambda s: s.start_time or 0)
        Path(args.dump).write_text(json.dumps([span_json(s) for s in spans], indent=1))
    provider.shutdown()
    for record in records:
        print(json.dumps(record_json(record)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
