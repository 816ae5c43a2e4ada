"""Registering ragtrace's handlers on LlamaIndex's root dispatcher, once.

``instrument()`` adds one span handler and one event handler to
``llama_index.core.instrumentation.get_dispatcher()`` (the root, which every LlamaIndex module's
dispatcher propagates to); ``uninstrument()`` removes them. Both are idempotent.
"""

from __future__ import annotations

import threading

# Re-exported without __all__ (from llama-index-instrumentation since core 0.12.4x).
from llama_index.core.instrumentation import (  # type: ignore[attr-defined, unused-ignore]
    get_dispatcher,
)

from ragtrace._runtime import Ragtrace
from ragtrace.integrations.llama_index._handlers import RagtraceEventHandler, RagtraceSpanHandler
from ragtrace.integrations.llama_index._tracer import LlamaIndexTracer

_lock = threading.Lock()
_tracer: LlamaIndexTracer | None = None


def instrument(ragtrace: Ragtrace | None = None) -> LlamaIndexTracer:
    """Trace every LlamaIndex query, chat and retrieval in this process.

    Calling it again with the same ``ragtrace`` changes nothing; with another one, the handlers
    are replaced (requests in flight are left to finish as ``incomplete``).

    Args:
        ragtrace: The instance to report to; default: the current one at each request.

    Returns:
        The tracer behind the registered handlers.
    """
    global _tracer
    with _lock:
        if _tracer is not None and _tracer.ragtrace is ragtrace and _registered(_tracer):
            return _tracer
        _remove_locked()
        tracer = LlamaIndexTracer(ragtrace)
        dispatcher = get_dispatcher()
        dispatcher.add_span_handler(RagtraceSpanHandler(tracer))
        dispatcher.add_event_handler(RagtraceEventHandler(tracer))
        _tracer = tracer
        return tracer


def uninstrument() -> None:
    """Remove ragtrace's handlers from LlamaIndex's root dispatcher."""
    with _lock:
        _remove_locked()


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    tracer = _tracer
    return tracer is not None and _registered(tracer)


def _registered(tracer: LlamaIndexTracer) -> bool:
    return any(
        isinstance(h, RagtraceSpanHandler) and h.tracer is tracer
        for h in get_dispatcher().span_handlers
    )


def _remove_locked() -> None:
    global _tracer
    dispatcher = get_dispatcher()
    # New lists, not in-place removal: a dispatch iterating the old list in another thread
    # finishes undisturbed.
    dispatcher.span_handlers = [
        h for h in dispatcher.span_handlers if not isinstance(h, RagtraceSpanHandler)
    ]
    dispatcher.event_handlers = [
        h for h in dispatcher.event_handlers if not isinstance(h, RagtraceEventHandler)
    ]
    _tracer = None
