"""The demo RAG app in LangChain: a BM25 retriever over the corpus and a seeded chat model.

``build_chain(seed)`` returns ``retrieve -> format -> prompt -> DemoChatModel -> parse``. The
model is a real ``BaseChatModel`` with ``_generate`` and ``_stream`` (streaming works and
callbacks fire per token); what it says comes from ``ragtrace.demo._generator``. The only demo
module that imports LangChain; everything is local and deterministic.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from pydantic import ConfigDict, PrivateAttr

from ragtrace.demo._corpus import ARTICLES
from ragtrace.demo._generator import Behaviour, Schedule, compose_answer
from ragtrace.demo._retrieval import Bm25Index

MODEL_NAME = "aurora-extractive-1"
_REMEMBERED = 4_096  # recent answers whose behaviour the demo's summary can look up
_INDEX = Bm25Index(ARTICLES)


class CorpusRetriever(BaseRetriever):
    """Top-``k`` corpus articles by BM25; ids on the documents, scores in metadata["score"].

    Like a vector store's similarity cut-off, articles below ``min_score`` are left out, but
    the best one is always returned, however weak, so the model always has something to read.
    """

    k: int = 4
    min_score: float = 0.2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [
            Document(
                id=article.id,
                page_content=article.text,
                metadata={
                    "score": score,
                    "title": article.title,
                    "section": article.section,
                    "updated": article.updated,
                    "source": "aurora-help-centre",
                },
            )
            for rank, (article, score) in enumerate(_INDEX.search(query, self.k))
            if rank == 0 or score >= self.min_score
        ]


class DemoChatModel(BaseChatModel):
    """Answers from the context in the system message; misbehaves by a seeded schedule.

    Attributes:
        seed: Seeds the schedule: the same seed and the same calls give the same answers.
        weights: How often each behaviour happens (default: the demo's ``WEIGHTS``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    seed: int = 0
    weights: dict[Behaviour, float] | None = None
    _schedule: Schedule = PrivateAttr()
    _behaviours: OrderedDict[str, Behaviour] = PrivateAttr()
    _lock: threading.Lock = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._schedule = Schedule(self.seed, self.weights)
        self._behaviours = OrderedDict()
        self._lock = threading.Lock()

    def behaviour_of(self, answer: str | None) -> Behaviour | None:
        """How the model behaved when it gave ``answer`` (None: not one of its recent answers,
        or a stream cut short)."""
        with self._lock:
            return self._behaviours.get(answer or "")

    def use_weights(self, weights: Mapping[Behaviour, float]) -> None:
        """Draw behaviours with ``weights`` from now on (the run's scenario changed); the
        seeded sequence goes on where it was."""
        self.weights = dict(weights)
        self._schedule.set_weights(self.weights)

    @property
    def _llm_type(self) -> str:
        return "ragtrace-demo"

    def _answer(self, messages: list[BaseMessage]) -> tuple[str, Behaviour, int]:
        context = str(messages[0].content).split("Context:", 1)[-1] if messages else ""
        question = str(messages[-1].content) if messages else ""
        behaviour, rng = self._schedule.draw()
        text = compose_answer(question, context, behaviour, rng)
        with self._lock:
            self._behaviours[text] = behaviour
            self._behaviours.move_to_end(text)
            while len(self._behaviours) > _REMEMBERED:
                self._behaviours.popitem(last=False)
        return text, behaviour, len(context.split())

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text, behaviour, n_in = self._answer(messages)
        message = AIMessage(
            content=text,
            usage_metadata=_usage(n_in, text),
            response_metadata={"model_name": MODEL_NAME, "demo_behaviour": behaviour},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        text, behaviour, n_in = self._answer(messages)
        pieces = text.split(" ")
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            token = piece if last else piece + " "
            message = AIMessageChunk(
                content=token,
                usage_metadata=_usage(n_in, text) if last else None,
                response_metadata=(
                    {"model_name": MODEL_NAME, "demo_behaviour": behaviour} if last else {}
                ),
            )
            chunk = ChatGenerationChunk(message=message)
            if run_manager is not None:
                run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk


def _usage(n_in: int, text: str) -> Any:
    n_out = len(text.split())
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer using only the context.\n\nContext:\n{context}"), ("human", "{question}")]
)


def format_docs(docs: list[Document]) -> str:
    """The retrieved articles as prompt context."""
    return "\n\n".join(d.page_content for d in docs)


def build_chain(
    seed: int = 0, k: int = 4, model: BaseChatModel | None = None
) -> Runnable[str, str]:
    """The demo chain: retrieve, format, prompt, generate, parse.

    Args:
        seed: Seeds the model's schedule of behaviours.
        k: Articles retrieved per question.
        model: The chat model (default: ``DemoChatModel(seed=seed)``).
    """
    chain: Runnable[str, str] = (
        {
            "context": CorpusRetriever(k=k) | RunnableLambda(format_docs),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | (model if model is not None else DemoChatModel(seed=seed))
        | StrOutputParser()
    )
    return chain
