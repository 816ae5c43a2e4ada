"""A small deterministic LangChain RAG app for tests: a keyword retriever and a fake chat model."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

CORPUS = [
    Document(
        id=f"doc-{i}",
        page_content=f"Fact {i}: the lighthouse on island {i} was built in {1850 + i} "
        f"by the harbour board and painted red and white. " * 3,
        metadata={"score": round(0.9 - i * 0.1, 2), "source": f"island-{i}.md"},
    )
    for i in range(6)
]


class ListRetriever(BaseRetriever):
    """Returns the first ``k`` documents of ``docs``; raises when ``fail`` is set."""

    docs: list[Document] = CORPUS
    k: int = 4
    fail: bool = False

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.fail:
            raise RuntimeError("vector store unreachable")
        return list(self.docs[: self.k])


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer from the context only.\n\nContext:\n{context}"), ("human", "{question}")]
)


def fake_llm(answer: str = "The lighthouse was built in 1850.", repeat: int = 1000) -> Any:
    return GenericFakeChatModel(messages=iter([AIMessage(content=answer)] * repeat))


def rag_chain(retriever: BaseRetriever | None = None, llm: Any = None) -> Runnable[Any, Any]:
    retriever = retriever or ListRetriever()
    return (
        {"context": retriever | RunnableLambda(format_docs), "question": RunnablePassthrough()}
        | PROMPT
        | (llm or fake_llm())
        | StrOutputParser()
    )
