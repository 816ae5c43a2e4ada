"""Systems for the ``--system-callable`` tests (``tests.offline.systems_fixtures:NAME``).

``echo`` answers with the question itself (so a perturbation shows in the answer) and reports
its tokens and cost as OpenAI-style ``usage``, ``flaky``
raises on one question and returns junk on another, ``patchy`` raises on one question and
answers another with nothing, ``short_when_lower`` gives a short answer
to an all-lower-case question (so the ``casing`` perturbation flips the ``length`` verdict),
``llama_index_engine`` is a real LlamaIndex query engine over a tiny index with LlamaIndex's own
``MockLLM`` and ``MockEmbedding``.
"""

from __future__ import annotations

from typing import Any

FACTS = ("The lighthouse was built in 1850.", "The harbour opened in 1901.")
NOT_A_SYSTEM = 42


def echo(query: str) -> dict[str, Any]:
    return {
        "answer": f"You asked: {query}",
        "contexts": [{"text": FACTS[0], "id": "f0"}],
        "usage": {"prompt_tokens": len(query.split()), "completion_tokens": 7},
        "cost_usd": 0.0004,
    }


def make_echo() -> Any:
    """A zero-argument factory returning a system."""
    return echo


def flaky(query: str) -> Any:
    if "boom" in query:
        raise RuntimeError("backend exploded")
    if "junk" in query:
        return 42
    return f"A fine answer to {query}"


def patchy(query: str) -> str:
    if "boom" in query.lower():
        raise RuntimeError("backend exploded")
    if "blank" in query.lower():
        return "   "
    return f"A fine answer to {query}"


def short_when_lower(query: str) -> str:
    return "ok" if query.islower() else "a long enough answer to pass"


def llama_index_engine() -> Any:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM

    documents = [Document(text=text, id_=f"fact-{i}") for i, text in enumerate(FACTS)]
    index = VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))
    return index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2)


def broken_factory() -> Any:
    raise OSError("model file missing")
