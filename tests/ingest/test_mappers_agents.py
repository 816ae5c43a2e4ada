"""Agents on hand-built spans, one convention at a time: each agent turn is ONE record.

The same turn in every convention: a user who said "Hi" and got "Hello!" asks "Where is my
refund?" in session ``s-1`` (user ``u-9``); the agent calls ``search_docs`` (whose retriever
holds a nested retriever: its documents count once), then ``order_status`` (which fails), and
answers after three LLM calls. The record must be what ragtrace's capture records for it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragtrace._ingest.mappers import map_trace
from ragtrace._ingest.spans import STATUS_ERROR, IngestEvent, IngestSpan, TraceView
from ragtrace._model import RETRIEVALS_KEY, Conversation, RagRecord, ToolCall, Turn
from tests.ingest.test_mappers_odd import span

QUERY, ANSWER = "Where is my refund?", "It is on its way."
ASKED = "refund status"
CHAT = [("user", "Hi"), ("assistant", "Hello!"), ("user", QUERY)]
FAILED = (
    IngestEvent("exception", 1, {"exception.type": "RuntimeError", "exception.message": "down"}),
)
CONVERSATION = Conversation(
    session_id="s-1",
    user_id="u-9",
    turn=1,
    history=(Turn("user", "Hi"), Turn("assistant", "Hello!")),
)
CALLS = (
    ("search_docs", '{"query":"refund status"}', "ok", None, "c1"),
    ("order_status", '{"order_id":"A-1"}', "error", "RuntimeError: down", "c2"),
)


def one_record(*spans: IngestSpan, convention: str, missing: tuple[str, ...] = ()) -> RagRecord:
    [mapped] = map_trace(TraceView(spans))
    assert mapped.convention == convention
    assert mapped.missing == missing
    return mapped.record


def assert_agent_turn(record: RagRecord, source: str) -> None:
    """The turn as capture records it (``source``: the retriever's name in the convention)."""
    assert (record.query, record.response, record.status) == (QUERY, ANSWER, "ok")
    assert [(c.id, c.text, c.source, c.query, c.step) for c in record.chunks] == [
        ("a", "Refunds take 5 days.", f"search_docs/{source}", ASKED, 0),
        ("b", "Credits go to the card.", f"search_docs/{source}", ASKED, 0),
    ]
    assert [(t.name, t.arguments, t.status, t.error, t.call_id) for t in record.tool_calls] == [
        *CALLS
    ]
    assert all(t.duration_s == 500e-9 for t in record.tool_calls)
    assert record.llm_calls == 3
    assert record.conversation == CONVERSATION


# -- OpenInference -----------------------------------------------------------------------------


def oi(kind: str, parent: IngestSpan | None = None, name: str = "step", **attrs: Any) -> IngestSpan:
    status = attrs.pop("status_code", 0)
    events = attrs.pop("events", ())
    return span(
        {"openinference.span.kind": kind, **attrs},
        parent,
        name=name,
        status_code=status,
        events=events,
    )


def oi_llm(parent: IngestSpan, call: tuple[str, str, str] | None) -> IngestSpan:
    prefix = "llm.output_messages.0.message"
    attrs: dict[str, Any] = {f"{prefix}.role": "assistant"}
    if call is None:
        attrs[f"{prefix}.content"] = ANSWER
    else:
        ident, name, arguments = call
        attrs[f"{prefix}.tool_calls.0.tool_call.id"] = ident
        attrs[f"{prefix}.tool_calls.0.tool_call.function.name"] = name
        attrs[f"{prefix}.tool_calls.0.tool_call.function.arguments"] = arguments
    return oi("LLM", parent, "ChatModel", **attrs)


def oi_retriever(parent: IngestSpan, docs: list[tuple[str, str]], name: str) -> IngestSpan:
    attrs: dict[str, Any] = {"input.value": ASKED}
    for i, (doc_id, text) in enumerate(docs):
        attrs[f"retrieval.documents.{i}.document.id"] = doc_id
        attrs[f"retrieval.documents.{i}.document.content"] = text
    return oi("RETRIEVER", parent, name, **attrs)


def oi_messages(last: dict[str, Any]) -> str:
    """LangGraph's output as OpenInference writes it (``messages_to_dict``)."""
    kinds = {"user": "human", "assistant": "ai"}
    thread = [{"type": kinds[r], "data": {"content": c, "type": kinds[r]}} for r, c in CHAT]
    calls = {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "x", "id": "c1"}]}}
    tool = {"type": "tool", "data": {"content": "...", "tool_call_id": "c1"}}
    return json.dumps({"messages": [*thread, calls, tool, last]})


def openinference_turn(root_kind: str = "CHAIN") -> list[IngestSpan]:
    given = {"messages": [{"role": r, "content": c} for r, c in CHAT]}
    final = {"type": "ai", "data": {"content": ANSWER, "tool_calls": []}}
    root = oi(
        root_kind,
        None,
        "LangGraph",
        **{
            "input.value": json.dumps(given),
            "input.mime_type": "application/json",
            "output.value": oi_messages(final),
            "output.mime_type": "application/json",
            "session.id": "s-1",
            "metadata": json.dumps({"user_id": "u-9", "thread_id": "s-1"}),
        },
    )
    llm1 = oi_llm(root, ("c1", "search_docs", '{"query": "refund status"}'))
    tool1 = oi(
        "TOOL",
        root,
        "search_docs",
        **{
            "tool.name": "search_docs",
            "input.value": ASKED,
            "output.value": json.dumps(
                {"type": "tool", "data": {"content": "...", "tool_call_id": "c1"}}
            ),
        },
    )
    outer = oi_retriever(
        tool1, [("a", "Refunds take 5 days."), ("b", "Credits go to the card.")], "Ensemble"
    )
    inner = oi_retriever(outer, [("a", "Refunds take 5 days.")], "Bm25")
    llm2 = oi_llm(root, ("c2", "order_status", '{"order_id": "A-1"}'))
    tool2 = oi(
        "TOOL",
        root,
        "order_status",
        **{
            "tool.name": "order_status",
            "input.value": "A-1",
            "status_code": STATUS_ERROR,
            "events": FAILED,
        },
    )
    llm3 = oi_llm(root, None)
    return [root, llm1, tool1, outer, inner, llm2, tool2, llm3]


@pytest.mark.parametrize("root_kind", ["CHAIN", "AGENT"])
def test_openinference_agent_turn_is_one_record(root_kind: str) -> None:
    spans = openinference_turn(root_kind)
    record = one_record(*spans, convention="openinference")
    assert record.span_id == spans[0].span_id
    assert_agent_turn(record, "Ensemble")


def test_openinference_agent_that_stopped_midway_has_no_answer() -> None:
    spans = openinference_turn()
    calls = {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "x", "id": "c9"}]}}
    root = spans[0]
    attrs = {**root.attributes, "output.value": oi_messages(calls)}
    record = map_trace(TraceView([_with(root, attrs), *spans[1:]]))[0].record
    assert record.response is None  # not an earlier LLM call's text


def test_openinference_tool_documents_count_only_without_a_retriever_below() -> None:
    root = oi("CHAIN", None, "agent", **{"input.value": QUERY, "output.value": ANSWER})

    def artifact(doc_id: str) -> str:
        doc = {"id": doc_id, "page_content": doc_id.upper(), "metadata": {}}
        data = {"content": "...", "tool_call_id": doc_id, "artifact": [doc]}
        return json.dumps({"type": "tool", "data": data})

    lookup = oi(
        "TOOL",
        root,
        "lookup",
        **{
            "tool.name": "lookup",
            "input.value": json.dumps({"query": "x?"}),
            "output.value": artifact("t1"),
        },
    )
    search = oi("TOOL", root, "search", **{"tool.name": "search", "output.value": artifact("t2")})
    below = oi_retriever(search, [("r1", "R1")], "kb")
    record = one_record(root, lookup, search, below, convention="openinference")
    assert [(c.id, c.source, c.query, c.step) for c in record.chunks] == [
        ("t1", "lookup", "x?", 0),  # the artifact of a tool with no retriever below it
        ("r1", "search/kb", ASKED, 1),  # the retriever's, not the tool's artifact again
    ]
    assert [(t.name, t.call_id, t.arguments) for t in record.tool_calls] == [
        ("lookup", "t1", '{"query": "x?"}'),
        ("search", "t2", None),
    ]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "Hi"}, {"role": "user", "content": QUERY}],
        [{"type": "human", "content": QUERY}],
        [["user", "Hi"], ["assistant", "Hello!"], ["human", QUERY]],
        [QUERY],
        [{"type": "human", "data": {"content": QUERY}}],
        [
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "HumanMessage"],
                "kwargs": {"content": [{"type": "text", "text": QUERY}]},
            },
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "messages", "AIMessage"],
                "kwargs": {"content": "", "tool_calls": [{"name": "t", "args": {}, "id": "1"}]},
            },
        ],
    ],
)
def test_query_is_the_last_user_message_in_any_form(messages: list[Any]) -> None:
    root = oi("CHAIN", None, "graph", **{"input.value": json.dumps({"messages": messages})})
    llm = oi_llm(root, None)
    record = one_record(root, llm, convention="openinference", missing=("chunks",))
    assert record.query == QUERY


def test_openinference_llama_index_agent_workflow() -> None:
    root = oi(
        "CHAIN",
        None,
        "FunctionAgent.run",
        **{
            "input.value": json.dumps({"init_state": {"is_running": False}}),
            "input.mime_type": "application/json",
            "output.value": "StopEvent(result=AgentOutput(response=ChatMessage(...)))",
            "output.mime_type": "text/plain",
        },
    )
    step = oi("CHAIN", root, "BaseWorkflowAgent.run_agent_step")
    prepare = oi("LLM", step, "MockLLM._prepare_chat_with_tools")
    chat = oi_llm(step, ("c1", "search_docs", '{"query": "refund status"}'))
    chat = _with(
        chat,
        {
            **chat.attributes,
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be nice.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": QUERY,
        },
    )
    call = oi("CHAIN", root, "BaseWorkflowAgent.call_tool")
    tool = oi(
        "TOOL",
        call,
        "FunctionTool.acall",
        **{
            "tool.name": "search_docs",
            "input.value": json.dumps({"kwargs": {"query": ASKED}}),
            "output.value": json.dumps({"raw_output": "...", "is_error": False}),
        },
    )
    retrieve = oi_retriever(tool, [("n1", "Refunds take 5 days.")], "Kb.retrieve")
    inner = oi_retriever(retrieve, [("n1", "Refunds take 5 days.")], "Kb._retrieve")
    last = oi("CHAIN", root, "BaseWorkflowAgent.run_agent_step")
    answer = oi_llm(last, None)
    spans = [root, step, prepare, chat, call, tool, retrieve, inner, last, answer]
    record = one_record(*spans, convention="openinference")
    assert (record.query, record.response, record.llm_calls) == (QUERY, ANSWER, 2)
    assert [(c.id, c.source, c.step) for c in record.chunks] == [("n1", "search_docs/Kb", 0)]
    assert [(t.name, t.arguments, t.call_id) for t in record.tool_calls] == [
        ("search_docs", '{"query":"refund status"}', "c1")
    ]


# -- OpenLLMetry -------------------------------------------------------------------------------


def lc(kind: str, **kwargs: Any) -> dict[str, Any]:
    """A LangChain-serialised object, as OpenLLMetry writes them."""
    module = "document" if kind == "Document" else "messages"
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", module, kind],
        **{"kwargs": kwargs},
    }


def ol(kind: str | None, parent: IngestSpan | None, name: str, **attrs: Any) -> IngestSpan:
    status = attrs.pop("status_code", 0)
    events = attrs.pop("events", ())
    base = {"traceloop.span.kind": kind} if kind else {}
    return span({**base, **attrs}, parent, name=name, status_code=status, events=events)


def ol_chat(parent: IngestSpan, call: tuple[str, str, dict[str, Any]] | None) -> IngestSpan:
    if call is None:
        parts: list[dict[str, Any]] = [{"type": "text", "content": ANSWER}]
    else:
        ident, name, arguments = call
        parts = [{"type": "tool_call", "id": ident, "name": name, "arguments": arguments}]
    output = [{"role": "assistant", "parts": parts}]
    return ol(
        None,
        parent,
        "ChatModel.chat",
        **{"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(output)},
    )


def ol_retriever(parent: IngestSpan, docs: list[tuple[str, str]], name: str) -> IngestSpan:
    documents = [{"page_content": t, "metadata": {"id": i}} for i, t in docs]
    return ol(
        "task",
        parent,
        "vector_db_retrieve",
        **{
            "gen_ai.operation.name": "vector_db_retrieve",
            "traceloop.entity.name": name,
            "traceloop.entity.input": json.dumps({"query": ASKED}),
            "traceloop.entity.output": json.dumps({"documents": documents, "count": len(docs)}),
        },
    )


def ol_tool(
    parent: IngestSpan, name: str, args: dict[str, Any], ident: str, **attrs: Any
) -> IngestSpan:
    given = {"input_str": str(args), "inputs": args, "kwargs": {"tool_call_id": ident}}
    return ol(
        "tool",
        parent,
        "execute_tool",
        **{
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "traceloop.entity.name": name,
            "traceloop.entity.input": json.dumps(given),
            "gen_ai.tool.call.arguments": json.dumps(given),
            **attrs,
        },
    )


def test_openllmetry_agent_turn_is_one_record() -> None:
    root = ol(
        None,
        None,
        "invoke_agent LangGraph",
        **{"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "s-1"},
    )
    classes = {"user": "HumanMessage", "assistant": "AIMessage"}
    thread = [lc(classes[r], content=c) for r, c in CHAT]
    done = [
        *thread,
        lc("AIMessage", content="", tool_calls=[{"name": "search_docs", "args": {}, "id": "c1"}]),
        lc("ToolMessage", content="...", tool_call_id="c1"),
        lc("AIMessage", content=ANSWER, tool_calls=[]),
    ]
    workflow = ol(
        "workflow",
        root,
        "LangGraph.workflow",
        **{
            "traceloop.entity.input": json.dumps(
                {"inputs": {"messages": [{"role": r, "content": c} for r, c in CHAT]}}
            ),
            "traceloop.entity.output": json.dumps({"outputs": {"messages": done}}),
            "traceloop.association.properties.user_id": "u-9",
            "traceloop.association.properties.thread_id": "s-1",
        },
    )
    chat1 = ol_chat(workflow, ("c1", "search_docs", {"query": ASKED}))
    tool1 = ol_tool(
        workflow,
        "search_docs",
        {"query": ASKED},
        "c1",
        **{"traceloop.entity.output": json.dumps({"output": lc("ToolMessage", content="...")})},
    )
    outer = ol_retriever(
        tool1, [("a", "Refunds take 5 days."), ("b", "Credits go to the card.")], "Ensemble"
    )
    inner = ol_retriever(outer, [("a", "Refunds take 5 days.")], "Bm25")
    chat2 = ol_chat(workflow, ("c2", "order_status", {"order_id": "A-1"}))
    tool2 = ol_tool(
        workflow, "order_status", {"order_id": "A-1"}, "c2", status_code=STATUS_ERROR, events=FAILED
    )
    chat3 = ol_chat(workflow, None)
    spans = [root, workflow, chat1, tool1, outer, inner, chat2, tool2, chat3]
    record = one_record(*spans, convention="openllmetry")
    assert record.span_id == root.span_id  # the outermost span, not the workflow below it
    assert_agent_turn(record, "Ensemble")


def test_openllmetry_llama_index_agent_workflow() -> None:
    root = ol(
        "workflow", None, "FunctionAgent.workflow", **{"traceloop.entity.name": "FunctionAgent"}
    )
    prompt = [{"role": "user", "parts": [{"type": "text", "content": QUERY}]}]
    step = ol("task", root, "BaseWorkflowAgent.task")
    chat = ol_chat(step, ("c1", "order_status", {"order_id": "A-1"}))
    chat = _with(chat, {**chat.attributes, "gen_ai.input.messages": json.dumps(prompt)})
    result = {"tool_id": "c1", "tool_output": {"raw_output": "down", "is_error": True}}
    call = ol(
        "task",
        root,
        "BaseWorkflowAgent.task",
        **{
            "tool.name": "order_status",
            "tool.arguments": json.dumps({"order_id": "A-1"}),
            "traceloop.entity.output": json.dumps(result),
        },
    )
    last = ol("task", root, "BaseWorkflowAgent.task")
    answer = ol_chat(last, None)
    record = one_record(
        root, step, chat, call, last, answer, convention="openllmetry", missing=("chunks",)
    )
    assert (record.query, record.response, record.llm_calls) == (QUERY, ANSWER, 2)
    assert record.tool_calls == (
        ToolCall("order_status", '{"order_id":"A-1"}', "error", "down", 500e-9, "c1"),
    )


# -- OpenTelemetry GenAI -----------------------------------------------------------------------


def ga(op: str, parent: IngestSpan | None, **attrs: Any) -> IngestSpan:
    status = attrs.pop("status_code", 0)
    events = attrs.pop("events", ())
    return span(
        {"gen_ai.operation.name": op, **attrs},
        parent,
        name=op,
        status_code=status,
        events=events,
    )


def parts(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def ga_chat(parent: IngestSpan, call: tuple[str, str, dict[str, Any]] | None) -> IngestSpan:
    if call is None:
        message = parts("assistant", ANSWER)
    else:
        ident, name, arguments = call
        tool_call = {"type": "tool_call", "id": ident, "name": name, "arguments": arguments}
        message = {"role": "assistant", "parts": [tool_call]}
    return ga("chat", parent, **{"gen_ai.output.messages": json.dumps([message])})


def ga_retrieval(parent: IngestSpan, docs: list[tuple[str, str]]) -> IngestSpan:
    documents = [{"id": i, "content": t} for i, t in docs]
    return ga(
        "retrieval",
        parent,
        **{
            "gen_ai.retrieval.query.text": ASKED,
            "gen_ai.retrieval.documents": json.dumps(documents),
        },
    )


def ga_tool(parent: IngestSpan, name: str, ident: str, args: str, **attrs: Any) -> IngestSpan:
    return ga(
        "execute_tool",
        parent,
        **{
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": ident,
            "gen_ai.tool.call.arguments": args,
            **attrs,
        },
    )


def test_genai_agent_turn_is_one_record() -> None:
    root = ga(
        "invoke_agent",
        None,
        **{
            "gen_ai.conversation.id": "s-1",
            "user.id": "u-9",
            "gen_ai.input.messages": json.dumps([parts(r, c) for r, c in CHAT]),
            "gen_ai.output.messages": json.dumps([parts("assistant", ANSWER)]),
        },
    )
    chat1 = ga_chat(root, ("c1", "search_docs", {"query": ASKED}))
    tool1 = ga_tool(root, "search_docs", "c1", '{"query":"refund status"}')
    outer = ga_retrieval(tool1, [("a", "Refunds take 5 days."), ("b", "Credits go to the card.")])
    inner = ga_retrieval(outer, [("a", "Refunds take 5 days.")])
    chat2 = ga_chat(root, ("c2", "order_status", {"order_id": "A-1"}))
    tool2 = ga_tool(
        root, "order_status", "c2", '{"order_id":"A-1"}', status_code=STATUS_ERROR, events=FAILED
    )
    chat3 = ga_chat(root, None)
    record = one_record(root, chat1, tool1, outer, inner, chat2, tool2, chat3, convention="genai")
    assert_agent_turn(record, "retrieval")


# -- ragtrace's own ----------------------------------------------------------------------------


def test_own_agent_turn_is_one_record() -> None:
    root = oi(
        "AGENT",
        None,
        "LangGraph",
        **{
            "gen_ai.operation.name": "invoke_agent",
            "ragtrace.app": "shop",
            "session.id": "s-1",
            "gen_ai.conversation.id": "s-1",
            "user.id": "u-9",
            "input.value": QUERY,
            "output.value": ANSWER,
            "ragtrace.conversation.turn": 1,
            "ragtrace.conversation.history_turns": 2,
            "ragtrace.agent.llm_calls": 3,
            "ragtrace.agent.tool_calls": 2,
        },
    )
    prompt = [("system", "Be nice."), *CHAT]
    llm1 = oi(
        "LLM",
        root,
        "ChatModel",
        **{
            f"llm.input_messages.{i}.message.{field}": value
            for i, (role, content) in enumerate(prompt)
            for field, value in (("role", role), ("content", content))
        },
    )

    def own_tool(name: str, ident: str, args: str, **attrs: Any) -> IngestSpan:
        return oi(
            "TOOL",
            root,
            name,
            **{
                "gen_ai.operation.name": "execute_tool",
                "tool.name": name,
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": ident,
                "input.value": args,
                "gen_ai.tool.call.arguments": args,
                **attrs,
            },
        )

    tool1 = own_tool("search_docs", "c1", '{"query":"refund status"}')
    outer = oi_retriever(
        tool1, [("a", "Refunds take 5 days."), ("b", "Credits go to the card.")], "x"
    )
    outer = _with(outer, {**outer.attributes, "ragtrace.retrieval.source": "search_docs/Ensemble"})
    inner = oi_retriever(outer, [("a", "Refunds take 5 days.")], "y")
    inner = _with(inner, {**inner.attributes, "ragtrace.retrieval.nested": True})
    llm2 = oi("LLM", root, "ChatModel")
    tool2 = own_tool(
        "order_status",
        "c2",
        '{"order_id":"A-1"}',
        status_code=STATUS_ERROR,
        events=FAILED,
    )
    llm3 = oi("LLM", root, "ChatModel", **{"output.value": ANSWER})
    spans = [root, llm1, tool1, outer, inner, llm2, tool2, llm3]
    record = one_record(*spans, convention="ragtrace")
    assert record.app == "shop"
    assert_agent_turn(record, "Ensemble")


# -- no agent ----------------------------------------------------------------------------------


def test_a_chain_without_session_or_earlier_turns_has_no_conversation() -> None:
    root = oi("CHAIN", None, "chain", **{"input.value": QUERY, "output.value": ANSWER})
    llm = oi_llm(root, None)
    record = one_record(root, llm, convention="openinference", missing=("chunks",))
    assert (record.conversation, record.tool_calls, record.llm_calls) == (None, (), 1)


def test_a_chain_given_chat_history_keeps_the_earlier_turns_and_the_rewritten_question() -> None:
    given = {"question": QUERY, "chat_history": [["human", "Hi"], ["ai", "Hello!"]]}
    root = oi(
        "CHAIN",
        None,
        "chain",
        **{"input.value": json.dumps(given), "output.value": ANSWER},
    )
    retriever = oi_retriever(root, [("a", "Refunds take 5 days.")], "kb")
    record = one_record(root, retriever, oi_llm(root, None), convention="openinference")
    assert record.query == QUERY
    # the chunk names the rewritten question it was retrieved for
    assert [(c.id, c.query, c.step, c.retrieval) for c in record.chunks] == [("a", ASKED, None, 0)]
    assert record.conversation == Conversation(
        turn=1,
        history=(Turn("user", "Hi"), Turn("assistant", "Hello!")),
        standalone_query=ASKED,  # the follow-up as the app rewrote it for its retriever
    )


def test_a_tool_error_the_tool_reported_is_an_error() -> None:
    """``handle_tool_error``: the tool did not raise (the span is OK) but returned an error
    ``ToolMessage``."""
    root = oi("AGENT", None, "agent", **{"input.value": QUERY, "output.value": ANSWER})
    result = {"content": "Order service down", "tool_call_id": "c7", "status": "error"}
    tool = oi(
        "TOOL",
        root,
        "order_status",
        **{
            "tool.name": "order_status",
            "input.value": "A-1",
            "output.value": json.dumps({"type": "tool", "data": result}),
        },
    )
    record = one_record(root, tool, convention="openinference", missing=("chunks",))
    assert record.tool_calls == (
        ToolCall("order_status", "A-1", "error", "Order service down", 500e-9, "c7"),
    )


def _with(base: IngestSpan, attributes: dict[str, Any]) -> IngestSpan:
    """``base`` with other attributes."""
    return IngestSpan(
        trace_id=base.trace_id,
        span_id=base.span_id,
        parent_span_id=base.parent_span_id,
        name=base.name,
        start_ns=base.start_ns,
        end_ns=base.end_ns,
        attributes=attributes,
        events=base.events,
        status_code=base.status_code,
        resource=base.resource,
    )


# -- a document that two searches found ----------------------------------------------------------

SEARCHES = (
    (
        "c1",
        "refund status",
        [("a", "Refunds take 5 days.", 0.9), ("b", "Credits go to the card.", 0.4)],
    ),
    (
        "c2",
        "card credits",
        [("b", "Credits go to the card.", 0.8), ("c", "Cards are charged on Monday.", 0.3)],
    ),
)


def oi_searches() -> list[IngestSpan]:
    root = oi("AGENT", None, "LangGraph", **{"input.value": QUERY, "output.value": ANSWER})
    spans = [root]
    for ident, asked, docs in SEARCHES:
        tool = oi(
            "TOOL",
            root,
            "search_docs",
            **{
                "tool.name": "search_docs",
                "gen_ai.tool.call.id": ident,
                "input.value": json.dumps({"query": asked}),
            },
        )
        attrs: dict[str, Any] = {"input.value": asked}
        for i, (doc_id, text, score) in enumerate(docs):
            attrs[f"retrieval.documents.{i}.document.id"] = doc_id
            attrs[f"retrieval.documents.{i}.document.content"] = text
            attrs[f"retrieval.documents.{i}.document.score"] = score
        spans += [tool, oi("RETRIEVER", tool, "HandbookRetriever", **attrs)]
    return spans


def ol_searches() -> list[IngestSpan]:
    root = ol(None, None, "invoke_agent LangGraph", **{"gen_ai.operation.name": "invoke_agent"})
    spans = [root]
    for ident, asked, docs in SEARCHES:
        tool = ol_tool(root, "search_docs", {"query": asked}, ident)
        documents = [{"page_content": t, "metadata": {"id": i, "score": s}} for i, t, s in docs]
        retriever = ol(
            "task",
            tool,
            "vector_db_retrieve",
            **{
                "gen_ai.operation.name": "vector_db_retrieve",
                "traceloop.entity.name": "HandbookRetriever",
                "traceloop.entity.input": json.dumps({"query": asked}),
                "traceloop.entity.output": json.dumps({"documents": documents}),
            },
        )
        spans += [tool, retriever]
    return spans


def ga_searches() -> list[IngestSpan]:
    root = ga("invoke_agent", None)
    spans = [root]
    for ident, asked, docs in SEARCHES:
        tool = ga_tool(root, "search_docs", ident, json.dumps({"query": asked}))
        documents = [{"id": i, "content": t, "score": s} for i, t, s in docs]
        retrieval = ga(
            "retrieval",
            tool,
            **{
                "gen_ai.retrieval.query.text": asked,
                "gen_ai.retrieval.documents": json.dumps(documents),
            },
        )
        spans += [tool, retrieval]
    return spans


@pytest.mark.parametrize(
    ("build", "convention"),
    [(oi_searches, "openinference"), (ol_searches, "openllmetry"), (ga_searches, "genai")],
)
def test_a_document_two_searches_found_is_one_chunk(build: Any, convention: str) -> None:
    """As capture records it: three chunks, ``b`` once where it first came, with the better of
    its two scores and both searches named."""
    [mapped] = map_trace(TraceView(build()))
    assert mapped.convention == convention
    chunks = mapped.record.chunks
    assert [(c.id, c.score, c.query, c.step) for c in chunks] == [
        ("a", 0.9, "refund status", 0),
        ("b", 0.8, "refund status", 0),
        ("c", 0.3, "card credits", 1),
    ]
    assert chunks[1].metadata[RETRIEVALS_KEY] == [
        {"retrieval": 0, "query": "refund status", "score": 0.4},
        {"retrieval": 1, "query": "card credits", "score": 0.8},
    ]
    assert RETRIEVALS_KEY not in chunks[0].metadata and RETRIEVALS_KEY not in chunks[2].metadata
