"""Documents as LangChain hands them over: a retriever's result and a tool's output.

``raw_chunks`` turns ``Document``s into the ``(text, id, score, metadata)`` tuples capture
takes; ``tool_result`` reads a tool's output (a ``ToolMessage`` with its content, error status
and artifact, or what the tool returned) and ``artifact_documents`` the documents a
``response_format="content_and_artifact"`` tool returned beside its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage

from ragtrace._capture import RawChunk
from ragtrace.integrations.langchain._messages import content_text


def tool_result(output: Any) -> tuple[Any, list[RawChunk] | None, str | None]:
    """(text, documents, error) of a tool's output: a ``ToolMessage`` (its content, the
    documents in its artifact, its error status) or whatever the tool returned."""
    if isinstance(output, ToolMessage):
        documents = artifact_documents(output.artifact)
        text = content_text(output)
        failure = (text or "error") if output.status == "error" else None
        return text, documents, failure
    if isinstance(output, tuple) and len(output) == 2:  # (content, artifact) called directly
        documents = artifact_documents(output[1])
        if documents is not None:
            return output[0], documents, None
    return output, artifact_documents(output), None


def artifact_documents(artifact: Any) -> list[RawChunk] | None:
    """The documents in a tool's artifact: a ``Document``, or a list of them (or of
    ``(Document, score)`` pairs, as ``similarity_search_with_score`` returns)."""
    if isinstance(artifact, Document):
        return raw_chunks([artifact])
    if not isinstance(artifact, list | tuple) or not artifact:
        return None
    chunks: list[RawChunk] = []
    for item in artifact:
        if isinstance(item, Document):
            chunks.extend(raw_chunks([item]))
        elif isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], Document):
            text, ident, _, metadata = raw_chunks([item[0]])[0]
            chunks.append((text, ident, item[1], metadata))
        else:
            return None
    return chunks


def raw_chunks(documents: Sequence[Any] | None) -> list[RawChunk]:
    chunks: list[RawChunk] = []
    for doc in documents or ():
        try:
            text = getattr(doc, "page_content", doc)
            chunks.append((text, getattr(doc, "id", None), None, getattr(doc, "metadata", None)))
        except Exception:
            chunks.append((f"<unreadable {type(doc).__name__}>", None, None, None))
    return chunks
