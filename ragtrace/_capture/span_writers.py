"""Writing a finished request's span drafts to the tracer: through its API, or straight to the SDK.

When a request ends, its root draft and its steps' drafts (``drafts.SpanDraft``) are written in
one go: the root first (its ids go into the request's record), then each step as the child of
the root or of the step it ran in (``SpanDraft.parent``: an agent's tool holds its retriever),
parents before children, each with its own start and end time, then the root ends with the
inline evaluators' scores.

Two writers do that:

- ``TracerSpanWriter`` works with any ``Tracer``: it starts and ends real spans through the API
  (``start_span`` with the draft's attributes and start time, ``end`` with its end time). Span
  processors see each span start and end, both at the request's end.
- ``DirectSpanWriter`` is for an OpenTelemetry SDK tracer whose span processors do nothing when
  a span starts or is ending: the SDK's own batch or simple processor, subclasses that leave
  those hooks alone, or others named as quiet. It does what the SDK's ``start_span`` and
  ``end`` do for such processors (the tracer's sampler, id generator, limits, resource and
  scope; the ``ReadableSpan`` the processors receive at the end) without building a live span
  first, which is several times cheaper (docs/decisions/request-path-measurements.md). It falls back
  to ``TracerSpanWriter`` for every request written while any other processor is registered
  (one that may act when a span starts, such as a processor adding attributes from baggage);
  ``span_writer`` picks the API writer from the start for a tracer that lacks what the direct
  one reads. A tracer the SDK's configurator disabled records nothing, as with
  ``start_span``.

Either way the exported spans are the same: names, parents, kinds, times, attributes (cleaned
and limited as the SDK does), status and events (``tests/integrations/test_span_writers.py``).
What the direct writer skips is the SDK's per-span work for processors that ignore it: the
live span's lock, ``on_start`` and ``_on_ending`` calls, and cleaning each attribute value
that is already a plain ``str``, ``int``, ``float`` or ``bool`` within the span limits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, SpanProcessor
from opentelemetry.sdk.trace import Tracer as SdkTracer
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, StaticSampler
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, Tracer

from ragtrace._capture.drafts import SpanDraft

_INVALID = trace.INVALID_SPAN_CONTEXT
_PLAIN = frozenset((str, int, float, bool))
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED = TraceFlags(TraceFlags.DEFAULT)
_RANDOM_TRACE_ID: int = getattr(TraceFlags, "RANDOM_TRACE_ID", 0)
_QUIET_PROCESSORS: tuple[type, ...] = (BatchSpanProcessor, SimpleSpanProcessor)
_SAMPLED_DECISIONS = frozenset((Decision.RECORD_AND_SAMPLE,))
_RECORDED_DECISIONS = frozenset((Decision.RECORD_ONLY, Decision.RECORD_AND_SAMPLE))


def hex_ids(context: SpanContext) -> tuple[str, str]:
    """A span context's trace and span id as the hex strings records carry."""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def span_attribute_limit(tracer: object) -> int | None:
    """The most attributes a span of ``tracer`` keeps (an SDK tracer's ``SpanLimits``; the
    SDK's default is 128, ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` changes it), or None when it
    has no limit or is not an SDK tracer."""
    limits = getattr(tracer, "_span_limits", None)
    if not isinstance(limits, SpanLimits):
        return None
    most = limits.max_span_attributes
    return most if isinstance(most, int) and most >= 0 else None


class WrittenRoot(Protocol):
    """A request's root span, its steps written, waiting for its last attributes."""

    trace_id: str
    span_id: str

    def close(self, attributes: Mapping[str, Any], end_ns: int) -> None:
        """Add ``attributes`` and end the root at ``end_ns``."""


class SpanWriter(Protocol):
    """Writes one finished request's drafts."""

    def open(self, root: SpanDraft, parent: Context, steps: Sequence[SpanDraft]) -> WrittenRoot:
        """Write ``steps`` as children of ``root`` (under ``parent``) and return the root."""


def span_writer(
    tracer: Tracer, *, direct: bool = True, quiet_processors: Sequence[type] = ()
) -> SpanWriter:
    """The writer for ``tracer``: direct for an SDK tracer when ``direct``, else through the API.

    Args:
        tracer: Where the spans go.
        direct: Whether to write straight to the SDK's span processors when that is safe.
        quiet_processors: Span processor classes, beside the SDK's batch and simple ones, whose
            ``on_start`` does nothing. A processor counts as quiet when its class's
            ``on_start`` and ``_on_ending`` are those of a quiet class or of the SDK's
            ``SpanProcessor`` base (both do nothing), so a subclass that only changes
            ``on_end`` or ``__init__`` (an exporter's own batch processor, say) is quiet too.
    """
    api = TracerSpanWriter(tracer)
    if direct and isinstance(tracer, SdkTracer) and DirectSpanWriter.supports(tracer):
        return DirectSpanWriter(tracer, api, (*_QUIET_PROCESSORS, *quiet_processors))
    return api


# -- through the API ------------------------------------------------------------------------------


class _LiveRoot:
    __slots__ = ("_span", "span_id", "trace_id")

    def __init__(self, span: trace.Span) -> None:
        self._span = span
        self.trace_id, self.span_id = hex_ids(span.get_span_context())

    def close(self, attributes: Mapping[str, Any], end_ns: int) -> None:
        if attributes:
            self._span.set_attributes(attributes)
        self._span.end(end_time=end_ns)


class TracerSpanWriter:
    """Starts and ends real spans through the ``Tracer`` API when the request ends."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    def open(self, root: SpanDraft, parent: Context, steps: Sequence[SpanDraft]) -> WrittenRoot:
        span = self._start(root, parent)
        try:
            context = trace.set_span_in_context(span, parent)
            contexts: dict[int, Context] = {}
            nested = any_nested(steps)
            for step in parents_first(steps):
                step_parent = context
                if step.parent is not None:
                    step_parent = contexts.get(id(step.parent), context)
                child = self._start(step, step_parent)
                if nested:
                    contexts[id(step)] = trace.set_span_in_context(child, parent)
                child.end(end_time=step.end_ns)
        except BaseException:
            span.end()  # never leave a started root behind in the processors
            raise
        return _LiveRoot(span)

    def _start(self, draft: SpanDraft, parent: Context) -> trace.Span:
        span = self._tracer.start_span(
            draft.name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=draft.attributes,
            start_time=draft.start_ns,
        )
        for name, attributes, timestamp in draft.events:
            span.add_event(name, attributes, timestamp)
        span.set_status(draft.status)
        return span


# -- straight to the SDK's span processors -------------------------------------------------------


class _DirectRoot:
    __slots__ = ("_context", "_draft", "_end_metrics", "_parent", "_writer", "span_id", "trace_id")

    def __init__(
        self,
        writer: DirectSpanWriter,
        draft: SpanDraft,
        context: SpanContext,
        parent: SpanContext | None,
        end_metrics: Callable[[], None],
    ) -> None:
        self._writer = writer
        self._draft = draft
        self._context = context
        self._parent = parent
        self._end_metrics = end_metrics
        self.trace_id, self.span_id = hex_ids(context)

    def close(self, attributes: Mapping[str, Any], end_ns: int) -> None:
        draft = self._draft
        draft.attributes.update(attributes)
        draft.end(end_ns)
        self._writer.end(draft, self._context, self._parent, self._end_metrics)


class _Unrecorded:
    """A root nothing will be handed on for (not recorded, or not written): its ids only."""

    __slots__ = ("span_id", "trace_id")

    def __init__(self, context: SpanContext) -> None:
        self.trace_id, self.span_id = hex_ids(context)

    def close(self, attributes: Mapping[str, Any], end_ns: int) -> None:
        """Nothing to end."""


NOT_WRITTEN: WrittenRoot = _Unrecorded(_INVALID)
"""The root of a request whose spans could not be written: zero ids, nothing to close."""


class DirectSpanWriter:
    """Hands each finished span to the SDK tracer's span processors as a ``ReadableSpan``.

    Args:
        tracer: An SDK tracer (``DirectSpanWriter.supports(tracer)``).
        fallback: The writer used while a span processor that is not quiet is registered.
        quiet: Span processor classes whose ``on_start`` and ``_on_ending`` do nothing.
    """

    __slots__ = ("_checked", "_fallback", "_quiet_endings", "_quiet_starts", "_tracer")

    _NEEDS = (
        "sampler",
        "id_generator",
        "resource",
        "span_processor",
        "instrumentation_info",
        "_span_limits",
        "_instrumentation_scope",
    )

    def __init__(self, tracer: SdkTracer, fallback: SpanWriter, quiet: Sequence[type]) -> None:
        self._tracer = tracer
        self._fallback = fallback
        classes = (SpanProcessor, *quiet)
        self._quiet_starts = frozenset(getattr(c, "on_start", None) for c in classes)
        self._quiet_endings = frozenset(getattr(c, "_on_ending", None) for c in classes)
        self._checked: tuple[object, bool] = (None, False)

    @classmethod
    def supports(cls, tracer: SdkTracer) -> bool:
        """Whether ``tracer`` has what this writer reads (an SDK tracer of a known shape)."""
        return all(hasattr(tracer, name) for name in cls._NEEDS) and isinstance(
            getattr(tracer, "_span_limits", None), SpanLimits
        )

    def open(self, root: SpanDraft, parent: Context, steps: Sequence[SpanDraft]) -> WrittenRoot:
        if not self._processors_quiet():
            return self._fallback.open(root, parent, steps)
        tracer = self._tracer
        parent_context: SpanContext | None = trace.get_current_span(parent).get_span_context()
        enabled = getattr(tracer, "_is_enabled", None)
        if enabled is not None and not enabled():
            return _Unrecorded(parent_context or _INVALID)
        if parent_context is None or not parent_context.is_valid:
            parent_context = None
            trace_id = tracer.id_generator.generate_trace_id()
            random_id = bool(_RANDOM_TRACE_ID) and tracer.id_generator.is_trace_id_random()
        else:
            trace_id = parent_context.trace_id
            random_id = bool(parent_context.trace_flags & _RANDOM_TRACE_ID)
        context, end_metrics = self._sample(root, parent, parent_context, trace_id, random_id)
        child_parent = trace.set_span_in_context(NonRecordingSpan(context), parent)
        if not any_nested(steps):
            for step in steps:
                child, child_end = self._sample(step, child_parent, context, trace_id, random_id)
                if child_end is not None:
                    self.end(step, child, context, child_end)
        else:
            self._write_nested(steps, parent, context, trace_id, random_id)
        if end_metrics is None:
            return _Unrecorded(context)
        return _DirectRoot(self, root, context, parent_context, end_metrics)

    def _write_nested(
        self,
        steps: Sequence[SpanDraft],
        parent: Context,
        root: SpanContext,
        trace_id: int,
        random_id: bool,
    ) -> None:
        """Write ``steps`` where some run inside others: each under its own parent's span."""
        contexts: dict[int, SpanContext] = {}
        for step in parents_first(steps):
            above = root
            if step.parent is not None:
                above = contexts.get(id(step.parent), root)
            child_parent = trace.set_span_in_context(NonRecordingSpan(above), parent)
            child, child_end = self._sample(step, child_parent, above, trace_id, random_id)
            contexts[id(step)] = child
            if child_end is not None:
                self.end(step, child, above, child_end)

    def _processors_quiet(self) -> bool:
        """Whether every registered processor is a quiet one (the SDK replaces its tuple of
        processors when one is added, so the answer is kept per tuple, in one attribute)."""
        processors = getattr(self._tracer.span_processor, "_span_processors", None)
        checked, quiet = self._checked
        if processors is not checked:
            quiet = isinstance(processors, tuple) and all(map(self._quiet, processors))
            self._checked = (processors, quiet)
        return quiet

    def _quiet(self, processor: object) -> bool:
        kind = type(processor)
        return (
            getattr(kind, "on_start", None) in self._quiet_starts
            and getattr(kind, "_on_ending", None) in self._quiet_endings
        )

    def _sample(
        self,
        draft: SpanDraft,
        parent: Context,
        parent_context: SpanContext | None,
        trace_id: int,
        random_id: bool,
    ) -> tuple[SpanContext, Callable[[], None] | None]:
        """The span's context, and its end-metrics hook if it is recorded (else None).

        The sampler may replace the attributes (``draft.attributes`` becomes its copy).
        """
        tracer = self._tracer
        decision = static_decision(tracer.sampler, parent_context)
        if decision is None:
            result = tracer.sampler.should_sample(
                parent, trace_id, draft.name, SpanKind.INTERNAL, draft.attributes, ()
            )
            decision, trace_state = result.decision, result.trace_state
            if decision in _RECORDED_DECISIONS:
                draft.attributes = dict(result.attributes)
        else:  # what the sampler would answer: the same attributes, the parent's trace state
            trace_state = None if parent_context is None else parent_context.trace_state
        flags = _SAMPLED if decision in _SAMPLED_DECISIONS else _NOT_SAMPLED
        if random_id:
            flags = TraceFlags(flags | _RANDOM_TRACE_ID)
        context = SpanContext(
            trace_id,
            tracer.id_generator.generate_span_id(),
            is_remote=False,
            trace_flags=flags,
            trace_state=trace_state,
        )
        metrics = getattr(tracer, "_tracer_metrics", None)
        end_metrics = metrics.start_span(parent_context, decision) if metrics is not None else _noop
        if decision not in _RECORDED_DECISIONS:
            return context, None
        return context, end_metrics or _noop

    def end(
        self,
        draft: SpanDraft,
        context: SpanContext,
        parent: SpanContext | None,
        end_metrics: Callable[[], None],
    ) -> None:
        """Hand ``draft``, recorded as ``context``, to the span processors."""
        tracer = self._tracer
        limits: SpanLimits = tracer._span_limits
        end_metrics()
        tracer.span_processor.on_end(
            ReadableSpan(
                name=draft.name,
                context=context,
                parent=parent,
                resource=tracer.resource,
                attributes=_span_attributes(draft.attributes, limits),
                events=_events(draft.events, limits),
                kind=SpanKind.INTERNAL,
                instrumentation_info=tracer.instrumentation_info,
                status=draft.status,
                start_time=draft.start_ns,
                end_time=draft.end_ns,
                instrumentation_scope=tracer._instrumentation_scope,
            )
        )


def any_nested(steps: Sequence[SpanDraft]) -> bool:
    """Whether any of a request's steps runs inside another step (not just under the root)."""
    return any(step.parent is not None for step in steps)


def parents_first(steps: Sequence[SpanDraft]) -> Sequence[SpanDraft]:
    """``steps`` ordered so that every step comes after the step it runs in (steps are kept
    in the order they ended, children before their parents); unchanged when none nests."""
    if not any_nested(steps):
        return steps
    ordered: list[SpanDraft] = []
    placed: set[int] = set()
    present = {id(step) for step in steps}

    def place(step: SpanDraft) -> None:
        if id(step) in placed:
            return
        if step.parent is not None and id(step.parent) in present:
            place(step.parent)
        placed.add(id(step))
        ordered.append(step)

    for step in steps:
        place(step)
    return ordered


def static_decision(sampler: object, parent: SpanContext | None) -> Decision | None:
    """The decision of an SDK sampler that decides without looking at the span, for a span
    whose parent is ``parent`` (None: a root): a ``StaticSampler`` (``ALWAYS_ON``,
    ``ALWAYS_OFF``), or a ``ParentBased`` whose delegate for that parent is one (the default
    sampler's children). None: the sampler must be asked. Such a sampler returns the span's
    own attributes and the parent's trace state, so asking it changes nothing."""
    if type(sampler) is ParentBased:
        if parent is None:
            name = "_root"
        elif parent.is_remote:
            name = (
                "_remote_parent_sampled"
                if parent.trace_flags.sampled
                else "_remote_parent_not_sampled"
            )
        else:
            name = (
                "_local_parent_sampled"
                if parent.trace_flags.sampled
                else "_local_parent_not_sampled"
            )
        sampler = getattr(sampler, name, None)
    if type(sampler) is StaticSampler:
        decision = getattr(sampler, "_decision", None)
        return decision if isinstance(decision, Decision) else None
    return None


def _span_attributes(attributes: dict[str, Any], limits: SpanLimits) -> Mapping[str, Any]:
    """The attributes as the SDK would keep them: as they are when every value is a plain
    str, int, float or bool within the limits, else cleaned and limited by the SDK's own
    ``BoundedAttributes``."""
    most = limits.max_span_attributes
    if (
        limits.max_span_attribute_length is None
        and (most is None or len(attributes) <= most)
        and _PLAIN.issuperset(map(type, attributes.values()))
    ):
        return attributes
    return BoundedAttributes(
        most, attributes, immutable=False, max_value_len=limits.max_span_attribute_length
    )


def _events(events: list[tuple[str, dict[str, Any], int]], limits: SpanLimits) -> Sequence[Event]:
    if not events:
        return ()
    return BoundedList.from_seq(
        limits.max_events,
        [
            Event(
                name,
                BoundedAttributes(
                    limits.max_event_attributes,
                    attributes,
                    max_value_len=limits.max_attribute_length,
                    immutable=True,
                ),
                timestamp,
            )
            for name, attributes, timestamp in events
        ],
    )


def _noop() -> None:
    """No end metrics to record."""
