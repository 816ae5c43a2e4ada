"""LangChain integration: per-call ``RagtraceCallbackHandler`` or process-wide ``instrument()``.

Needs ``pip install 'ragtrace[langchain]'``. The names below load LangChain on first use, so
the adapter (``adapter.py``) can be loaded without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragtrace._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from ragtrace.integrations.langchain._handler import RagtraceCallbackHandler
    from ragtrace.integrations.langchain._instrumentation import (
        instrument,
        is_instrumented,
        uninstrument,
    )

__all__ = ["RagtraceCallbackHandler", "instrument", "is_instrumented", "uninstrument"]

_HOMES = {
    "RagtraceCallbackHandler": "ragtrace.integrations.langchain._handler",
    "instrument": "ragtrace.integrations.langchain._instrumentation",
    "is_instrumented": "ragtrace.integrations.langchain._instrumentation",
    "uninstrument": "ragtrace.integrations.langchain._instrumentation",
}

__getattr__ = lazy_exports(
    __name__,
    _HOMES,
    needs=(
        "langchain_core",
        "ragtrace.integrations.langchain needs LangChain: pip install 'ragtrace[langchain]'",
    ),
)
