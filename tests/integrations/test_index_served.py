"""A corpus indexed with ``ragtrace index``'s function, then served: the chunks capture records
are the texts the store holds, so evaluation embeds only the question.

Real LangChain (a list retriever, the framework's fake chat model) and LlamaIndex (a list
retriever, a custom fake LLM), the packaged MiniLM, a real SQLite store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

import ragtrace
from ragtrace._backends import _loading, passage_store
from ragtrace._backends.embeddings import get_embedder
from ragtrace._backends.passage_store import PassageStore
from ragtrace._config import Config
from ragtrace._offline.index import index_passages
from ragtrace._pipeline import PipelineOptions
from ragtrace.evaluators import create
from ragtrace.evaluators._text import split_sentences
from ragtrace.integrations.langchain import RagtraceCallbackHandler
from ragtrace.integrations.llama_index import instrument as instrument_llama_index
from ragtrace.integrations.llama_index import uninstrument as uninstrument_llama_index

from . import li_app
from .lc_app import CORPUS, rag_chain

QUESTION = "When was the lighthouse on island 2 built?"


def served(provider: Any, store: Path | None, app: str = "langchain") -> int:
    """One request through the LangChain chain or the LlamaIndex query engine, scored by
    ``context_relevance``; how many texts the embedder computed."""
    _loading.forget()  # fresh embedder, empty cache
    registry = CollectorRegistry()
    rt = ragtrace.init(
        app="indexed",
        tracer_provider=provider,
        registry=registry,
        evaluators=[create("context_relevance")],
        pipeline_options=PipelineOptions(
            Config(batch_wait_s=0.01, passage_store=None if store is None else str(store))
        ),
    )
    try:
        if app == "langchain":
            rag_chain().invoke(QUESTION, config={"callbacks": [RagtraceCallbackHandler()]})
        else:
            instrument_llama_index(rt)
            try:
                li_app.query_engine().query(QUESTION)
            finally:
                uninstrument_llama_index()
        assert rt.flush(60)
        scored = registry.get_sample_value(
            "ragtrace_evaluation_duration_seconds_count", {"evaluator": "context_relevance"}
        )
        assert scored == 1.0  # the request was evaluated
    finally:
        rt.shutdown()
    assert passage_store.installed() is None  # shutdown takes back the store it installed
    return get_embedder().misses


def test_a_served_request_finds_its_indexed_chunks(tmp_path: Path, provider: Any) -> None:
    served_docs = CORPUS[:4]  # what the retriever returns
    computed_without = served(provider, None)
    chunk_sentences = {s for d in served_docs for s in split_sentences(d.page_content)}
    assert computed_without == 1 + len(chunk_sentences)  # the question and every chunk sentence
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    report = index_passages(CORPUS, store, [create("context_relevance")])
    store.close()
    assert report.passages == len(CORPUS)
    computed_with = served(provider, store.path)
    assert computed_with == 1  # only the question


def test_a_served_llama_index_query_finds_its_indexed_nodes(tmp_path: Path, provider: Any) -> None:
    served_nodes = li_app.CORPUS[:4]  # what the list retriever returns
    computed_without = served(provider, None, "llama_index")
    node_sentences = {s for n in served_nodes for s in split_sentences(n.get_content())}
    assert computed_without == 1 + len(node_sentences)
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    report = index_passages(li_app.CORPUS, store, [create("context_relevance")])
    store.close()
    assert report.passages == len(li_app.CORPUS)
    assert served(provider, store.path, "llama_index") == 1  # only the question
