"""LangChain integration: per-call ``RagtraceCallbackHandler`` or process-wide ``instrument()``.

Needs ``pip install 'ragtrace[langchain]'``. The names below load LangChain on first use, so
the adapter (``adapter.py``) can be loaded without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import langchain_core  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "ragtrace.integrations.langchain needs LangChain: pip install 'ragtrace[langchain]'"
        ) from exc
    return getattr(importlib.import_module(home), name)
