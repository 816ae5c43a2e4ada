"""The LlamaIndex adapter: how ``ragtrace eval`` and ``ragtrace.testing.ask`` call a query engine.

An app with a callable ``query`` (and no ``invoke``: the LangChain adapter is asked first) is a
LlamaIndex query engine, asked ``query(question)`` alone; no process-wide instrumentation is
installed, so the contexts are those of the returned ``Response``: an object with a
``response`` reads as ``{"response": response, "contexts": source_nodes}``. A context that is a
``NodeWithScore`` reads as its node's content, id (``node_id`` / ``id_``), metadata and the
score; a node without a score as its content, id and metadata. Nothing here imports LlamaIndex.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtrace._model import Conversation
from ragtrace.integrations._adapters import Called

_MISSING = object()


class LlamaIndexAdapter:
    """LlamaIndex's ``FrameworkAdapter`` (``ragtrace.integrations._adapters``)."""

    name = "llama_index"
    app_kind = "a LlamaIndex query engine (.query)"

    def matches(self, app: object) -> bool:
        return callable(getattr(app, "query", None))

    def caller(self, name: str, app: Any) -> QueryEngineCaller:
        return QueryEngineCaller(app)

    def reply(self, value: object) -> Mapping[str, object] | None:
        response = getattr(value, "response", _MISSING)  # a Response
        if response is _MISSING:
            return None
        return {"response": response, "contexts": getattr(value, "source_nodes", None)}

    def context(self, item: object) -> Mapping[str, object] | None:
        node = getattr(item, "node", None)
        if node is not None:  # a NodeWithScore
            return _node_context(node, getattr(item, "score", None))
        if hasattr(item, "get_content"):  # a node without a score
            return _node_context(item, None)
        return None

    def passage_text(self, item: object) -> object | None:
        node = getattr(item, "node", item)
        get_content = getattr(node, "get_content", None)
        return get_content() if callable(get_content) else None


ADAPTER = LlamaIndexAdapter()


class QueryEngineCaller:
    """A query engine, asked ``query(question)`` (earlier turns are not passed)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def call(self, query: str, conversation: Conversation | None = None) -> Called:
        return Called(self.engine.query(query))

    def close(self) -> None:
        return None


def _node_context(node: Any, score: object) -> Mapping[str, object]:
    text = node.get_content() if hasattr(node, "get_content") else node.text
    return {
        "text": text,
        "id": getattr(node, "node_id", None) or getattr(node, "id_", None),
        "score": score,
        "metadata": getattr(node, "metadata", None),
    }
