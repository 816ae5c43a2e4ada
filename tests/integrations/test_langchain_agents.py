"""LangChain 1.x agents and LangGraph graphs: one record per user turn, with its conversation.

Each app is built as LangChain's docs teach (``create_agent``, the RAG-agent tutorial's
artifact tool, a ``StateGraph``), driven by LangChain's own fake chat model.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import MessagesState
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import ragtrace
from ragtrace._model import ToolCall, Turn
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.conftest import Traced
from tests.integrations.lc_agent_app import (
    EnsembleOf,
    KeywordRetriever,
    ScoredRetriever,
    ScriptedChatModel,
    answer,
    artifact_tool,
    failing_tool,
    in_sequence,
    retriever_agent,
    search_tool,
    state_graph,
    tool_call,
    vector_store,
)

QUESTION = "How long is the Aurora warranty?"
ANSWER = "The Aurora has a 3-year warranty."
AGENT_REPLIES = [tool_call("search_kb", query="aurora warranty"), answer(ANSWER)]


def config(traced: Traced, **extra: Any) -> dict[str, Any]:
    return {"callbacks": [RagtraceCallbackHandler(traced.rt)], **extra}


def kind(span: ReadableSpan) -> str:
    return str((span.attributes or {})["openinference.span.kind"])


def only(spans: list[ReadableSpan], of_kind: str) -> ReadableSpan:
    found = [s for s in spans if kind(s) == of_kind]
    assert len(found) == 1, [(s.name, kind(s)) for s in spans]
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


# -- the request boundary -------------------------------------------------------------------------


def test_create_agent_is_one_record_with_the_question_answer_chunks_and_tool_call(
    traced: Traced,
) -> None:
    agent = retriever_agent(AGENT_REPLIES)
    agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config(traced))

    record = traced.only_record()
    assert record.query == QUESTION
    assert record.response == ANSWER
    assert record.status == "ok"
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    assert {(c.source, c.query, c.step) for c in record.chunks} == {
        ("search_kb/KeywordRetriever", "aurora warranty", 0)
    }
    assert len(record.tool_calls) == 1
    call = record.tool_calls[0]
    assert (call.name, call.arguments, call.status, call.error, call.call_id) == (
        "search_kb",
        '{"query":"aurora warranty"}',
        "ok",
        None,
        "call-1",
    )
    assert call.duration_s > 0
    assert record.llm_calls == 2


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": QUESTION}],
        [{"type": "human", "content": QUESTION}],
        [("user", QUESTION)],
        [("human", QUESTION)],
        [HumanMessage(QUESTION)],
        [HumanMessage(content=[{"type": "text", "text": QUESTION}])],
        QUESTION,
    ],
    ids=["role-dict", "type-dict", "user-tuple", "human-tuple", "message", "blocks", "string"],
)
def test_the_question_is_read_in_every_form_langchain_accepts(
    traced: Traced, messages: Any
) -> None:
    retriever_agent(AGENT_REPLIES).invoke({"messages": messages}, config(traced))
    record = traced.only_record()
    assert (record.query, record.response) == (QUESTION, ANSWER)


@pytest.mark.parametrize("mode", ["values", "updates", "messages"])
def test_a_streamed_agent_is_one_record_in_every_stream_mode(traced: Traced, mode: str) -> None:
    agent = retriever_agent(AGENT_REPLIES)
    for _ in agent.stream({"messages": [("user", QUESTION)]}, config(traced), stream_mode=mode):
        pass
    record = traced.only_record()
    assert (record.query, record.response) == (QUESTION, ANSWER)
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    assert [t.name for t in record.tool_calls] == ["search_kb"]


async def test_an_async_agent_is_one_record(traced: Traced) -> None:
    agent = retriever_agent(AGENT_REPLIES)
    await agent.ainvoke({"messages": [("user", QUESTION)]}, config(traced))
    async for _ in retriever_agent(AGENT_REPLIES).astream(
        {"messages": [("user", QUESTION)]}, config(traced)
    ):
        pass
    assert [(r.query, r.response, len(r.tool_calls)) for r in traced.records] == [
        (QUESTION, ANSWER, 1),
        (QUESTION, ANSWER, 1),
    ]


def test_an_agent_that_stops_on_a_tool_call_has_no_answer(traced: Traced) -> None:
    """A turn cut off while the model still wanted a tool (a step limit) answered nothing:
    the record says so instead of taking the tool-calling message for the answer."""
    from langgraph.errors import GraphRecursionError

    agent = retriever_agent([tool_call("search_kb", f"c{i}", query="aurora") for i in range(5)])
    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [("user", QUESTION)]}, config(traced, recursion_limit=4))
    record = traced.only_record()
    assert record.query == QUESTION
    assert record.response is None
    assert record.status == "error"
    assert [t.name for t in record.tool_calls] == ["search_kb", "search_kb"]


def test_an_agent_that_searches_twice_records_a_shared_document_once(traced: Traced) -> None:
    """Two searches that both find the installation note: three chunks, that one once, with
    the better of its two scores and both searches named; each retriever span keeps its own."""
    retriever = ScoredRetriever(
        hits={
            "aurora warranty": [("kb-aurora", 0.9), ("kb-install", 0.4)],
            "installation time": [("kb-install", 0.8), ("kb-borealis", 0.3)],
        }
    )
    replies = [
        tool_call("search_kb", "call-1", query="aurora warranty"),
        tool_call("search_kb", "call-2", query="installation time"),
        answer(ANSWER),
    ]
    agent = retriever_agent(replies, tools=[search_tool(retriever)])
    agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config(traced))

    record = traced.only_record()
    assert len(record.tool_calls) == 2
    source = "search_kb/ScoredRetriever"
    aurora, install, borealis = record.chunks
    assert (aurora.id, aurora.score, aurora.query, aurora.step) == (
        "kb-aurora",
        0.9,
        "aurora warranty",
        0,
    )
    assert dict(aurora.metadata) == {"score": 0.9}
    assert (install.id, install.score, install.source, install.query, install.step) == (
        "kb-install",
        0.8,
        source,
        "aurora warranty",
        0,
    )
    assert install.text == "Installation takes one day for either model."
    assert dict(install.metadata) == {
        "score": 0.4,
        "ragtrace.retrievals": [
            {"retrieval": 0, "query": "aurora warranty", "score": 0.4},
            {"retrieval": 1, "query": "installation time", "score": 0.8},
        ],
    }
    assert (borealis.id, borealis.score, borealis.query, borealis.step) == (
        "kb-borealis",
        0.3,
        "installation time",
        1,
    )
    retrievers = [s for s in traced.spans() if kind(s) == "RETRIEVER"]
    assert [
        [d["id"] for d in json.loads(str(s.attributes["gen_ai.retrieval.documents"]))]
        for s in sorted(retrievers, key=lambda s: s.start_time or 0)
    ] == [["kb-aurora", "kb-install"], ["kb-install", "kb-borealis"]]
    # `ragtrace ingest` reads the same chunks back from these spans.
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from ragtrace._ingest.decode import spans_of
    from ragtrace._ingest.mappers import map_trace
    from ragtrace._ingest.spans import TraceView

    [mapped] = map_trace(TraceView(spans_of(encode_spans(traced.spans())).spans))
    assert mapped.record.chunks == record.chunks


def test_the_tutorial_artifact_tool_gives_its_documents_to_the_record(traced: Traced) -> None:
    store = vector_store()
    expected = [d.id for d in store.similarity_search("aurora warranty", k=2)]
    agent = retriever_agent(
        [tool_call("retrieve_context", query="aurora warranty"), answer(ANSWER)],
        tools=[artifact_tool(store)],
    )
    agent.invoke({"messages": [("user", QUESTION)]}, config(traced))

    record = traced.only_record()
    assert [c.id for c in record.chunks] == expected
    assert {(c.source, c.query, c.step) for c in record.chunks} == {
        ("retrieve_context", "aurora warranty", 0)
    }
    assert record.chunks[0].text == store.get_by_ids([expected[0]])[0].page_content
    spans = traced.spans()
    tool_span = only(spans, "TOOL")
    retrieval = only(spans, "RETRIEVER")
    assert parent_of(retrieval) == tool_span.context.span_id
    assert (retrieval.attributes or {})["retrieval.documents.0.document.id"] == expected[0]


def test_a_failing_tool_is_an_error_tool_call_and_the_turn_still_answers(traced: Traced) -> None:
    agent = retriever_agent(
        [tool_call("order_status", order_id="A-1"), answer("I cannot reach the order service.")],
        tools=[failing_tool()],
    )
    agent.invoke({"messages": [("user", "Where is order A-1?")]}, config(traced))
    record = traced.only_record()
    assert record.status == "ok"
    assert record.tool_calls == (
        ToolCall(
            "order_status",
            '{"order_id":"A-1"}',
            "error",
            "order service unavailable",
            record.tool_calls[0].duration_s,
            "call-1",
        ),
    )
    tool_span = only(traced.spans(), "TOOL")
    assert tool_span.status.status_code is StatusCode.ERROR


def test_a_state_graph_answers_under_generation(traced: Traced) -> None:
    state_graph().invoke({"question": QUESTION}, config(traced))
    record = traced.only_record()
    assert record.query == QUESTION
    assert record.response == "From the manual: The Aurora heat pump has a 3-year warranty."
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    assert record.tool_calls == ()
    root = only(traced.spans(), "CHAIN")
    assert (root.attributes or {})["gen_ai.operation.name"] == "invoke_workflow"


def test_a_nested_retriever_counts_the_outer_result_once(traced: Traced) -> None:
    """An ensemble's members keep their documents on their own spans; the record holds the
    fused result the app used, each chunk once."""
    ensemble = EnsembleOf(
        retrievers=[KeywordRetriever(k=2), KeywordRetriever(docs=list(reversed(_kb())), k=1)],
        k=2,
    )
    state_graph(ensemble).invoke({"question": QUESTION}, config(traced))
    record = traced.only_record()
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    spans = traced.spans()
    retrievers = [s for s in spans if kind(s) == "RETRIEVER"]
    outer = [s for s in retrievers if s.name == "EnsembleOf"]
    inner = [s for s in retrievers if s.name != "EnsembleOf"]
    assert len(outer) == 1 and len(inner) == 2
    assert {parent_of(s) for s in inner} == {outer[0].context.span_id}
    assert all((s.attributes or {})["ragtrace.retrieval.nested"] is True for s in inner)
    assert "ragtrace.retrieval.nested" not in (outer[0].attributes or {})
    assert [(s.attributes or {})["ragtrace.retrieval.chunks_total"] for s in inner] == [2, 1]


# -- several agents, one request ------------------------------------------------------------------


def test_an_agent_called_as_a_tool_is_part_of_its_callers_record(traced: Traced) -> None:
    """A supervisor whose tool asks a research agent: one record, the supervisor's question and
    answer, the research agent's documents and both agents' tool calls."""
    researcher = retriever_agent(AGENT_REPLIES)

    @tool
    def ask_researcher(request: str) -> str:
        """Ask the research agent."""
        reply = researcher.invoke({"messages": [{"role": "user", "content": request}]})
        return str(reply["messages"][-1].content)

    supervisor = create_agent(
        ScriptedChatModel(
            responses=[tool_call("ask_researcher", request="aurora warranty"), answer(ANSWER)]
        ),
        tools=[ask_researcher],
    )
    supervisor.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config(traced))

    record = traced.only_record()
    assert (record.query, record.response) == (QUESTION, ANSWER)
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    assert [c.name for c in record.tool_calls] == ["ask_researcher", "search_kb"]
    assert record.llm_calls == 4


def test_agents_as_nodes_of_a_graph_are_one_record_answered_by_the_last(traced: Traced) -> None:
    """A graph of two ``create_agent`` nodes (researcher, then writer) over one message list."""
    researcher = retriever_agent(
        [tool_call("search_kb", query="aurora warranty"), answer("Found: 3-year warranty.")],
        name="researcher",
    )
    writer = create_agent(ScriptedChatModel(responses=[answer(ANSWER)]), tools=[], name="writer")
    graph = in_sequence(MessagesState, researcher=researcher, writer=writer)
    graph.invoke({"messages": [{"role": "user", "content": QUESTION}]}, config(traced))

    record = traced.only_record()
    assert (record.query, record.response) == (QUESTION, ANSWER)
    assert [c.id for c in record.chunks] == ["kb-aurora", "kb-borealis"]
    assert [c.name for c in record.tool_calls] == ["search_kb"]
    roots = [s for s in traced.spans() if s.parent is None]
    assert len(roots) == 1


def _kb() -> list[Any]:
    from tests.integrations.lc_agent_app import KB

    return list(KB)


# -- spans ----------------------------------------------------------------------------------------


def test_an_agent_draws_its_tree_agent_tool_retriever(traced: Traced) -> None:
    retriever_agent(AGENT_REPLIES).invoke({"messages": [("user", QUESTION)]}, config(traced))
    record = traced.only_record()
    spans = traced.spans()
    assert sorted(kind(s) for s in spans) == ["AGENT", "LLM", "LLM", "RETRIEVER", "TOOL"]
    root = only(spans, "AGENT")
    tool_span = only(spans, "TOOL")
    retrieval = only(spans, "RETRIEVER")
    assert format(root.context.span_id, "016x") == record.span_id
    assert parent_of(tool_span) == root.context.span_id
    assert parent_of(retrieval) == tool_span.context.span_id
    assert {parent_of(s) for s in spans if kind(s) == "LLM"} == {root.context.span_id}
    attrs = dict(tool_span.attributes or {})
    assert attrs == {
        "openinference.span.kind": "TOOL",
        "gen_ai.operation.name": "execute_tool",
        "tool.name": "search_kb",
        "gen_ai.tool.name": "search_kb",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call-1",
        "input.value": '{"query":"aurora warranty"}',
        "gen_ai.tool.call.arguments": '{"query":"aurora warranty"}',
        "output.value": "The Aurora heat pump has a 3-year warranty.\n\n"
        "The Borealis heat pump has a 5-year warranty.",
        "output.mime_type": "text/plain",
    }
    root_attrs = dict(root.attributes or {})
    assert root_attrs["gen_ai.operation.name"] == "invoke_agent"
    assert root_attrs["input.value"] == QUESTION
    assert root_attrs["output.value"] == ANSWER
    assert root_attrs["ragtrace.agent.llm_calls"] == 2
    assert root_attrs["ragtrace.agent.tool_calls"] == 1


def test_a_plain_chain_keeps_its_three_spans_and_no_conversation(traced: Traced) -> None:
    from tests.integrations.lc_app import rag_chain

    rag_chain().invoke("When was the lighthouse built?", config=config(traced))
    record = traced.only_record()
    assert record.conversation is None
    assert record.tool_calls == () and record.llm_calls == 1
    assert sorted(kind(s) for s in traced.spans()) == ["CHAIN", "LLM", "RETRIEVER"]
    assert all(c.query is None and c.step is None for c in record.chunks)


# -- conversations --------------------------------------------------------------------------------


def test_two_turns_of_a_thread_share_a_session_and_the_second_carries_the_first(
    traced: Traced,
) -> None:
    agent = retriever_agent(
        [
            *AGENT_REPLIES,
            tool_call("search_kb", "call-2", query="borealis warranty"),
            answer("The Borealis has a 5-year warranty."),
        ],
        checkpointer=InMemorySaver(),
    )
    cfg = config(traced, configurable={"thread_id": "thread-7"}, metadata={"user_id": "u-3"})
    agent.invoke({"messages": [("user", QUESTION)]}, cfg)
    agent.invoke({"messages": [("user", "And the Borealis?")]}, cfg)

    first, second = traced.records
    assert first.conversation is not None and second.conversation is not None
    assert (first.conversation.session_id, first.conversation.user_id) == ("thread-7", "u-3")
    assert (first.conversation.turn, first.conversation.history) == (0, ())
    assert second.conversation.session_id == "thread-7"
    assert second.conversation.turn == 1
    assert second.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))
    assert (second.query, second.response) == (
        "And the Borealis?",
        "The Borealis has a 5-year warranty.",
    )
    assert [c.id for c in second.chunks] == ["kb-aurora", "kb-borealis"]
    assert {c.query for c in second.chunks} == {"borealis warranty"}
    roots = [s for s in traced.spans() if kind(s) == "AGENT"]
    for root in roots:
        attrs = dict(root.attributes or {})
        assert (attrs["session.id"], attrs["gen_ai.conversation.id"], attrs["user.id"]) == (
            "thread-7",
            "thread-7",
            "u-3",
        )
    assert [dict(r.attributes or {})["ragtrace.conversation.turn"] for r in roots] == [0, 1]


def test_a_user_id_in_configurable_is_the_records_user(traced: Traced) -> None:
    """LangChain shows ``configurable`` only inside the request (LangGraph only inside its
    nodes); its ``user_id`` (and a chain's ``session_id``) still name the conversation, after
    ``ragtrace.session`` and the request's metadata."""
    from tests.integrations.lc_app import rag_chain

    agent = retriever_agent(AGENT_REPLIES * 2, checkpointer=InMemorySaver())
    question = [{"role": "user", "content": QUESTION}]
    configurable = {"thread_id": "thread-8", "user_id": "u-5"}
    agent.invoke({"messages": question}, config(traced, configurable=configurable))
    chain_config = config(traced, configurable={"session_id": "s-4", "user_id": "u-6"})
    rag_chain().invoke("When was the lighthouse built?", config=chain_config)
    with_metadata = config(traced, configurable={"user_id": "u-6"}, metadata={"user_id": "u-7"})
    rag_chain().invoke("When was the lighthouse built?", config=with_metadata)
    with ragtrace.session("ticket-1", user_id="alice"):
        rag_chain().invoke("When was the lighthouse built?", config=chain_config)

    ids = [
        (r.conversation.session_id, r.conversation.user_id)
        for r in traced.records
        if r.conversation
    ]
    assert ids == [("thread-8", "u-5"), ("s-4", "u-6"), (None, "u-7"), ("ticket-1", "alice")]
    roots = [s for s in traced.spans() if s.parent is None]
    assert [dict(r.attributes or {}).get("user.id") for r in roots] == [
        "u-5",
        "u-6",
        "u-7",
        "alice",
    ]
    assert dict(roots[1].attributes or {})["session.id"] == "s-4"


def test_an_agent_given_the_whole_chat_takes_its_history_from_the_input(traced: Traced) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "And the Borealis?"},
    ]
    retriever_agent(AGENT_REPLIES).invoke({"messages": messages}, config(traced))
    record = traced.only_record()
    assert record.query == "And the Borealis?"
    assert record.conversation is not None
    assert record.conversation.session_id is None
    assert record.conversation.turn == 1
    assert record.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))


def test_ragtrace_session_names_the_conversation_of_a_plain_chain(traced: Traced) -> None:
    from tests.integrations.lc_app import rag_chain

    with ragtrace.session("ticket-9", user_id="alice"):
        rag_chain().invoke("When was the lighthouse built?", config=config(traced))
    rag_chain().invoke("When was the lighthouse built?", config=config(traced))
    first, second = traced.records
    assert first.conversation is not None
    assert (first.conversation.session_id, first.conversation.user_id) == ("ticket-9", "alice")
    assert second.conversation is None
    with pytest.raises(ValueError, match="session id"), ragtrace.session(""):
        pass


def test_session_metadata_and_chat_history_of_a_chain(traced: Traced) -> None:
    """A chain given ``chat_history`` (as LangChain's history-aware chains are) and a
    ``session_id`` in its metadata; its retriever's rewritten query is the standalone one."""
    from langchain_core.runnables import RunnableLambda

    retriever = KeywordRetriever()

    def rewrite(inputs: dict[str, Any]) -> str:
        return "Borealis heat pump warranty"

    chain = RunnableLambda(
        lambda inputs: {
            "answer": "5 years.",
            "context": (RunnableLambda(rewrite) | retriever).invoke(inputs),
        }
    )
    chain.invoke(
        {
            "input": "And the other one?",
            "chat_history": [("human", QUESTION), ("ai", ANSWER)],
        },
        config(traced, metadata={"session_id": "s-1"}),
    )
    record = traced.only_record()
    assert (record.query, record.response) == ("And the other one?", "5 years.")
    assert record.conversation is not None
    assert record.conversation.session_id == "s-1"
    assert record.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))
    assert record.conversation.standalone_query == "Borealis heat pump warranty"


def test_earlier_turns_are_bounded_and_redacted(
    provider: Any, registry: Any, exporter: Any
) -> None:
    rt = ragtrace.init(
        app="t", tracer_provider=provider, registry=registry, redact="pii", max_history_turns=2
    )
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        messages = [
            ("user", "My email is jane.doe@example.com"),
            ("assistant", "Noted."),
            ("user", "Call me on +1 415 555 0100"),
            ("assistant", "Noted too."),
            ("user", QUESTION),
        ]
        retriever_agent(AGENT_REPLIES).invoke(
            {"messages": messages}, {"callbacks": [RagtraceCallbackHandler(rt)]}
        )
        rt.flush()
        (record,) = records
        assert record.conversation is not None
        assert record.conversation.turn == 2
        history = record.conversation.history
        assert [t.role for t in history] == ["user", "assistant"]
        assert "555" not in history[0].content and "Call me on" in history[0].content
        assert "example.com" not in json.dumps([t.content for t in history])
    finally:
        rt.shutdown()


def test_user_and_chunk_ids_are_redacted_as_identities_that_stay_distinct(
    provider: Any, registry: Any, exporter: Any
) -> None:
    """Under ``redact: pii`` a personal user id and chunk ids become placeholders with a keyed
    hash, so two users (two documents) stay two; the address itself is never kept."""
    from langchain_core.documents import Document
    from langchain_core.runnables import RunnableLambda

    rt = ragtrace.init(app="t", tracer_provider=provider, registry=registry, redact="pii")
    try:
        records: list[Any] = []
        rt.add_record_sink(records.append)
        docs = [
            Document("Pumps carry a warranty.", id="owner-alice@corp.example"),
            Document("Boilers carry a warranty.", id="owner-bob@corp.example"),
        ]
        retriever = KeywordRetriever(docs=docs)
        chain = RunnableLambda(lambda q: {"answer": "5 years.", "context": retriever.invoke(q)})
        handler = {"callbacks": [RagtraceCallbackHandler(rt)]}
        for user in ("alice@corp.example", "bob@corp.example"):
            with ragtrace.session("thread-1", user_id=user):
                chain.invoke("Which warranty?", handler)
        rt.flush()
        assert len(records) == 2
        users = [r.conversation.user_id for r in records]
        hashed = r"<EMAIL_ADDRESS:[0-9a-f]{8}>"
        assert all(re.fullmatch(hashed, u) for u in users) and users[0] != users[1]
        for record in records:
            ids = [c.id for c in record.chunks]
            assert len(ids) == 2 and ids[0] != ids[1], ids
            assert all(re.fullmatch(hashed, i) for i in ids), ids
        spans = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
        assert spans and "corp.example" not in json.dumps(spans, default=str)
    finally:
        rt.shutdown()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_runnable_with_message_history_gives_its_history(traced: Traced) -> None:
    """``RunnableWithMessageHistory``'s session in ``configurable`` names the conversation
    (callbacks see ``configurable`` only inside the request: it is read there)."""
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from tests.integrations.lc_app import fake_llm

    stores: dict[str, InMemoryChatMessageHistory] = {}
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chat = RunnableWithMessageHistory(
        prompt | fake_llm(ANSWER),
        lambda session_id: stores.setdefault(session_id, InMemoryChatMessageHistory()),
        input_messages_key="question",
        history_messages_key="history",
    )
    cfg = config(traced, configurable={"session_id": "chat-5"})
    chat.invoke({"question": QUESTION}, cfg)
    chat.invoke({"question": "And the Borealis?"}, cfg)
    first, second = traced.records
    assert first.conversation is not None and first.conversation.history == ()
    assert [r.query for r in traced.records] == [QUESTION, "And the Borealis?"]
    assert [r.conversation and r.conversation.session_id for r in traced.records] == [
        "chat-5",
        "chat-5",
    ]
    assert second.conversation is not None
    assert second.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))
