"""LlamaIndex integration: every query, chat, retrieval and agent workflow run (one user turn)
becomes a RAG trace and a RagRecord.

Usage::

    import ragtrace
    from ragtrace.integrations.llama_index import instrument
    ragtrace.init(app="my-app")
    instrument()

Needs ``pip install 'ragtrace[llama-index]'``. The names below load LlamaIndex on first use,
so the adapter (``adapter.py``) can be loaded without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from ragtrace.integrations.llama_index._handlers import (
        RagtraceEventHandler,
        RagtraceSpanHandler,
    )
    from ragtrace.integrations.llama_index._instrumentation import (
        instrument,
        is_instrumented,
        uninstrument,
    )
    from ragtrace.integrations.llama_index._tracer import LlamaIndexTracer

__all__ = [
    "LlamaIndexTracer",
    "RagtraceEventHandler",
    "RagtraceSpanHandler",
    "instrument",
    "is_instrumented",
    "uninstrument",
]

_HOMES = {
    "LlamaIndexTracer": "ragtrace.integrations.llama_index._tracer",
    "RagtraceEventHandler": "ragtrace.integrations.llama_index._handlers",
    "RagtraceSpanHandler": "ragtrace.integrations.llama_index._handlers",
    "instrument": "ragtrace.integrations.llama_index._instrumentation",
    "is_instrumented": "ragtrace.integrations.llama_index._instrumentation",
    "uninstrument": "ragtrace.integrations.llama_index._instrumentation",
}

__getattr__ = lazy_exports(
    __name__,
    _HOMES,
    needs=(
        "llama_index.core",
        "ragtrace.integrations.llama_index needs LlamaIndex: pip install 'ragtrace[llama-index]'",
    ),
)
