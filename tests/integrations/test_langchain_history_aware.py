"""LangChain's history-aware retrieval chains (``langchain-classic``).

``create_history_aware_retriever`` under ``create_retrieval_chain``, as LangChain's
conversational-RAG tutorial builds them, driven by LangChain's own fake chat models. Each turn
is one record with the chat history it was given, the question the chain rewrote it into (the
standalone question) and the documents retrieved for that question; the first turn, which the
chain does not rewrite, has none.
"""

from __future__ import annotations

from typing import Any

from langchain_classic.chains import create_history_aware_retriever, create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from ragtrace._model import Turn
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from tests.conftest import Traced
from tests.integrations.lc_agent_app import KeywordRetriever

QUESTION = "How long is the Aurora warranty?"
ANSWER = "The Aurora has a 3-year warranty."
FOLLOW_UP = "And the Borealis?"
STANDALONE = "How long is the Borealis heat pump warranty?"
SECOND_ANSWER = "The Borealis has a 5-year warranty."

CONTEXTUALIZE = ChatPromptTemplate.from_messages(
    [
        ("system", "Given the chat history, rewrite the latest question to stand on its own."),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
    ]
)
ANSWER_PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the context only.\n\n{context}"),
        MessagesPlaceholder("chat_history"),
        ("human", "{input}"),
    ]
)


def conversational_chain(rewrites: list[str], answers: list[str]) -> Any:
    """The tutorial's chain: a history-aware retriever, then a stuff-documents answer."""
    rewriter = GenericFakeChatModel(messages=iter([AIMessage(r) for r in rewrites]))
    writer = GenericFakeChatModel(messages=iter([AIMessage(a) for a in answers]))
    retriever = create_history_aware_retriever(rewriter, KeywordRetriever(), CONTEXTUALIZE)
    return create_retrieval_chain(retriever, create_stuff_documents_chain(writer, ANSWER_PROMPT))


def test_each_turn_records_its_history_and_the_standalone_question(traced: Traced) -> None:
    chain = conversational_chain([STANDALONE], [ANSWER, SECOND_ANSWER])
    cfg = {"callbacks": [RagtraceCallbackHandler(traced.rt)], "metadata": {"session_id": "s-9"}}
    first = chain.invoke({"input": QUESTION, "chat_history": []}, cfg)
    history = [HumanMessage(QUESTION), AIMessage(first["answer"])]
    chain.invoke({"input": FOLLOW_UP, "chat_history": history}, cfg)

    one, two = traced.records
    assert (one.query, one.response) == (QUESTION, ANSWER)
    assert (two.query, two.response) == (FOLLOW_UP, SECOND_ANSWER)
    assert one.conversation is not None and two.conversation is not None
    assert (one.conversation.session_id, two.conversation.session_id) == ("s-9", "s-9")
    # the first turn goes to the retriever as asked: nothing rewritten
    assert one.conversation.history == () and one.conversation.standalone_query is None
    assert two.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))
    assert two.conversation.standalone_query == STANDALONE
    # the documents are the ones retrieved for the rewritten question, each once
    assert [c.id for c in two.chunks] == ["kb-aurora", "kb-borealis"]
    assert {c.query for c in two.chunks} == {STANDALONE}


async def test_an_async_turn_records_the_same(traced: Traced) -> None:
    chain = conversational_chain([STANDALONE], [SECOND_ANSWER])
    history = [HumanMessage(QUESTION), AIMessage(ANSWER)]
    await chain.ainvoke(
        {"input": FOLLOW_UP, "chat_history": history},
        {"callbacks": [RagtraceCallbackHandler(traced.rt)]},
    )
    record = traced.only_record()
    assert record.response == SECOND_ANSWER
    assert record.conversation is not None
    assert record.conversation.history == (Turn("user", QUESTION), Turn("assistant", ANSWER))
    assert record.conversation.standalone_query == STANDALONE
