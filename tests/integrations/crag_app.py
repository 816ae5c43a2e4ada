"""A corrective RAG (CRAG) graph in LangGraph, on LangChain's fake chat models.

The graph LangGraph's CRAG tutorial teaches: retrieve, grade each document with a model, and
when too few are relevant rewrite the question and retrieve again; then generate from the
documents the grader kept. Scripted here so that the turn retrieves four documents (one of
them twice), the grader drops two, and the answering call sees the other two:

- retrieval 0, the user's question: ``kb-aurora`` (kept), ``kb-install`` (dropped);
- retrieval 1, the rewritten question: ``kb-aurora-ext`` (kept), ``kb-aurora`` again (kept),
  ``kb-borealis`` (dropped);
- generate: a prompt with ``kb-aurora`` and ``kb-aurora-ext``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langgraph.graph import END, START, StateGraph

from tests.integrations.lc_agent_app import KB, ScoredRetriever

QUESTION = "How long is the Aurora warranty?"
REWRITTEN = "Aurora heat pump warranty extension"
ANSWER = "The Aurora has a 3-year warranty, extended to 5 years when registered."
EXTENSION = Document(
    id="kb-aurora-ext",
    page_content="Registering the Aurora within 30 days extends its warranty to 5 years.",
)
CORPUS = [*KB, EXTENSION]
HITS = {
    QUESTION: [("kb-aurora", 0.9), ("kb-install", 0.5)],
    REWRITTEN: [("kb-aurora-ext", 0.8), ("kb-aurora", 0.7), ("kb-borealis", 0.4)],
}
# The grader's verdicts, in the order it reads the documents.
VERDICTS = ["yes", "no", "yes", "yes", "no"]
USED = ["kb-aurora", "kb-aurora-ext"]
DROPPED = ["kb-install", "kb-borealis"]

GRADE = ChatPromptTemplate.from_messages(
    [
        ("system", "Is the document relevant to the question? Answer yes or no."),
        ("human", "Document:\n{document}\n\nQuestion: {question}"),
    ]
)
REWRITE = ChatPromptTemplate.from_messages(
    [("human", "Rewrite this question for a search engine: {question}")]
)
GENERATE = ChatPromptTemplate.from_messages(
    [("system", "Answer from the context only.\n\nContext:\n{context}"), ("human", "{question}")]
)


class CragState(TypedDict, total=False):
    question: str
    documents: list[Document]
    kept: list[Document]
    rewrites: int
    generation: str


def corrective_rag() -> Any:
    """The compiled graph; invoke it with ``{"question": ...}``, it answers under
    ``generation``."""
    retriever = ScoredRetriever(hits=HITS, docs=CORPUS)
    grader = (
        GRADE
        | FakeMessagesListChatModel(responses=[AIMessage(v) for v in VERDICTS])
        | StrOutputParser()
    )
    rewriter = REWRITE | GenericFakeChatModel(messages=iter([AIMessage(REWRITTEN)]))
    generator = (
        GENERATE | GenericFakeChatModel(messages=iter([AIMessage(ANSWER)])) | StrOutputParser()
    )

    def retrieve(state: CragState) -> CragState:
        return {"documents": retriever.invoke(state["question"])}

    def grade(state: CragState) -> CragState:
        kept = list(state.get("kept", []))
        for doc in state["documents"]:
            verdict = grader.invoke({"document": doc.page_content, "question": state["question"]})
            if verdict.strip() == "yes" and all(k.id != doc.id for k in kept):
                kept.append(doc)
        return {"kept": kept}

    def decide(state: CragState) -> str:
        return "generate" if len(state["kept"]) >= 2 or state.get("rewrites", 0) else "rewrite"

    def rewrite(state: CragState) -> CragState:
        better = rewriter.invoke({"question": state["question"]}).content
        return {"question": str(better), "rewrites": state.get("rewrites", 0) + 1}

    def generate(state: CragState) -> CragState:
        context = "\n\n".join(d.page_content for d in state["kept"])
        answer = generator.invoke({"context": context, "question": state["question"]})
        return {"generation": answer}

    graph = StateGraph(CragState)
    for name, node in (
        ("retrieve", retrieve),
        ("grade", grade),
        ("rewrite", rewrite),
        ("generate", generate),
    ):
        graph.add_node(name, node)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "grade")
    graph.add_conditional_edges("grade", decide, ["generate", "rewrite"])
    graph.add_edge("rewrite", "retrieve")
    graph.add_edge("generate", END)
    return graph.compile()
