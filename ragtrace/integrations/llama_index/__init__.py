"""LlamaIndex integration: every query, chat, retrieval and agent workflow run (one user turn)
becomes a RAG trace and a RagRecord.

Usage::

    import ragtrace
    from ragtrace.integrations.llama_index import instrument
    ragtrace.init(app="my-app")
    instrument()

Needs ``pip install 'ragtrace[llama-index]'``.
"""

from __future__ import annotations

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ragtrace.integrations.llama_index needs LlamaIndex: pip install 'ragtrace[llama-index]'"
    ) from exc

from ragtrace.integrations.llama_index.handlers import RagtraceEventHandler, RagtraceSpanHandler
from ragtrace.integrations.llama_index.instrumentation import (
    instrument,
    is_instrumented,
    uninstrument,
)
from ragtrace.integrations.llama_index.tracer import LlamaIndexTracer

__all__ = [
    "LlamaIndexTracer",
    "RagtraceEventHandler",
    "RagtraceSpanHandler",
    "instrument",
    "is_instrumented",
    "uninstrument",
]
