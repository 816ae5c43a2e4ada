"""LlamaIndex agent workflows through LlamaIndex's own APIs: one agent run is one request.

``FunctionAgent``, ``ReActAgent``, ``CodeActAgent`` and ``AgentWorkflow`` with scripted fake
LLMs and a real query engine tool (``li_agent_app``): the record holds the user's message, the
final answer, the chunks the tool's retriever returned, the tool calls and the conversation;
the trace is one AGENT root with LLM and TOOL children, the tool's retrieval nested under its
TOOL span.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llama_index.core.agent.workflow import (
    AgentOutput,
    AgentStream,
    AgentWorkflow,
    CodeActAgent,
    FunctionAgent,
    ReActAgent,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation.dispatcher import instrument_tags
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.workflow import Context
from llama_index.core.workflow.errors import WorkflowCancelledByUser
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

import ragtrace
from ragtrace._model import RETRIEVALS_KEY, Chunk, Conversation, RagRecord, ToolCall, Turn
from ragtrace.integrations.llama_index import LlamaIndexTracer, instrument, uninstrument
from ragtrace.integrations.llama_index import _agents as agents_module
from tests.conftest import Traced
from tests.integrations.li_agent_app import (
    AGENT_MODEL,
    CODE,
    CODE_ANSWER,
    CODE_MODEL,
    REACT_MODEL,
    SOURCE_NODES,
    SOURCE_SCORES,
    TOOL,
    TOP_K,
    CodeActLLM,
    HandoffLLM,
    ReActLLM,
    ToolCallingLLM,
    docs_tool,
    failing_tool,
    final_answer,
    run_code,
    sources_tool,
)

QUESTION = "When was the lighthouse built?"
FOLLOW_UP = "Who painted it red?"
ANSWER = final_answer(QUESTION)
TOOL_ANSWER = f"Answer: {QUESTION}"  # what the tool's query engine (li_app.FakeLLM) says

Agent = Any  # FunctionAgent | ReActAgent | AgentWorkflow

# LlamaIndex's own noise: building a workflow inspects the agent's pydantic members, and
# ReActAgent asks ``ctx.is_running`` inside a step.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]


@pytest.fixture
def li(traced: Traced) -> Iterator[Traced]:
    instrument(traced.rt)
    yield traced
    uninstrument()


def function_agent(tool: Any = None, llm: Any = None) -> FunctionAgent:
    return FunctionAgent(tools=[tool or docs_tool()], llm=llm or ToolCallingLLM())


def react_agent(tool: Any = None) -> ReActAgent:
    return ReActAgent(tools=[tool or docs_tool()], llm=ReActLLM())


def agent_workflow(tool: Any = None) -> AgentWorkflow:
    librarian = FunctionAgent(
        name="librarian",
        description="Answers questions about lighthouses.",
        tools=[tool or docs_tool()],
        llm=ToolCallingLLM(),
    )
    return AgentWorkflow(agents=[librarian], root_agent="librarian")


# (builder, root span name, model of the agent's own LLM steps)
AGENTS: dict[str, tuple[Callable[..., Agent], str, str]] = {
    "function": (function_agent, "FunctionAgent.run", AGENT_MODEL),
    "react": (react_agent, "ReActAgent.run", REACT_MODEL),
    "workflow": (agent_workflow, "AgentWorkflow.run", AGENT_MODEL),
}


def kind(span: ReadableSpan) -> str:
    return str((span.attributes or {})["openinference.span.kind"])


def by_kind(spans: list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    kinds: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        kinds.setdefault(kind(span), []).append(span)
    return kinds


def hexid(span: ReadableSpan) -> str:
    return format(span.context.span_id, "016x")


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def timeless(calls: tuple[ToolCall, ...]) -> list[ToolCall]:
    assert all(c.duration_s > 0 for c in calls)
    return [dataclasses.replace(c, duration_s=0.0) for c in calls]


def tool_results(output: AgentOutput) -> list[ToolCallResult]:
    """The tool calls the agent reports having made in its final output."""
    return [c for c in output.tool_calls if isinstance(c, ToolCallResult)]


def check_clean(li: Traced) -> None:
    """Nothing went wrong inside ragtrace and nothing is left open."""
    assert li.rt.diagnostics.counts() == {}
    assert li.rt.capture.open_requests() == 0
    tracer = instrument(li.rt)
    assert isinstance(tracer, LlamaIndexTracer) and tracer.open_requests() == 0
    assert not tracer._parent and not tracer._tools and not tracer._llms


def conversation_attributes(conversation: Conversation | None) -> dict[str, Any]:
    """What the root span shows of a record's conversation."""
    if conversation is None:
        return {}
    attrs: dict[str, Any] = {"ragtrace.conversation.turn": conversation.turn}
    if conversation.history:
        attrs["ragtrace.conversation.history_turns"] = len(conversation.history)
    if conversation.session_id is not None:
        attrs["session.id"] = attrs["gen_ai.conversation.id"] = conversation.session_id
    if conversation.user_id is not None:
        attrs["user.id"] = conversation.user_id
    return attrs


def check_rag_turn(
    li: Traced,
    record: RagRecord,
    output: AgentOutput,
    root_name: str,
    agent_model: str,
    question: str = QUESTION,
) -> None:
    """``record`` is the whole agent turn that produced ``output``: one tool call on the docs
    tool, the chunks its retriever returned, two agent LLM steps and the tool's own LLM."""
    (result,) = tool_results(output)
    nodes = result.tool_output.raw_output.source_nodes
    assert len(nodes) == 2
    tool_answer = f"Answer: {question}"
    assert (record.query, record.response, record.status, record.error) == (
        question,
        final_answer(question),
        "ok",
        None,
    )
    assert str(output) == final_answer(question)
    assert record.chunks == tuple(
        Chunk(
            text=n.node.get_content(),
            id=n.node.node_id,
            score=n.score,
            metadata=n.node.metadata,
            source=f"{TOOL}/VectorIndexRetriever",
            query=None,  # the tool was asked the user's own question
            step=0,
            retrieval=0,
            # the tool's query engine answered from them, and its answer reached the agent's
            # final model call
            used=True,
        )
        for n in nodes
    )
    assert timeless(record.tool_calls) == [
        ToolCall(
            name=TOOL,
            arguments=json.dumps({"input": question}, separators=(",", ":")),
            status="ok",
            call_id=result.tool_id,
        )
    ]
    assert record.llm_calls == 3  # two agent steps and the query engine's answer
    assert record.model == agent_model

    spans = li.spans_of(record.trace_id)
    kinds = by_kind(spans)
    assert {k: len(v) for k, v in kinds.items()} == {
        "AGENT": 1,
        "LLM": 3,
        "TOOL": 1,
        "RETRIEVER": 1,
    }
    (root,) = kinds["AGENT"]
    (tool,) = kinds["TOOL"]
    (retriever,) = kinds["RETRIEVER"]
    assert root.parent is None and hexid(root) == record.span_id and root.name == root_name
    assert root.status.status_code == StatusCode.OK
    assert parent_of(tool) == root.context.span_id
    assert parent_of(retriever) == tool.context.span_id
    agent_llms = [s for s in kinds["LLM"] if parent_of(s) == root.context.span_id]
    tool_llms = [s for s in kinds["LLM"] if parent_of(s) == tool.context.span_id]
    assert len(agent_llms) == 2 and len(tool_llms) == 1
    assert {s.attributes["gen_ai.request.model"] for s in agent_llms} == {agent_model}

    assert dict(root.attributes or {}) == {
        **conversation_attributes(record.conversation),
        "openinference.span.kind": "AGENT",
        "gen_ai.operation.name": "invoke_agent",
        "ragtrace.app": "test-app",
        "input.value": question,
        "input.mime_type": "text/plain",
        "output.value": final_answer(question),
        "output.mime_type": "text/plain",
        "ragtrace.request.status": "ok",
        "gen_ai.request.model": agent_model,
        "ragtrace.agent.llm_calls": 3,
        "ragtrace.agent.tool_calls": 1,
        "ragtrace.context.used": (0, 1),
        "ragtrace.context.unused": (),
    }
    arguments = json.dumps({"input": question}, separators=(",", ":"))
    assert tool.name == TOOL and tool.status.status_code == StatusCode.OK
    assert dict(tool.attributes or {}) == {
        "openinference.span.kind": "TOOL",
        "gen_ai.operation.name": "execute_tool",
        "tool.name": TOOL,
        "gen_ai.tool.name": TOOL,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": result.tool_id,
        "input.value": arguments,
        "gen_ai.tool.call.arguments": arguments,
        "output.value": tool_answer,
        "output.mime_type": "text/plain",
    }
    assert retriever.name == f"{TOOL}/VectorIndexRetriever"
    assert retriever.attributes["gen_ai.retrieval.query.text"] == question
    assert json.loads(str(retriever.attributes["gen_ai.retrieval.documents"])) == [
        {"id": n.node.node_id, "score": n.score} for n in nodes
    ]


# -- one run, one request ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(AGENTS))
async def test_agent_run_is_one_request(li: Traced, name: str) -> None:
    build, root_name, model = AGENTS[name]
    output = await build().run(user_msg=QUESTION)

    record = li.only_record()
    check_rag_turn(li, record, output, root_name, model)
    assert record.conversation is None  # a first turn with no session id
    assert "metadata" not in record.attributes
    check_clean(li)


async def test_code_act_agent_run_is_one_request_with_its_code_as_a_tool_call(li: Traced) -> None:
    agent = CodeActAgent(code_execute_fn=run_code, llm=CodeActLLM())
    output = await agent.run(user_msg=QUESTION)
    assert str(output) == CODE_ANSWER

    record = li.only_record()
    assert (record.query, record.response, record.status, record.chunks) == (
        QUESTION,
        CODE_ANSWER,
        "ok",
        (),
    )
    (result,) = tool_results(output)
    assert timeless(record.tool_calls) == [
        ToolCall(
            name="execute",
            arguments=json.dumps({"code": CODE}, separators=(",", ":")),
            call_id=result.tool_id,
        )
    ]
    assert (record.llm_calls, record.model) == (2, CODE_MODEL)
    kinds = by_kind(li.spans_of(record.trace_id))
    assert {k: len(v) for k, v in kinds.items()} == {"AGENT": 1, "LLM": 2, "TOOL": 1}
    (root,), (tool,) = kinds["AGENT"], kinds["TOOL"]
    assert root.name == "CodeActAgent.run" and parent_of(tool) == root.context.span_id
    assert tool.attributes["output.value"] == "1851\n"
    check_clean(li)


async def test_streamed_run_gives_the_same_single_record(li: Traced) -> None:
    handler = function_agent().run(user_msg=QUESTION)
    seen: list[type] = []
    async for event in handler.stream_events():
        seen.append(type(event))
    output = await handler

    assert AgentStream in seen and ToolCallResult in seen
    check_rag_turn(li, li.only_record(), output, "FunctionAgent.run", AGENT_MODEL)
    check_clean(li)


async def test_a_handoff_between_agents_is_one_request(li: Traced) -> None:
    triage = FunctionAgent(
        name="triage",
        description="Routes each question to the agent that knows.",
        tools=[],
        llm=HandoffLLM(to="librarian"),
        can_handoff_to=["librarian"],
    )
    librarian = FunctionAgent(
        name="librarian",
        description="Answers questions about lighthouses.",
        tools=[docs_tool()],
        llm=ToolCallingLLM(),
    )
    workflow = AgentWorkflow(agents=[triage, librarian], root_agent="triage")
    output = await workflow.run(user_msg=QUESTION)

    record = li.only_record()
    assert (record.query, record.response, record.status) == (
        QUESTION,
        final_answer(QUESTION),
        "ok",
    )
    assert [(c.name, c.status) for c in record.tool_calls] == [
        ("handoff", "ok"),
        (TOOL, "ok"),
    ]
    (result,) = [r for r in tool_results(output) if r.tool_name == TOOL]
    assert [c.id for c in record.chunks] == [
        n.node.node_id for n in result.tool_output.raw_output.source_nodes
    ]
    roots = [s for s in li.spans() if s.parent is None]
    assert [s.name for s in roots] == ["AgentWorkflow.run"]
    check_clean(li)


async def test_concurrent_runs_stay_apart(li: Traced) -> None:
    agent = function_agent()
    first, second = await asyncio.gather(
        agent.run(user_msg=QUESTION), agent.run(user_msg=FOLLOW_UP)
    )
    assert len(li.records) == 2
    by_query = {r.query: r for r in li.records}
    check_rag_turn(li, by_query[QUESTION], first, "FunctionAgent.run", AGENT_MODEL)
    check_rag_turn(li, by_query[FOLLOW_UP], second, "FunctionAgent.run", AGENT_MODEL, FOLLOW_UP)
    assert by_query[QUESTION].trace_id != by_query[FOLLOW_UP].trace_id
    check_clean(li)


# -- tools ------------------------------------------------------------------------------------


async def test_parallel_tool_calls_that_find_the_same_nodes_give_each_node_once(
    li: Traced,
) -> None:
    asks = ["lighthouse on island 1", "lighthouse on island 2"]
    output = await function_agent(llm=ToolCallingLLM(asks=asks)).run(user_msg=QUESTION)

    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    results = {r.tool_id: r for r in tool_results(output)}
    assert timeless(record.tool_calls) == [
        ToolCall(
            name=TOOL,
            arguments=json.dumps({"input": ask}, separators=(",", ":")),
            call_id=f"call-{i + 1}",
        )
        for i, ask in enumerate(asks)
    ]
    # Both calls found the same nodes (the mock embedding ranks every node alike): each node
    # once, tagged with the call that found it first, naming both calls' retrievals.
    found = [results[f"call-{i + 1}"].tool_output.raw_output.source_nodes for i in range(2)]
    assert [n.node.node_id for n in found[0]] == [n.node.node_id for n in found[1]]
    assert len(record.chunks) == len(found[0]) == TOP_K
    for chunk, node in zip(record.chunks, found[0], strict=True):
        assert chunk.step is not None
        first, second = chunk.metadata[RETRIEVALS_KEY]
        assert [first["query"], second["query"]] == [asks[chunk.step], asks[1 - chunk.step]]
        assert [first["retrieval"], second["retrieval"]] == [0, 1]
        assert first["score"] == second["score"] == node.score
        assert chunk == Chunk(
            text=node.node.get_content(),
            id=node.node.node_id,
            score=node.score,
            metadata={**node.node.metadata, RETRIEVALS_KEY: [first, second]},
            source=f"{TOOL}/VectorIndexRetriever",
            query=asks[chunk.step],
            step=chunk.step,
            retrieval=0,
            used=True,  # both tools' answers reached the agent's final call
        )
    assert record.llm_calls == 4  # two agent steps and each tool's query engine

    kinds = by_kind(li.spans_of(record.trace_id))
    assert {k: len(v) for k, v in kinds.items()} == {
        "AGENT": 1,
        "LLM": 4,
        "TOOL": 2,
        "RETRIEVER": 2,
    }
    (root,) = kinds["AGENT"]
    tools = {t.attributes["gen_ai.tool.call.id"]: t for t in kinds["TOOL"]}
    assert all(parent_of(t) == root.context.span_id for t in tools.values())
    for i, ask in enumerate(asks):
        tool = tools[f"call-{i + 1}"]
        (retriever,) = [r for r in kinds["RETRIEVER"] if parent_of(r) == tool.context.span_id]
        assert retriever.attributes["gen_ai.retrieval.query.text"] == ask
        assert tool.attributes["output.value"] == f"Answer: {ask}"
    check_clean(li)


async def test_failing_tool_is_an_error_tool_call(li: Traced) -> None:
    output = await function_agent(failing_tool()).run(user_msg=QUESTION)
    assert str(output) == ANSWER  # the agent answers anyway

    record = li.only_record()
    assert (record.query, record.response, record.status, record.chunks) == (
        QUESTION,
        ANSWER,
        "ok",
        (),
    )
    assert timeless(record.tool_calls) == [
        ToolCall(
            name=TOOL,
            arguments=json.dumps({"input": QUESTION}, separators=(",", ":")),
            status="error",
            error="ConnectionError: docs service unreachable",
            call_id="call-1",
        )
    ]
    assert record.llm_calls == 2
    kinds = by_kind(li.spans_of(record.trace_id))
    assert {k: len(v) for k, v in kinds.items()} == {"AGENT": 1, "LLM": 2, "TOOL": 1}
    (tool,) = kinds["TOOL"]
    assert tool.status.status_code == StatusCode.ERROR
    assert tool.status.description == "ConnectionError: docs service unreachable"
    assert parent_of(tool) == kinds["AGENT"][0].context.span_id
    check_clean(li)


async def test_unknown_tool_is_an_error_tool_call(li: Traced) -> None:
    await function_agent(llm=ToolCallingLLM(tool="atlas")).run(user_msg=QUESTION)

    record = li.only_record()
    assert record.response == ANSWER and record.chunks == ()
    (call,) = record.tool_calls
    assert (call.name, call.status, call.error, call.call_id) == (
        "atlas",
        "error",
        "Tool atlas not found. Please select a tool that is available.",
        "call-1",
    )
    check_clean(li)


async def test_tool_source_nodes_become_the_chunks(li: Traced) -> None:
    """A tool that retrieves through no LlamaIndex retriever still gives its source nodes."""
    await function_agent(sources_tool()).run(user_msg=QUESTION)

    record = li.only_record()
    assert record.response == ANSWER
    assert record.chunks == tuple(
        Chunk(
            text=n.get_content(),
            id=n.node_id,
            score=s,
            metadata=n.metadata,
            source=TOOL,
            step=0,
            retrieval=0,
            # the tool answered without them ("Answer: ..."): no model call saw their text
            used=False,
        )
        for n, s in zip(SOURCE_NODES, SOURCE_SCORES, strict=True)
    )
    (call,) = record.tool_calls
    assert (call.name, call.status) == (TOOL, "ok")
    kinds = by_kind(li.spans_of(record.trace_id))
    assert {k: len(v) for k, v in kinds.items()} == {
        "AGENT": 1,
        "LLM": 2,
        "TOOL": 1,
        "RETRIEVER": 1,
    }
    (tool,), (retriever,) = kinds["TOOL"], kinds["RETRIEVER"]
    assert parent_of(retriever) == tool.context.span_id
    assert retriever.attributes["gen_ai.retrieval.query.text"] == QUESTION
    assert tool.attributes["output.value"] == TOOL_ANSWER
    check_clean(li)


async def test_failing_run_is_an_error_record(li: Traced) -> None:
    def broken(messages: Any, **kwargs: Any) -> ChatMessage:
        raise ConnectionError("model endpoint refused the connection")

    llm = ToolCallingLLM()
    llm.response_generator = broken
    with pytest.raises(Exception, match="model endpoint refused"):
        await function_agent(llm=llm).run(user_msg=QUESTION)

    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, None, "error")
    assert record.error is not None and "model endpoint refused the connection" in record.error
    (root,) = by_kind(li.spans_of(record.trace_id))["AGENT"]
    assert root.status.status_code == StatusCode.ERROR
    check_clean(li)


# -- conversations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "session"),
    [
        (lambda: Memory.from_defaults(session_id="chat-7", token_limit=4000), "chat-7"),
        (lambda: ChatMemoryBuffer.from_defaults(chat_store_key="chat-8"), "chat-8"),
    ],
    ids=["Memory", "ChatMemoryBuffer"],
)
async def test_two_turns_with_one_memory_are_one_conversation(
    li: Traced, memory: Callable[[], Any], session: str
) -> None:
    agent, shared = function_agent(), memory()
    await agent.run(user_msg=QUESTION, memory=shared)
    second = await agent.run(user_msg=FOLLOW_UP, memory=shared)

    first_record, second_record = li.records
    assert first_record.conversation == Conversation(session_id=session, turn=0)
    assert second_record.conversation == Conversation(
        session_id=session,
        turn=1,
        history=(Turn("user", QUESTION), Turn("assistant", ANSWER)),
    )
    check_rag_turn(li, second_record, second, "FunctionAgent.run", AGENT_MODEL, FOLLOW_UP)
    for record in li.records:
        (root,) = by_kind(li.spans_of(record.trace_id))["AGENT"]
        assert root.attributes["session.id"] == session
        assert root.attributes["gen_ai.conversation.id"] == session
        assert record.attributes["metadata"] == {"session_id": session}
    check_clean(li)


async def test_react_memory_keeps_the_reasoning_as_the_assistant_turn(li: Traced) -> None:
    agent, shared = react_agent(), Memory.from_defaults(session_id="chat-9", token_limit=4000)
    await agent.run(user_msg=QUESTION, memory=shared)
    await agent.run(user_msg=FOLLOW_UP, memory=shared)

    history = li.records[1].conversation.history if li.records[1].conversation else ()
    assert [t.role for t in history] == ["user", "assistant"]
    assert history[0].content == QUESTION
    assert history[1].content.startswith("Thought: I need the docs.\nAction: lighthouse_docs")
    assert history[1].content.endswith(f"Answer: {ANSWER}")
    assert li.records[1].conversation == Conversation(session_id="chat-9", turn=1, history=history)
    check_clean(li)


@pytest.mark.filterwarnings("ignore:Skipping serialization of known unserializable key")
async def test_ragtrace_session_names_a_context_conversation(li: Traced) -> None:
    agent = function_agent()
    ctx = Context(agent)
    earlier = [
        ChatMessage(role="user", content=QUESTION),
        ChatMessage(role="assistant", content=ANSWER),
    ]
    with ragtrace.session("thread-42", user_id="u-7"):
        await agent.run(user_msg=QUESTION, ctx=ctx)
        # LlamaIndex does not carry the memory over in the context (it warns so); the app
        # gives the earlier turns itself.
        await agent.run(user_msg=FOLLOW_UP, ctx=ctx, chat_history=earlier)

    first, second = li.records
    assert first.conversation == Conversation(session_id="thread-42", user_id="u-7", turn=0)
    assert second.conversation == Conversation(
        session_id="thread-42",
        user_id="u-7",
        turn=1,
        history=(Turn("user", QUESTION), Turn("assistant", ANSWER)),
    )
    assert second.query == FOLLOW_UP
    (root,) = by_kind(li.spans_of(second.trace_id))["AGENT"]
    assert (root.attributes["session.id"], root.attributes["user.id"]) == ("thread-42", "u-7")
    check_clean(li)


async def test_chat_history_alone_gives_the_query_and_earlier_turns(li: Traced) -> None:
    chat = [
        ChatMessage(role="system", content="You answer questions about lighthouses."),
        ChatMessage(role="user", content=QUESTION),
        ChatMessage(role="assistant", content=ANSWER),
        ChatMessage(role="user", content=FOLLOW_UP),
    ]
    await function_agent().run(chat_history=chat)

    record = li.only_record()
    assert (record.query, record.response) == (FOLLOW_UP, final_answer(FOLLOW_UP))
    assert record.conversation == Conversation(
        turn=1, history=(Turn("user", QUESTION), Turn("assistant", ANSWER))
    )
    check_clean(li)


async def test_instrument_tags_become_metadata_and_name_the_session(li: Traced) -> None:
    with instrument_tags({"session_id": "tagged-3", "tenant": "acme"}):
        await function_agent().run(user_msg=QUESTION)

    record = li.only_record()
    assert record.attributes["metadata"] == {"session_id": "tagged-3", "tenant": "acme"}
    assert record.conversation == Conversation(session_id="tagged-3", turn=0)
    check_clean(li)


async def test_cancelled_run_is_abandoned(li: Traced) -> None:
    handler = function_agent().run(user_msg=QUESTION)
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            await handler.cancel_run()
            break
    with pytest.raises(WorkflowCancelledByUser):
        await handler

    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, None, "abandoned")
    check_clean(li)


async def test_an_unreadable_tool_result_still_ends_the_tool_call(
    li: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(result: Any, keep: int, errors: list[BaseException]) -> Any:
        raise ValueError("odd tool output")

    monkeypatch.setattr(agents_module, "tool_end", broken)
    output = await function_agent().run(user_msg=QUESTION)
    assert str(output) == ANSWER  # the app is untouched

    record = li.only_record()
    assert (record.query, record.response, record.status) == (QUESTION, ANSWER, "ok")
    (call,) = record.tool_calls
    assert (call.name, call.status, call.call_id) == (TOOL, "ok", "call-1")
    # the retriever inside the tool still gave its chunks
    assert [c.id for c in record.chunks] == [
        n.node.node_id for n in tool_results(output)[0].tool_output.raw_output.source_nodes
    ]
    assert li.rt.diagnostics.counts() == {"llama_index.tool_result": 1}
    assert li.rt.capture.open_requests() == 0
