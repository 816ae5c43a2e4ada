"""The demo RAG app: a keyword retriever over the corpus and a deterministic extractive generator.

Everything is local and deterministic. The generator answers with the context sentence that
best matches the question; for a fixed share of questions it misbehaves the way real assistants
do (answers off-context, invents a fact, echoes an email address, or is rude), so the traces
show the variety evaluators are meant to catch.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

from ragtrace.demo.corpus import ARTICLES

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are can do does for how i in is it my of on or the to what when where which who "
    "why with you your".split()
)

QUESTIONS = [
    "How much energy does the Aurora H5 store?",
    "How long does installation take?",
    "Can I install the battery outdoors?",
    "How many units can I stack on one Gateway?",
    "Why is charging slow on cold mornings?",
    "What does the thermometer icon in the app mean?",
    "How long is the history kept in the app?",
    "What is Storm Watch?",
    "How do I set my electricity tariff?",
    "What is the default backup reserve?",
    "How long is the warranty?",
    "Where is the serial number?",
    "Is flood damage covered by the warranty?",
    "When is support available?",
    "What should I do if the status light is red?",
    "What does a blinking blue light mean?",
    "Will my devices restart during an outage?",
    "Can I change the export limit in the app?",
    "Does the battery work with my solar inverter?",
    "Can the solar panels charge the battery during an outage?",
    "Can the battery charge my electric car?",
    "Does the battery contain cobalt?",
    "Can I open the battery enclosure?",
    "How much does the H5 cost?",
    "Is financing available in Italy?",
    "What happens to the battery at the end of its life?",
    "How do I transfer the battery to a new owner?",
    "How loud is the battery?",
]


def _words(text: str) -> set[str]:
    """Content words, crudely stemmed to their first five letters (install ~ installation)."""
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP}


class KeywordRetriever(BaseRetriever):
    """Ranks the corpus by word overlap with the query; scores in metadata["score"]."""

    k: int = 4

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        wanted = _words(query)
        scored = []
        for doc_id, text in ARTICLES.items():
            words = _words(text)
            overlap = len(wanted & words) / (len(wanted) or 1)
            scored.append((round(overlap, 3), doc_id, text))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [
            Document(id=doc_id, page_content=text, metadata={"score": score, "source": "help"})
            for score, doc_id, text in scored[: self.k]
        ]


def _bucket(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 20


class ExtractiveChatModel(BaseChatModel):
    """Answers with the context sentence closest to the question; misbehaves on purpose."""

    @property
    def _llm_type(self) -> str:
        return "ragtrace-demo-extractive"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        context = str(messages[0].content).split("Context:", 1)[-1]
        question = str(messages[-1].content)
        answer = _answer(question, context)
        usage = {"input_tokens": len(context.split()), "output_tokens": len(answer.split())}
        message = AIMessage(
            content=answer,
            usage_metadata={**usage, "total_tokens": sum(usage.values())},
            response_metadata={"model_name": self._llm_type},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def _answer(question: str, context: str) -> str:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", context) if s.strip()]
    wanted = _words(question)
    best = max(sentences, key=lambda s: len(wanted & _words(s)), default="I don't know.")
    bucket = _bucket(question)
    if bucket == 0:
        return "The Aurora H5 also doubles as a Wi-Fi router with a range of 200 metres."
    if bucket == 1:
        return f"{best} It was designed on the Moon in 1969."
    if bucket == 2:
        return f"{best} For more, write to maria.keller@example.com."
    if bucket == 3:
        return f"That is a stupid question, read the manual. {best}"
    return best


PROMPT = ChatPromptTemplate.from_messages(
    [("system", "Answer using only the context.\n\nContext:\n{context}"), ("human", "{question}")]
)


def build_chain() -> Runnable[str, str]:
    """The demo chain: retrieve, format, prompt, generate, parse."""
    retriever = KeywordRetriever()

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    chain: Runnable[str, str] = (
        {"context": retriever | RunnableLambda(format_docs), "question": RunnablePassthrough()}
        | PROMPT
        | ExtractiveChatModel()
        | StrOutputParser()
    )
    return chain
