"""LangChain 1.x agents and LangGraph graphs built the way LangChain's docs teach, on fake models.

- ``retriever_agent``: ``create_agent`` with a ``@tool`` that calls a retriever (the retriever
  callback fires inside the tool);
- ``artifact_agent``: the RAG-agent tutorial's tool, ``response_format="content_and_artifact"``,
  calling ``vector_store.similarity_search`` directly (no retriever callback: the documents come
  back as the tool's artifact);
- ``state_graph``: a ``StateGraph`` RAG whose state answers under ``generation``;
- ``EnsembleOf``: a retriever that fuses two child retrievers, as ``EnsembleRetriever`` does;
- ``ScoredRetriever``: a retriever whose hits and scores (``metadata["score"]``) per query are
  given, as a vector store's scored search returns them.

The chat model is LangChain's own ``FakeMessagesListChatModel`` with ``bind_tools`` accepted, so
its scripted ``AIMessage``s (tool calls, then a final answer) drive the agent's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, ToolException, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import END, START, StateGraph

KB = [
    Document(id="kb-aurora", page_content="The Aurora heat pump has a 3-year warranty."),
    Document(id="kb-borealis", page_content="The Borealis heat pump has a 5-year warranty."),
    Document(id="kb-install", page_content="Installation takes one day for either model."),
]


class KeywordRetriever(BaseRetriever):
    """Documents of ``docs`` sharing a word with the query, at most ``k``, in corpus order."""

    docs: list[Document] = KB
    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = _words(query)
        hits = [d for d in self.docs if words & _words(d.page_content)]
        return hits[: self.k]


class ScoredRetriever(BaseRetriever):
    """For each query of ``hits``, its documents of ``docs`` (by id) with their scores, ranked."""

    hits: dict[str, list[tuple[str, float]]]
    docs: list[Document] = KB

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        docs = {d.id: d for d in self.docs}
        return [
            Document(id=i, page_content=docs[i].page_content, metadata={"score": score})
            for i, score in self.hits.get(query, [])
        ]


def _words(text: str) -> set[str]:
    return {w.strip("?.,").lower() for w in text.split()}


class EnsembleOf(BaseRetriever):
    """Runs each retriever as a child run and returns the first ``k`` distinct documents."""

    retrievers: list[BaseRetriever]
    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        fused: dict[str | None, Document] = {}
        for i, retriever in enumerate(self.retrievers):
            docs = retriever.invoke(query, config={"callbacks": run_manager.get_child(f"r{i}")})
            for doc in docs:
                fused.setdefault(doc.id, doc)
        return list(fused.values())[: self.k]


class ScriptedChatModel(FakeMessagesListChatModel):
    """LangChain's fake chat model, accepting ``bind_tools`` (its replies are scripted)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def tool_call(name: str, call_id: str = "call-1", **args: Any) -> AIMessage:
    """An AI message that calls tool ``name`` with ``args``."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def answer(text: str) -> AIMessage:
    return AIMessage(content=text)


def search_tool(retriever: BaseRetriever | None = None) -> BaseTool:
    """A ``@tool`` that searches the knowledge base with a retriever."""
    used = retriever or KeywordRetriever()

    @tool
    def search_kb(query: str) -> str:
        """Search the product knowledge base."""
        return "\n\n".join(d.page_content for d in used.invoke(query))

    return search_kb


def failing_tool() -> BaseTool:
    """A tool whose backend is down; LangChain turns its ToolException into an error message."""

    @tool
    def order_status(order_id: str) -> str:
        """Look up an order."""
        raise ToolException("order service unavailable")

    order_status.handle_tool_error = True
    return order_status


def retriever_agent(replies: Sequence[BaseMessage], **kwargs: Any) -> Any:
    """``create_agent`` with the search tool (and any ``tools`` given), scripted by ``replies``."""
    tools = kwargs.pop("tools", None) or [search_tool()]
    return create_agent(ScriptedChatModel(responses=list(replies)), tools=tools, **kwargs)


def vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(KB)
    return store


def artifact_tool(store: InMemoryVectorStore) -> BaseTool:
    """The RAG-agent tutorial's retrieval tool: text for the model, documents as the artifact."""

    @tool(response_format="content_and_artifact")
    def retrieve_context(query: str) -> tuple[str, list[Document]]:
        """Retrieve information to help answer a query."""
        docs = store.similarity_search(query, k=2)
        text = "\n\n".join(f"Source: {d.metadata}\nContent: {d.page_content}" for d in docs)
        return text, docs

    return retrieve_context


class RagState(TypedDict, total=False):
    question: str
    documents: list[Document]
    generation: str


def state_graph(retriever: BaseRetriever | None = None) -> Any:
    """A LangGraph RAG: retrieve, then generate; the state answers under ``generation``."""
    used = retriever or KeywordRetriever()

    def retrieve(state: RagState) -> RagState:
        return {"documents": used.invoke(state["question"])}

    def generate(state: RagState) -> RagState:
        first = state["documents"][0].page_content if state["documents"] else "nothing"
        return {"generation": f"From the manual: {first}"}

    return in_sequence(RagState, retrieve=retrieve, generate=generate)


def in_sequence(state: Any, **nodes: Any) -> Any:
    """A compiled ``StateGraph`` over ``state`` that runs ``nodes`` one after another."""
    graph = StateGraph(state)
    previous = START
    for name, node in nodes.items():
        graph.add_node(name, node)
        graph.add_edge(previous, name)
        previous = name
    graph.add_edge(previous, END)
    return graph.compile()
