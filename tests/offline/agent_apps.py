"""Agents, graphs and chains for the agent-system tests (``tests.offline.agent_apps:NAME``).

Real LangChain 1.x / LangGraph objects over LangChain's own fake chat model
(``FakeMessagesListChatModel``, scripted: a tool call, then the final answer) and a small
retriever over two facts. ``search`` is a tool that asks the retriever and notes the LangGraph
thread it ran in (``THREADS``); every chat model call notes the messages it was given
(``PROMPTS``), so a test sees what the app was asked.
"""

from __future__ import annotations

import typing
from typing import Any

import typing_extensions
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from tests.integrations.lc_agent_app import in_sequence

FACTS = (
    Document("The lighthouse was built in 1850.", id="f0"),
    Document("The harbour opened in 1901.", id="f1"),
)
THREADS: list[str | None] = []
"""The thread id of every ``search`` call, in order."""
PROMPTS: list[list[tuple[str, str]]] = []
"""The (type, text) of the messages of every chat model call, in order."""


class ScriptedModel(FakeMessagesListChatModel):
    """LangChain's fake chat model with tools bound (to nothing) and its prompts noted."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        PROMPTS.append([(m.type, str(m.content)) for m in messages])
        return super()._generate(messages, *args, **kwargs)


class Facts(BaseRetriever):
    """The facts that share a word of five letters or more with the query (all of them when
    none does)."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = _words(query)
        found = [d for d in FACTS if words & _words(d.page_content)]
        return found or list(FACTS)


def _words(text: str) -> set[str]:
    return {w for w in (w.strip(".,?!").lower() for w in text.split()) if len(w) >= 5}


@tool
def search(query: str, config: RunnableConfig) -> str:
    """Search the town's facts."""
    THREADS.append((config.get("configurable") or {}).get("thread_id"))
    return "\n".join(d.page_content for d in Facts().invoke(query))


@tool(response_format="content_and_artifact")
def lookup(query: str) -> tuple[str, list[Document]]:
    """Look the town's facts up; the documents travel as the artifact."""
    documents = Facts().invoke(query)
    return f"{len(documents)} fact(s) found", documents


def calls(tool_name: str, query: str, call_id: str = "c1") -> AIMessage:
    """The model's message calling ``tool_name`` with ``query``."""
    return AIMessage(
        content="", tool_calls=[{"name": tool_name, "args": {"query": query}, "id": call_id}]
    )


def agent(*responses: AIMessage, checkpointer: Any = None, tools: Any = (search,)) -> Any:
    """A ``create_agent`` agent whose model says ``responses`` in turn."""
    model = ScriptedModel(responses=list(responses))
    return create_agent(model, list(tools), checkpointer=checkpointer)


def threaded_agent() -> Any:
    """A factory (``--system-callable``): an agent with a checkpointer, scripted for the CLI
    test's data set: a one-turn case, then a case with one earlier user turn."""
    return agent(
        calls("search", "lighthouse"),
        AIMessage("The lighthouse was built in 1850."),
        AIMessage("Hello! Ask me about the town."),
        calls("search", "harbour", "c2"),
        AIMessage("The harbour opened in 1901."),
        checkpointer=InMemorySaver(),
    )


class StdState(typing.TypedDict):
    question: str
    documents: list[Document]
    generation: str


class ExtState(typing_extensions.TypedDict):
    question: str
    documents: list[Document]
    generation: str


def rag_graph(state: type[Any] = StdState) -> Any:
    """A LangGraph ``StateGraph`` over ``question``/``documents``/``generation``: retrieve,
    then answer from the first document. A ``typing.TypedDict`` state has no JSON schema on
    Python 3.11; ``typing_extensions``' has one."""

    def retrieve(s: dict[str, Any]) -> dict[str, Any]:
        return {"documents": Facts().invoke(s["question"])}

    def generate(s: dict[str, Any]) -> dict[str, Any]:
        return {"generation": f"From the records: {s['documents'][0].page_content}"}

    return in_sequence(state, retrieve=retrieve, generate=generate)


def history_chain(*answers: str) -> Runnable[Any, str]:
    """A chain over ``{"question", "chat_history"}``: prompt, scripted model, string."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer briefly."), ("placeholder", "{chat_history}"), ("user", "{question}")]
    )
    model = ScriptedModel(responses=[AIMessage(a) for a in answers])
    return prompt | model | StrOutputParser()
