"""The conversation of LlamaIndex chat engines' turns: one record per user turn, with the earlier
turns, the turn number and, where the engine condenses the follow-up, the standalone question,
through sync, async and streaming chats."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llama_index.core.base.llms.types import LLMMetadata
from llama_index.core.chat_engine import (
    CondensePlusContextChatEngine,
    CondenseQuestionChatEngine,
    ContextChatEngine,
    SimpleChatEngine,
)
from llama_index.core.chat_engine.types import BaseChatEngine
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore

import ragtrace
from ragtrace._model import RagRecord, Turn
from ragtrace.integrations.llama_index import instrument, uninstrument
from tests.conftest import Traced
from tests.integrations.li_app import (
    MODEL,
    FakeLLM,
    ListRetriever,
    answer_for,
    condensed,
    query_engine,
)

TURNS = ("When was the lighthouse built?", "Who painted it?", "Does it transfer if I sell it?")


@pytest.fixture
def li(traced: Traced) -> Iterator[Traced]:
    instrument(traced.rt)
    yield traced
    uninstrument()


def buffer() -> ChatMemoryBuffer:
    return ChatMemoryBuffer.from_defaults()


def simple(memory: Any = None, llm: Any = None) -> BaseChatEngine:
    return SimpleChatEngine.from_defaults(llm=llm or FakeLLM(), memory=memory or buffer())


def context(memory: Any = None, llm: Any = None) -> BaseChatEngine:
    return ContextChatEngine.from_defaults(
        ListRetriever(), llm=llm or FakeLLM(), memory=memory or buffer()
    )


def condense_plus_context(memory: Any = None, llm: Any = None) -> BaseChatEngine:
    return CondensePlusContextChatEngine.from_defaults(
        ListRetriever(), llm=llm or FakeLLM(), memory=memory or buffer()
    )


def condense_question(memory: Any = None, llm: Any = None) -> BaseChatEngine:
    llm = llm or FakeLLM()
    return CondenseQuestionChatEngine.from_defaults(
        query_engine=query_engine(llm=llm), llm=llm, memory=memory or buffer()
    )


# engine builder, whether it condenses the follow-up
ENGINES: dict[str, tuple[Callable[..., BaseChatEngine], bool]] = {
    "simple": (simple, False),
    "context": (context, False),
    "condense_plus_context": (condense_plus_context, True),
    "condense_question": (condense_question, True),
}


def check_conversation(records: list[RagRecord], answers: list[str], condenses: bool) -> None:
    """One record per turn, each with the turns before it, its number and its rewrite."""
    assert [r.query for r in records] == list(TURNS)
    assert [r.response for r in records] == answers
    assert len({r.trace_id for r in records}) == len(TURNS)
    first, *follow_ups = records
    assert first.conversation is None  # a first turn with no session id: nothing earlier
    for n, record in enumerate(follow_ups, start=1):
        conversation = record.conversation
        assert conversation is not None
        assert conversation.turn == n
        expected: list[Turn] = []
        for question, answer in zip(TURNS[:n], answers[:n], strict=True):
            expected += [Turn("user", question), Turn("assistant", answer)]
        assert conversation.history == tuple(expected)
        assert conversation.standalone_query == (condensed(TURNS[n]) if condenses else None)
        assert conversation.session_id is None and conversation.user_id is None


def root_attributes(traced: Traced, record: RagRecord) -> dict[str, Any]:
    (root,) = [s for s in traced.spans_of(record.trace_id) if s.parent is None]
    return dict(root.attributes or {})


@pytest.mark.parametrize("name", list(ENGINES))
def test_each_chat_engine_records_its_conversation(li: Traced, name: str) -> None:
    build, condenses = ENGINES[name]
    engine = build()
    answers = [engine.chat(question).response for question in TURNS]

    check_conversation(li.records, answers, condenses)
    attrs = root_attributes(li, li.records[2])
    assert attrs["ragtrace.conversation.turn"] == 2
    assert attrs["ragtrace.conversation.history_turns"] == 4
    if condenses:
        assert attrs["ragtrace.conversation.standalone_query"] == condensed(TURNS[2])
    else:
        assert "ragtrace.conversation.standalone_query" not in attrs
    assert li.rt.diagnostics.counts() == {}


@pytest.mark.parametrize("name", list(ENGINES))
async def test_each_chat_engine_records_its_conversation_async(li: Traced, name: str) -> None:
    build, condenses = ENGINES[name]
    engine = build()
    answers = [(await engine.achat(question)).response for question in TURNS]
    check_conversation(li.records, answers, condenses)
    assert li.rt.diagnostics.counts() == {}


@pytest.mark.parametrize("name", ["condense_plus_context", "simple"])
def test_streaming_chat_records_its_conversation(li: Traced, name: str) -> None:
    build, condenses = ENGINES[name]
    engine = build()
    answers = []
    for n, question in enumerate(TURNS, start=1):
        answers.append("".join(engine.stream_chat(question).response_gen))
        assert len(li.records) == n  # the turn ends when its history writer has written
    check_conversation(li.records, answers, condenses)
    assert li.rt.diagnostics.counts() == {}


async def test_async_streaming_chat_records_its_conversation(li: Traced) -> None:
    engine = condense_plus_context()
    answers = []
    for question in TURNS:
        response = await engine.astream_chat(question)
        answers.append("".join([t async for t in response.async_response_gen()]))
    check_conversation(li.records, answers, condenses=True)
    assert li.rt.diagnostics.counts() == {}


def test_session_adds_its_ids_to_the_history(li: Traced) -> None:
    engine = condense_plus_context()
    with ragtrace.session("thread-9", user_id="u-3"):
        answers = [engine.chat(question).response for question in TURNS]
    first, second, third = li.records
    assert first.conversation is not None
    assert (first.conversation.session_id, first.conversation.turn) == ("thread-9", 0)
    assert third.conversation is not None
    assert (third.conversation.session_id, third.conversation.user_id) == ("thread-9", "u-3")
    assert third.conversation.turn == 2
    assert third.conversation.history[-1] == Turn("assistant", answers[1])
    assert second.conversation is not None
    assert second.conversation.standalone_query == condensed(TURNS[1])


def test_chat_history_given_to_the_call_is_the_history(li: Traced) -> None:
    earlier = [
        ChatMessage(role="user", content="Which island has a lighthouse?"),
        ChatMessage(role="assistant", content="Island 2."),
    ]
    condense_plus_context().chat("Who built it?", chat_history=earlier)
    conversation = li.only_record().conversation
    assert conversation is not None
    assert conversation.turn == 1
    assert conversation.history == (
        Turn("user", "Which island has a lighthouse?"),
        Turn("assistant", "Island 2."),
    )
    assert conversation.standalone_query == condensed("Who built it?")


def test_memory_key_names_the_session(li: Traced) -> None:
    memory = ChatMemoryBuffer.from_defaults(chat_store_key="ticket-17")
    engine = simple(memory=memory)
    engine.chat(TURNS[0])
    engine.chat(TURNS[1])
    first, second = li.records
    assert first.conversation is not None and first.conversation.session_id == "ticket-17"
    assert second.conversation is not None
    assert (second.conversation.session_id, second.conversation.turn) == ("ticket-17", 1)
    assert root_attributes(li, second)["session.id"] == "ticket-17"


class RemoteChatStore(SimpleChatStore):
    """Stands for a chat store kept outside the process (Redis, a database): not read."""


class FakeChatLLM(FakeLLM):
    """``FakeLLM`` as a chat model: engines send it the history as chat messages."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=MODEL, is_chat_model=True, context_window=8192)


@pytest.mark.parametrize("name", ["simple", "context", "condense_plus_context"])
def test_history_from_the_answer_call_when_the_memory_is_not_read(li: Traced, name: str) -> None:
    build, condenses = ENGINES[name]
    memory = ChatMemoryBuffer.from_defaults(chat_store=RemoteChatStore())
    engine = build(memory=memory, llm=FakeChatLLM())
    answers = [engine.chat(question).response for question in TURNS]
    check_conversation(li.records, answers, condenses)
    assert li.rt.diagnostics.counts() == {}


def test_condense_question_with_an_unread_memory_has_no_history(li: Traced) -> None:
    memory = ChatMemoryBuffer.from_defaults(chat_store=RemoteChatStore())
    engine = condense_question(memory=memory)
    answers = [engine.chat(question).response for question in TURNS]
    assert answers[2] == answer_for(condensed(TURNS[2]))  # the engine condensed it
    assert [r.conversation for r in li.records] == [None, None, None]
