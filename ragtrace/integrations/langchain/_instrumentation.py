"""Process-wide LangChain tracing through LangChain's own configure hook.

``instrument()`` registers a hook so that every callback manager LangChain configures (every
``invoke``, ``stream``, ``batch``, in any thread or task) gets a ``RagtraceCallbackHandler``,
unless the call already carries one. ``uninstrument()`` removes the hook. Both are idempotent.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any

from langchain_core.tracers import context as lc_context

from ragtrace._runtime import Ragtrace
from ragtrace.integrations.langchain._handler import RagtraceCallbackHandler

_lock = threading.Lock()
_hook: tuple[Any, ...] | None = None


def instrument(ragtrace: Ragtrace | None = None) -> RagtraceCallbackHandler:
    """Trace every LangChain run in this process; returns the handler in use.

    Args:
        ragtrace: The instance to report to; default: the current one at each request.
    """
    global _hook
    with _lock:
        uninstrument_locked()
        handler = RagtraceCallbackHandler(ragtrace)
        var: ContextVar[RagtraceCallbackHandler | None] = ContextVar(
            "ragtrace_langchain_handler", default=handler
        )
        lc_context.register_configure_hook(var, True, RagtraceCallbackHandler)
        _hook = lc_context._configure_hooks[-1]
        return handler


def uninstrument() -> None:
    """Stop tracing LangChain runs that do not carry a handler explicitly."""
    with _lock:
        uninstrument_locked()


def uninstrument_locked() -> None:
    global _hook
    if _hook is not None:
        hooks = lc_context._configure_hooks
        for i, hook in enumerate(hooks):
            if hook is _hook:
                del hooks[i]
                break
        _hook = None


def is_instrumented() -> bool:
    """Whether ``instrument()`` is in effect."""
    return _hook is not None
