"""The deterministic RAG apps that ``overhead.py`` traces: a LangChain chain, a LlamaIndex engine.

Both retrieve the same four ~500-character chunks (fixed ids and scores) for every query and
answer with the same fixed text from the framework's own fake model, so that every tracing
configuration sees exactly the same work. Frameworks are imported inside the builders only.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

_WORDS = (
    "refund policy invoice customer account billing period annual plan monthly "
    "subscription cancel renewal prorated credit card support ticket escalation "
    "enterprise seat license upgrade downgrade trial workspace owner admin export "
    "data retention region compliance audit log session token password reset"
).split()


def _text(seed: int, chars: int = 500) -> str:
    words: list[str] = []
    size = 0
    i = seed
    while size < chars:
        word = _WORDS[(i * 7 + seed * 13) % len(_WORDS)]
        words.append(word)
        size += len(word) + 1
        i += 1
    return (" ".join(words))[:chars].rstrip() + "."


@dataclass(frozen=True)
class BenchChunk:
    """One retrieved chunk; ids and scores are distinctive so the byte pass can find them."""

    id: str
    score: float
    text: str
    source: str


CHUNKS: tuple[BenchChunk, ...] = tuple(
    BenchChunk(
        id=f"kb-{4711 + n}-chunk",
        score=round(0.9137 - 0.0411 * n, 4),
        text=_text(n + 1),
        source=f"handbook/billing-{n + 1}.md",
    )
    for n in range(4)
)

ANSWER = (
    "You can cancel an annual plan at any time from the billing page; the unused months are "
    "refunded as a prorated credit to the card on file within five business days, and the "
    "workspace owner receives an invoice that shows the credit. Enterprise seats follow the "
    "contract terms instead, so open a support ticket and billing will confirm the amount."
)

QUERIES: tuple[str, ...] = tuple(
    f"How do I get a refund when I cancel my annual plan? (case {n})" for n in range(16)
)


def query(n: int) -> str:
    """The n-th benchmark query (a small fixed cycle)."""
    return QUERIES[n % len(QUERIES)]


def build_langchain_chain() -> Any:
    """A typical LCEL RAG chain: {context: retriever | format, question} | prompt | llm | parser.

    The retriever, the formatter and the model have native async paths; StrOutputParser keeps
    LangChain's own async path (one thread-pool hop per request), as in a real app.
    """
    from langchain_core.callbacks import (
        AsyncCallbackManagerForLLMRun,
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import BaseMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.outputs import ChatGenerationChunk, ChatResult
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

    class FixedRetriever(BaseRetriever):
        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [
                Document(
                    id=c.id,
                    page_content=c.text,
                    metadata={"score": c.score, "source": c.source},
                )
                for c in CHUNKS
            ]

        async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
        ) -> list[Document]:
            return self._get_relevant_documents(query, run_manager=run_manager.get_sync())

    class BenchChatModel(GenericFakeChatModel):
        """GenericFakeChatModel with native async paths (the stock one uses a thread pool)."""

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            return self._generate(messages, stop=stop, **kwargs)

        async def _astream(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> AsyncIterator[ChatGenerationChunk]:
            for chunk in self._stream(messages, stop=stop, **kwargs):
                if run_manager is not None:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    async def aformat_docs(docs: list[Document]) -> str:
        return format_docs(docs)

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer using only this context.\n\n{context}"),
            ("human", "{question}"),
        ]
    )
    llm = BenchChatModel(messages=itertools.cycle([ANSWER]))
    context = FixedRetriever() | RunnableLambda(format_docs, afunc=aformat_docs)
    setup = RunnableParallel(context=context, question=RunnablePassthrough())
    return setup | prompt | llm | StrOutputParser()


def build_llama_index_engine() -> Any:
    """A RetrieverQueryEngine over a fixed retriever, answered by a small CustomLLM."""
    from llama_index.core.llms import (
        CompletionResponse,
        CompletionResponseGen,
        CustomLLM,
        LLMMetadata,
    )
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class FixedRetriever(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(
                    node=TextNode(id_=c.id, text=c.text, metadata={"source": c.source}),
                    score=c.score,
                )
                for c in CHUNKS
            ]

    class FixedLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=8192, num_output=256, model_name="bench-fixed")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return CompletionResponse(text=ANSWER)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            def gen() -> CompletionResponseGen:
                text = ""
                for word in ANSWER.split(" "):
                    delta = word if not text else " " + word
                    text += delta
                    yield CompletionResponse(text=text, delta=delta)

            return gen()

    return RetrieverQueryEngine.from_args(FixedRetriever(), llm=FixedLLM())
