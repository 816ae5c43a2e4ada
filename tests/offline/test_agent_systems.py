"""Agents, LangGraph graphs and multi-turn cases as systems: ``ragtrace.testing.ask`` and
``ragtrace eval --system-callable``.

Real ``create_agent`` agents and ``StateGraph`` graphs over LangChain's fake chat model and a
small retriever (``tests.offline.agent_apps``); LangGraph's ``InMemorySaver`` keeps threads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver

from ragtrace._model import RETRIEVALS_KEY, Conversation, RagRecord, Score, Turn
from ragtrace._offline.case_conversations import CaseParser, conversation_from
from ragtrace._offline.cases import CaseError, case_record
from ragtrace._offline.cli import main
from ragtrace._offline.records import LineError
from ragtrace.evaluators import _registry as registry
from ragtrace.evaluators._base import Evaluator
from ragtrace.integrations.langchain._adapter import RunnableCaller
from ragtrace.integrations.langchain._inputs import InputShape, input_shape
from ragtrace.testing import ask, load_cases
from tests.offline import agent_apps as apps
from tests.offline.agent_apps import calls
from tests.offline.test_cli import read_jsonl, write_jsonl

QUERY_KEYS = ("query", "question", "input")
EARLIER = [
    {"role": "user", "content": "Hi, I am visiting the town."},
    {"role": "assistant", "content": "Welcome! What would you like to know?"},
]


@pytest.fixture(autouse=True)
def fresh_notes() -> Iterator[None]:
    apps.THREADS.clear()
    apps.PROMPTS.clear()
    yield


def test_ask_a_create_agent_agent_keeps_its_answer_chunks_and_tool_calls() -> None:
    agent = apps.agent(calls("search", "lighthouse"), AIMessage("It was built in 1850."))
    record = ask(agent, {"id": "lh", "input": "When was the lighthouse built?",
                         "expected_output": "In 1850."})  # fmt: skip
    assert (record.query, record.response, record.reference) == (
        "When was the lighthouse built?", "It was built in 1850.", "In 1850."
    )  # fmt: skip
    assert [c.id for c in record.chunks] == ["f0"]
    assert record.chunks[0].query == "lighthouse"  # the tool's query, not the user's
    assert [(t.name, t.call_id, t.status) for t in record.tool_calls] == [("search", "c1", "ok")]
    assert record.llm_calls == 2
    assert record.attributes["id"] == "lh"
    assert record.attributes["system"] == record.model  # as the scores file names it
    # The agent got its question as a user message.
    assert apps.PROMPTS[0][-1] == ("human", "When was the lighthouse built?")
    assert record.conversation is None  # one turn, no session


def test_a_tools_artifact_documents_are_the_contexts() -> None:
    agent = apps.agent(calls("lookup", "harbour"), AIMessage("In 1901."), tools=[apps.lookup])
    record = ask(agent, "When did the harbour open?")
    assert [c.id for c in record.chunks] == ["f1"]
    assert [t.name for t in record.tool_calls] == ["lookup"]
    assert record.response == "In 1901."


@pytest.mark.parametrize("state", [apps.StdState, apps.ExtState], ids=["typing", "extensions"])
def test_a_state_graph_over_question_documents_generation(state: type[Any]) -> None:
    graph = apps.rag_graph(state)
    record = ask(graph, {"id": "g", "query": "When did the harbour open?"})
    assert record.query == "When did the harbour open?"
    assert record.response == "From the records: The harbour opened in 1901."
    assert [c.id for c in record.chunks] == ["f1"]
    assert record.tool_calls == () and record.llm_calls == 0


def test_a_multi_turn_case_is_asked_in_one_thread_of_a_checkpointer_agent() -> None:
    agent = apps.agent(
        AIMessage("Welcome! Ask me anything."),
        calls("search", "harbour"),
        AIMessage("The harbour opened in 1901."),
        checkpointer=InMemorySaver(),
    )
    case = {"id": "mt", "input": "When did the harbour open?", "conversation": EARLIER,
            "session_id": "visit-1"}  # fmt: skip
    record = ask(agent, case)
    # Only the last turn is the record: its question, answer, tool call and LLM calls.
    assert (record.query, record.response) == (
        "When did the harbour open?", "The harbour opened in 1901."
    )  # fmt: skip
    assert [t.name for t in record.tool_calls] == ["search"] and record.llm_calls == 2
    assert [c.id for c in record.chunks] == ["f1"]
    # The earlier user turn was asked first, in the case's thread; the tool ran in it too.
    assert [p[-1] for p in apps.PROMPTS[:2]] == [
        ("human", "Hi, I am visiting the town."), ("human", "When did the harbour open?")
    ]  # fmt: skip
    assert apps.THREADS == ["visit-1"]
    conversation = record.conversation
    assert conversation is not None and conversation.session_id == "visit-1"
    assert conversation.turn == 1
    assert conversation.history == (  # the app's own answer to the earlier turn
        Turn("user", "Hi, I am visiting the town."), Turn("assistant", "Welcome! Ask me anything.")
    )  # fmt: skip
    # Asked again, the case gets a fresh thread: the first one's turns do not pile up.
    again = ask(agent, case)
    assert apps.THREADS == ["visit-1", "visit-1~2"]
    assert again.conversation is not None and len(again.conversation.history) == 2


def test_a_threaded_agent_gets_a_thread_for_a_single_turn_case() -> None:
    agent = apps.agent(calls("search", "lighthouse"), AIMessage("1850."),
                       checkpointer=InMemorySaver())  # fmt: skip
    record = ask(agent, "When was the lighthouse built?")
    assert record.response == "1850."
    assert len(apps.THREADS) == 1 and apps.THREADS[0]  # a fresh id
    assert record.conversation is not None and record.conversation.history == ()


def test_an_agent_without_checkpointer_gets_the_earlier_turns_as_messages() -> None:
    agent = apps.agent(calls("search", "lighthouse"), AIMessage("1850."))
    record = ask(agent, {"id": "m", "query": "When was the lighthouse built?",
                         "turns": EARLIER})  # fmt: skip
    assert apps.PROMPTS[0] == [
        ("human", "Hi, I am visiting the town."),
        ("ai", "Welcome! What would you like to know?"),
        ("human", "When was the lighthouse built?"),
    ]
    assert apps.THREADS == [None]
    assert record.conversation is not None
    assert [(t.role, t.content) for t in record.conversation.history] == [
        (e["role"], e["content"]) for e in EARLIER
    ]


def test_a_chain_with_chat_history_gets_the_earlier_turns() -> None:
    chain = apps.history_chain("Two years.", "Welcome.")
    record = ask(chain, {"id": "h", "query": "How long is the warranty?", "history": EARLIER,
                         "session_id": "s-9"})  # fmt: skip
    assert record.response == "Two years."
    assert apps.PROMPTS[0] == [
        ("system", "Answer briefly."),
        ("human", "Hi, I am visiting the town."),
        ("ai", "Welcome! What would you like to know?"),
        ("human", "How long is the warranty?"),
    ]
    conversation = record.conversation
    assert conversation is not None and conversation.session_id == "s-9"
    assert [t.content for t in conversation.history] == [e["content"] for e in EARLIER]
    # A case without earlier turns gets an empty history.
    assert ask(chain, "Hello?").response == "Welcome."
    assert apps.PROMPTS[1] == [("system", "Answer briefly."), ("human", "Hello?")]


def test_a_function_with_a_history_parameter_gets_the_earlier_turns() -> None:
    seen: list[Any] = []

    def app(question: str, history: list[dict[str, str]]) -> str:
        seen.append(history)
        return f"{len(history)} earlier turn(s)"

    record = ask(app, {"id": "f", "query": "And then?", "conversation": EARLIER})
    assert seen == [EARLIER] and record.response == "2 earlier turn(s)"
    assert record.conversation == Conversation(
        turn=1, history=tuple(Turn(e["role"], e["content"]) for e in EARLIER)
    )
    assert ask(app, "First question?").response == "0 earlier turn(s)"
    assert (
        ask(lambda q: q.upper(), {"id": "x", "query": "hi", "conversation": EARLIER}).response
        == "HI"
    )


def test_the_input_comes_from_the_runnables_own_schema() -> None:
    from ragtrace.demo.systems import demo_chain

    agent = apps.agent(AIMessage("x"))
    threaded = apps.agent(AIMessage("x"), checkpointer=InMemorySaver())
    assert input_shape(agent, QUERY_KEYS) == InputShape(messages=True)
    assert input_shape(threaded, QUERY_KEYS) == InputShape(messages=True, threaded=True)
    assert input_shape(apps.rag_graph(), QUERY_KEYS) == InputShape(query_key="question")
    assert input_shape(apps.history_chain("x"), QUERY_KEYS) == InputShape(
        query_key="question", history_key="chat_history"
    )
    assert input_shape(demo_chain(), QUERY_KEYS) == InputShape()  # a chain over a string
    assert input_shape(RunnableLambda(lambda q: q), QUERY_KEYS) == InputShape()

    class Opaque:  # a runnable whose schema cannot be read: the question string, as always
        def invoke(self, value: Any, config: Any = None) -> str:
            return f"got {value!r}"

        def get_input_jsonschema(self) -> Any:
            raise RuntimeError("no schema")

    assert input_shape(Opaque(), QUERY_KEYS) == InputShape()
    assert ask(Opaque(), "q?").response == "got 'q?'"
    turns = (Turn("user", "a"), Turn("assistant", "b"))
    assert InputShape(messages=True, query_key="input").build("q", turns) == {
        "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                     {"role": "user", "content": "q"}],
        "input": "q",
    }  # fmt: skip
    caller = RunnableCaller("g", apps.rag_graph())
    try:
        record = caller.call("When was the lighthouse built?").record
        assert record is not None and record.chunks[0].id == "f0"
    finally:
        caller.close()


def test_case_conversations_in_mappings_and_data_sets(tmp_path: Path) -> None:
    record = case_record({"id": "c", "input": "q", "turns": EARLIER, "session_id": "s"}, 1).record
    assert record.conversation == Conversation(
        session_id="s", turn=1, history=tuple(Turn(e["role"], e["content"]) for e in EARLIER)
    )
    assert conversation_from({"history": [{"role": "human", "content": "hi"}]}) == Conversation(
        turn=1, history=(Turn("user", "hi"),)
    )
    assert conversation_from({"session_id": "only"}) == Conversation(session_id="only", turn=0)
    assert conversation_from({"conversation": []}) is None
    assert case_record({"id": "p", "query": "q"}, 1).record.conversation is None
    for bad, message in [
        ({"conversation": EARLIER, "turns": EARLIER}, "'conversation' and 'turns' are the same"),
        ({"conversation": "hi"}, "'conversation' must be a list of turns"),
        ({"turns": [{"role": "system", "content": "x"}]}, "'turns[0].role' must be 'user' or"),
        ({"turns": [{"role": "user", "content": 3}]}, "'turns[0].content' must be a string"),
        ({"session_id": ""}, "'session_id' must be a non-empty string"),
    ]:
        with pytest.raises(LineError, match=re.escape(message)):
            conversation_from(bad)
        with pytest.raises(CaseError, match="case 1: "):
            case_record({"id": "b", "query": "q", **bad}, 1)
    path = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "one", "query": "Where?"},
        {"id": "two", "query": "And then?", "conversation": EARLIER, "session_id": "s-2"},
    ])  # fmt: skip
    one, two = load_cases(path)
    assert one.conversation is None
    assert two.conversation is not None and two.conversation.session_id == "s-2"
    assert [t.role for t in two.conversation.history] == ["user", "assistant"]
    with pytest.raises(LineError, match="missing 'id'"):
        CaseParser().parse_object({"query": "q", "conversation": EARLIER}, 1)


class Seen(Evaluator):
    """Scores every answer 1.0 and keeps the records it scored (a test reads them)."""

    name: ClassVar[str] = "seen"
    requires: ClassVar[frozenset[str]] = frozenset({"response"})
    records: ClassVar[list[RagRecord]] = []

    def evaluate(self, record: RagRecord) -> list[Score]:
        self.records.append(record)
        return [self.score(1.0)]


@pytest.fixture
def seen() -> Iterator[list[RagRecord]]:
    registry.register("seen", Seen, replace=True)
    Seen.records.clear()
    yield Seen.records
    registry.unregister("seen")


def test_eval_system_callable_asks_a_multi_turn_case_of_a_threaded_agent(
    tmp_path: Path, seen: list[RagRecord]
) -> None:
    src = write_jsonl(tmp_path / "cases.jsonl", [
        {"id": "lh", "query": "When was the lighthouse built?", "reference": "1850"},
        {"id": "hb", "query": "When did the harbour open?", "reference": "1901",
         "conversation": [{"role": "user", "content": "Hello there!"}], "session_id": "visit-7"},
    ])  # fmt: skip
    out, summary = tmp_path / "o.jsonl", tmp_path / "s.json"
    code = main([
        "-i", str(src), "-o", str(out), "-e", "seen,tokens_presence", "--summary-json",
        str(summary), "--option", 'tokens_presence.constraints=["1901"]',
        "--system-callable", "tests.offline.agent_apps:threaded_agent", "--no-progress",
    ])  # fmt: skip
    assert code == 0
    lines = read_jsonl(out)
    assert [(x["system"], x["id"], x["error"]) for x in lines] == [
        ("threaded_agent", "lh", None), ("threaded_agent", "hb", None)
    ]  # fmt: skip
    assert [(x["record"]["query"], x["record"]["response"]) for x in lines] == [
        ("When was the lighthouse built?", "The lighthouse was built in 1850."),
        ("When did the harbour open?", "The harbour opened in 1901."),
    ]
    context = {
        x["id"]: s["value"] for x in lines for s in x["scores"]
        if s["name"] == "tokens_presence.context"
    }  # fmt: skip
    assert context == {"lh": 0.0, "hb": 1.0}  # the harbour's fact came from the tool
    assert json.loads(summary.read_text())["asks"]["failed"] == 0
    # The earlier turn ran in the case's thread; the first case got a thread of its own.
    assert len(apps.THREADS) == 2 and apps.THREADS[1] == "visit-7" and apps.THREADS[0]
    by_id = {r.attributes["id"]: r for r in seen}
    assert [t.name for t in by_id["hb"].tool_calls] == ["search"] and by_id["hb"].llm_calls == 2
    conversation = by_id["hb"].conversation
    assert conversation is not None and conversation.session_id == "visit-7"
    assert conversation.history == (
        Turn("user", "Hello there!"), Turn("assistant", "Hello! Ask me about the town.")
    )  # fmt: skip
    assert by_id["lh"].conversation is not None and by_id["lh"].conversation.history == ()


def test_ask_an_agent_that_searches_twice_gives_a_shared_document_once() -> None:
    """Two searches both find the lighthouse fact: two contexts, that one once, naming both."""
    agent = apps.agent(
        calls("search", "lighthouse"),
        calls("search", "lighthouse harbour", "c2"),
        AIMessage("Built in 1850; the harbour opened in 1901."),
    )
    record = ask(agent, "When were the lighthouse and the harbour built?")
    assert [c.id for c in record.chunks] == ["f0", "f1"]
    assert [(c.query, c.step) for c in record.chunks] == [
        ("lighthouse", 0),
        ("lighthouse harbour", 1),
    ]
    assert record.chunks[0].metadata[RETRIEVALS_KEY] == [
        {"retrieval": 0, "query": "lighthouse", "score": None},
        {"retrieval": 1, "query": "lighthouse harbour", "score": None},
    ]
    assert RETRIEVALS_KEY not in record.chunks[1].metadata


def test_ask_a_function_whose_contexts_repeat_a_document_gives_it_once() -> None:
    def app(question: str) -> dict[str, Any]:
        return {
            "answer": "In 1850.",
            "contexts": [
                {"id": "f0", "text": "The lighthouse was built in 1850.", "score": 0.4},
                {"id": "f1", "text": "The harbour opened in 1901.", "score": 0.5},
                {"id": "f0", "text": "The lighthouse was built in 1850.", "score": 0.9},
            ],
        }

    record = ask(app, "When was the lighthouse built?")
    assert [(c.id, c.score) for c in record.chunks] == [("f0", 0.9), ("f1", 0.5)]
