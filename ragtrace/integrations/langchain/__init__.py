"""LangChain integration: per-call ``RagtraceCallbackHandler`` or process-wide ``instrument()``.

Needs ``pip install 'ragtrace[langchain]'``.
"""

from __future__ import annotations

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "ragtrace.integrations.langchain needs LangChain: pip install 'ragtrace[langchain]'"
    ) from exc

from ragtrace.integrations.langchain.handler import RagtraceCallbackHandler
from ragtrace.integrations.langchain.instrumentation import (
    instrument,
    is_instrumented,
    uninstrument,
)

__all__ = ["RagtraceCallbackHandler", "instrument", "is_instrumented", "uninstrument"]
