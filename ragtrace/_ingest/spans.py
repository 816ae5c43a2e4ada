"""Spans as the receiver decoded them, and one trace's spans as a tree the mappers walk.

``IngestSpan`` is convention-neutral: ids as lowercase hex, attribute values as plain Python
values (str, bool, int, float, lists of them; nested maps as dicts), events with their own
attributes, and the resource's attributes (``service.name`` names the application)::

    view = TraceView(spans)
    for top in view.roots(): ...
    view.children(span), view.ancestors(span), view.descendants(span)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_EMPTY: Mapping[str, Any] = MappingProxyType({})
SERVICE_NAME = "service.name"
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


@dataclass(frozen=True, slots=True)
class IngestEvent:
    """One span event (an exception, a vector store's ``db.query.result``)."""

    name: str
    time_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class IngestSpan:
    """One finished span from an OTLP export.

    Attributes:
        trace_id: 32 lowercase hex digits.
        span_id: 16 lowercase hex digits.
        parent_span_id: The parent's span id, or None for a root span.
        parent_remote: The OTLP span flags say the parent is remote (``traceparent`` came
            from another service, a gateway): the span is where this service's part of the
            trace begins, and the parent will never arrive here.
        name: The span's name.
        kind: OTLP span kind number (0 unspecified, 1 internal, 2 server, 3 client, ...).
        start_ns, end_ns: UTC nanoseconds since the epoch.
        attributes: The span's attributes.
        events: The span's events, in time order.
        status_code: 0 unset, 1 ok, 2 error.
        status_message: The status description.
        resource: The resource's attributes (``service.name``, ...).
        scope: The instrumentation scope's name.
        size: Bytes the span took on the wire (its share of the buffer's memory bound).
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    parent_remote: bool = False
    kind: int = 1
    start_ns: int = 0
    end_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    events: tuple[IngestEvent, ...] = ()
    status_code: int = STATUS_UNSET
    status_message: str = ""
    resource: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    scope: str = ""
    size: int = 0

    @property
    def is_root(self) -> bool:
        """No parent, or a remote one: this service's part of the trace starts here."""
        return self.parent_span_id is None or self.parent_remote

    @property
    def service_name(self) -> str | None:
        value = self.resource.get(SERVICE_NAME)
        return value if isinstance(value, str) and value else None

    def text(self, key: str) -> str | None:
        """The attribute ``key`` as text (None when absent or not a string)."""
        value = self.attributes.get(key)
        return value if isinstance(value, str) else None


class TraceView:
    """The spans of one trace, indexed by id and by parent, in start-time order.

    Args:
        spans: Every span buffered for the trace (any order; duplicates by id keep the last).
    """

    __slots__ = ("_by_id", "_children", "spans")

    def __init__(self, spans: Sequence[IngestSpan]) -> None:
        by_id = {s.span_id: s for s in spans}
        self.spans: tuple[IngestSpan, ...] = tuple(
            sorted(by_id.values(), key=lambda s: (s.start_ns, s.end_ns))
        )
        self._by_id = by_id
        children: dict[str | None, list[IngestSpan]] = {}
        for span in self.spans:
            children.setdefault(span.parent_span_id, []).append(span)
        self._children = children

    @property
    def trace_id(self) -> str:
        return self.spans[0].trace_id if self.spans else ""

    def get(self, span_id: str | None) -> IngestSpan | None:
        return self._by_id.get(span_id) if span_id else None

    def parent(self, span: IngestSpan) -> IngestSpan | None:
        return self.get(span.parent_span_id)

    def roots(self) -> list[IngestSpan]:
        """Spans whose parent is not in the trace (the true root, and orphans), oldest first."""
        return [s for s in self.spans if self.get(s.parent_span_id) is None]

    def children(self, span: IngestSpan) -> list[IngestSpan]:
        return list(self._children.get(span.span_id, ()))

    def ancestors(self, span: IngestSpan) -> Iterator[IngestSpan]:
        """Parent, grandparent, ... up to the highest one present (cycle-safe)."""
        seen = {span.span_id}
        current = self.parent(span)
        while current is not None and current.span_id not in seen:
            seen.add(current.span_id)
            yield current
            current = self.parent(current)

    def descendants(self, span: IngestSpan) -> Iterator[IngestSpan]:
        """Every span under ``span``, depth first, children in start-time order (cycle-safe)."""
        seen = {span.span_id}
        stack = list(reversed(self.children(span)))
        while stack:
            child = stack.pop()
            if child.span_id in seen:
                continue
            seen.add(child.span_id)
            yield child
            stack.extend(reversed(self.children(child)))
