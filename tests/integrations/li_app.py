"""A small deterministic LlamaIndex RAG app for tests: a list retriever and a fake LLM.

``FakeLLM`` is a ``CustomLLM`` that answers ``"Answer: <the query>"`` (taken from LlamaIndex's
own QA prompt), repeats the follow-up question when asked to condense one, streams word by
word, and reports a model name and token usage in its raw response, so every LlamaIndex code
path (complete, chat, stream, async) runs for real without a network.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.chat_engine import CondensePlusContextChatEngine, CondenseQuestionChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.indices import VectorStoreIndex
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

MODEL = "fake-rag-model-1"

CORPUS = [
    TextNode(
        id_=f"doc-{i}",
        text=f"Fact {i}: the lighthouse on island {i} was built in {1850 + i} "
        f"by the harbour board and painted red and white.",
        metadata={"source": f"island-{i}.md", "island": i},
    )
    for i in range(6)
]
SCORES = [round(0.9 - i * 0.1, 2) for i in range(len(CORPUS))]


def answer_for(question: str) -> str:
    """The answer ``FakeLLM`` gives to ``question`` in a QA prompt."""
    return f"Answer: {question}"


class ListRetriever(BaseRetriever):
    """Returns the first ``k`` nodes of ``nodes`` with fixed scores; raises when ``fail``."""

    def __init__(
        self,
        nodes: Sequence[TextNode] | None = None,
        k: int = 4,
        fail: bool = False,
        scores: Sequence[float | None] | None = None,
    ) -> None:
        super().__init__()
        self.nodes = list(CORPUS if nodes is None else nodes)
        self.k = k
        self.fail = fail
        self.scores = list(SCORES if scores is None else scores)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.fail:
            raise RuntimeError("vector store unreachable")
        out = []
        for i, node in enumerate(self.nodes[: self.k]):
            score = self.scores[i] if i < len(self.scores) else None
            out.append(NodeWithScore(node=node, score=score))
        return out

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        await asyncio.sleep(0)  # let concurrent requests interleave
        return self._retrieve(query_bundle)


def condensed(question: str) -> str:
    """The standalone question ``FakeLLM`` makes of a follow-up ``question``."""
    return f"{question} (standalone)"


def _reply(prompt: str) -> str:
    if "<Follow Up Message>" in prompt:  # CondenseQuestionChatEngine's condense prompt
        question = prompt.split("<Follow Up Message>", 1)[1]
        return condensed(question.split("<Standalone question>", 1)[0].strip())
    if "Follow Up Input:" in prompt:  # CondensePlusContextChatEngine's condense prompt
        return condensed(prompt.split("Follow Up Input:", 1)[1].split("\n", 1)[0].strip())
    if "Query: " in prompt:  # the QA prompt of the response synthesizer
        return answer_for(prompt.rsplit("Query: ", 1)[1].split("\n", 1)[0].strip())
    for marker in ("user: ", "USER: "):  # a chat prompt: answer the last user message
        if marker in prompt:
            return answer_for(prompt.rsplit(marker, 1)[1].split("\n", 1)[0].strip())
    return "I do not know."


class FakeLLM(CustomLLM):
    """Deterministic completion model; ``fail`` makes calls raise, ``delay_s`` slows streams."""

    fail: bool = False
    raw: Any = None
    delay_s: float = 0.0  # pause before each streamed token

    @classmethod
    def class_name(cls) -> str:
        return "fake_llm"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=MODEL, is_chat_model=False, context_window=8192)

    def _raw(self, prompt: str, text: str) -> Any:
        if self.raw is not None:
            return self.raw
        return {
            "model": MODEL + "-2024",
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())},
        }

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        if self.fail:
            raise ConnectionError("model endpoint refused the connection")
        text = _reply(prompt)
        return CompletionResponse(text=text, raw=self._raw(prompt, text))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        if self.fail:
            raise ConnectionError("model endpoint refused the connection")
        text = _reply(prompt)
        words = text.split(" ")

        def gen() -> CompletionResponseGen:
            so_far = ""
            for i, word in enumerate(words):
                time.sleep(self.delay_s)
                delta = word if i == 0 else " " + word
                so_far += delta
                raw = self._raw(prompt, text) if i == len(words) - 1 else None
                yield CompletionResponse(text=so_far, delta=delta, raw=raw)

        return gen()


def query_engine(
    retriever: BaseRetriever | None = None,
    llm: FakeLLM | None = None,
    streaming: bool = False,
) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(
        retriever or ListRetriever(), llm=llm or FakeLLM(), streaming=streaming
    )


def vector_query_engine(llm: FakeLLM | None = None, top_k: int = 3) -> Any:
    index = VectorStoreIndex(CORPUS, embed_model=MockEmbedding(embed_dim=8))
    return index.as_query_engine(llm=llm or FakeLLM(), similarity_top_k=top_k)


def condense_question_engine(llm: FakeLLM | None = None) -> CondenseQuestionChatEngine:
    llm = llm or FakeLLM()
    return CondenseQuestionChatEngine.from_defaults(query_engine=query_engine(llm=llm), llm=llm)


def condense_plus_context_engine(llm: FakeLLM | None = None) -> CondensePlusContextChatEngine:
    """The engine with an in-process chat buffer for memory.

    Its default memory keeps the chat in SQLite through aiosqlite, whose worker threads post
    results into event loops that LlamaIndex's sync paths have already closed; pytest reports
    those, at random by timing, as unhandled thread exceptions of whichever test runs next.
    What ragtrace captures does not depend on where the engine keeps its history.
    """
    return CondensePlusContextChatEngine.from_defaults(
        ListRetriever(), llm=llm or FakeLLM(), memory=ChatMemoryBuffer.from_defaults()
    )
