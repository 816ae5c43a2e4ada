"""LlamaIndex dispatcher handlers that feed ragtrace; ``instrument()`` registers them.

Both handlers are thin: they hand every span and event to one ``LlamaIndexTracer``. They
override ``span_enter``/``span_exit``/``span_drop`` directly (as LlamaIndex's own
``NullSpanHandler`` does) instead of building LlamaIndex span objects, to keep per-span work
small. LlamaIndex swallows whatever a handler raises, so the tracer catches, logs and counts
its own errors in ``Ragtrace.diagnostics``.
"""

from __future__ import annotations

import inspect
from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import BaseModel

from ragtrace.integrations.llama_index._tracer import LlamaIndexTracer


class RagtraceSpanHandler(BaseSpanHandler[BaseSpan]):
    """Forwards LlamaIndex span enter/exit/drop to a ``LlamaIndexTracer``."""

    tracer: LlamaIndexTracer

    def __init__(self, tracer: LlamaIndexTracer) -> None:
        # BaseSpanHandler.__init__ takes only its own fields; initialise the model directly.
        BaseModel.__init__(self, tracer=tracer)
        self._lock = None

    @classmethod
    def class_name(cls) -> str:
        return "RagtraceSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.tracer.span_enter(id_, bound_args, instance, parent_id, tags)

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self.tracer.span_exit(id_, instance, result)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self.tracer.span_drop(id_, instance, err)

    def new_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused, as are the two below: the overrides above build no span objects."""

    prepare_to_exit_span = prepare_to_drop_span = new_span


class RagtraceEventHandler(BaseEventHandler):
    """Forwards LlamaIndex events to a ``LlamaIndexTracer``."""

    tracer: LlamaIndexTracer

    def __init__(self, tracer: LlamaIndexTracer) -> None:
        BaseModel.__init__(self, tracer=tracer)

    @classmethod
    def class_name(cls) -> str:
        return "RagtraceEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.tracer.handle(event)
