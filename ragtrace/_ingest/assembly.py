"""Trace assembly: spans buffered per trace until the trace is complete, in bounded memory.

A trace has no end signal in OTLP. ``TraceAssembler`` calls a trace complete once no span of it
has arrived for ``quiet_s`` and

- its root span has arrived (exporters send a span once it has ended): a span without a parent,
  or one whose parent the OTLP span flags mark remote (the app sits behind a gateway or another
  service that propagates ``traceparent``; its spans start there) (``complete``);
- or every span that arrived hangs under one single parent that never arrived: a remote parent
  whose exporter sets no flags, or the request's own span lost (``remote_parent``; the mapper
  tells the two apart);

or, whatever arrived, once the trace has been open for ``max_age_s`` (``max_age``)::

    assembler = TraceAssembler(AssemblyLimits(quiet_s=2.0), on_drop=count)
    if not assembler.add(spans, max_open=room).accepted:   # full: answer 429, the sender retries
        assembler.touch(trace_ids)                          # ... and its traces wait for it
    for trace in assembler.due():                           # from a ticker thread
        ...

Memory is bounded three ways: open traces (``max_open_traces``), spans per trace
(``max_spans_per_trace``; later ones are dropped, counted ``spans_per_trace``) and bytes
(``max_buffer_bytes``, counted by each span's encoded size). An export that would pass the
open-trace or byte bound (or a tighter ``max_open`` the caller gives, such as the room left
downstream) is refused whole (nothing of it is kept), so the sender's retry loses nothing. Spans
for a trace completed recently (``late_span``) and repeats of a span already
buffered (``duplicate_span``) are dropped and counted. Every drop goes to ``on_drop(reason, n)``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ragtrace._ingest.spans import IngestSpan

DROP_REASONS = ("spans_per_trace", "late_span", "duplicate_span")
COMPLETION_REASONS = ("complete", "remote_parent", "max_age", "shutdown")


@dataclass(frozen=True)
class AssemblyLimits:
    """How long a trace may stay open and how much may be buffered.

    Attributes:
        quiet_s: After the root span arrived, complete the trace once no span came for this long.
        max_age_s: Complete a trace this long after its first span, root or not.
        max_open_traces: Traces buffered at once.
        max_spans_per_trace: Spans kept per trace (later ones are dropped and counted).
        max_buffer_bytes: Encoded span bytes buffered at once.
        remember_completed: Trace ids remembered after completion, to count late spans.
    """

    quiet_s: float = 5.0
    max_age_s: float = 60.0
    max_open_traces: int = 10_000
    max_spans_per_trace: int = 1_000
    max_buffer_bytes: int = 256 * 1024 * 1024
    remember_completed: int = 100_000

    def __post_init__(self) -> None:
        for name in ("quiet_s", "max_age_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("max_open_traces", "max_spans_per_trace", "max_buffer_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.remember_completed < 0:
            raise ValueError("remember_completed must be >= 0")
        if self.max_age_s < self.quiet_s:
            raise ValueError(f"max_age_s ({self.max_age_s}) must be >= quiet_s ({self.quiet_s})")


@dataclass(frozen=True, slots=True)
class CompletedTrace:
    """A trace handed on for mapping.

    Attributes:
        trace_id: 32 hex digits.
        spans: Its spans, in arrival order.
        reason: ``complete`` (root and quiet period), ``remote_parent`` (every span under one
            parent that never arrived, and quiet period), ``max_age`` or ``shutdown``.
        has_root: Whether a root span arrived (no parent, or a remote one).
        last_span_at: ``clock()`` when its last span arrived (for the completion delay).
    """

    trace_id: str
    spans: list[IngestSpan]
    reason: str
    has_root: bool
    last_span_at: float


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``add`` did with one export's spans."""

    accepted: bool
    """False: the export was refused whole because the buffer is full (answer 429)."""
    kept: int = 0
    dropped: int = 0


@dataclass
class _OpenTrace:
    first_at: float
    last_at: float
    spans: dict[str, IngestSpan] = field(default_factory=dict)
    size: int = 0
    has_root: bool = False
    missing: dict[str, int] = field(default_factory=dict)
    """Parents not (yet) arrived, with how many spans wait for each."""

    def add(self, span: IngestSpan) -> None:
        self.spans[span.span_id] = span
        self.missing.pop(span.span_id, None)
        if span.is_root:
            self.has_root = True
        elif span.parent_span_id not in self.spans:
            parent = span.parent_span_id or ""
            self.missing[parent] = self.missing.get(parent, 0) + 1

    def reason_if_quiet(self) -> str | None:
        """Why the trace is complete once quiet, or None (wait for more, or for max age)."""
        if self.has_root:
            return "complete"
        if len(self.missing) == 1:
            return "remote_parent"
        return None


class TraceAssembler:
    """Buffers spans per trace and hands out complete traces. Thread-safe.

    Args:
        limits: Time and memory bounds.
        on_drop: Called with ``(reason, count)`` for every span dropped.
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        limits: AssemblyLimits | None = None,
        on_drop: Callable[[str, int], None] = lambda reason, n: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits or AssemblyLimits()
        self._on_drop = on_drop
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, _OpenTrace] = {}
        self._done: OrderedDict[str, None] = OrderedDict()
        self._bytes = 0

    @property
    def open_traces(self) -> int:
        return len(self._open)

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def add(self, spans: Iterable[IngestSpan], max_open: int | None = None) -> AddResult:
        """Buffer one export's spans, or refuse them all when the buffer has no room.

        Args:
            spans: The export's spans.
            max_open: A tighter bound on open traces than ``max_open_traces`` for this export
                (the records the evaluation queue can still take, say).
        """
        batch = list(spans)
        limits = self.limits
        bound = (
            limits.max_open_traces if max_open is None else min(max_open, limits.max_open_traces)
        )
        with self._lock:
            new_traces = {s.trace_id for s in batch if s.trace_id not in self._open}
            new_traces.difference_update(self._done)
            size = sum(s.size for s in batch)
            if (
                new_traces and len(self._open) + len(new_traces) > bound
            ) or self._bytes + size > limits.max_buffer_bytes:
                return AddResult(accepted=False)
            now = self._clock()
            drops: dict[str, int] = {}
            kept = 0
            for span in batch:
                reason = self._keep(span, now)
                if reason is None:
                    kept += 1
                else:
                    drops[reason] = drops.get(reason, 0) + 1
        for reason, count in drops.items():
            self._on_drop(reason, count)
        return AddResult(accepted=True, kept=kept, dropped=sum(drops.values()))

    def _keep(self, span: IngestSpan, now: float) -> str | None:
        if span.trace_id in self._done:
            return "late_span"
        trace = self._open.get(span.trace_id)
        if trace is None:
            trace = self._open[span.trace_id] = _OpenTrace(first_at=now, last_at=now)
        if span.span_id in trace.spans:
            return "duplicate_span"
        if len(trace.spans) >= self.limits.max_spans_per_trace:
            return "spans_per_trace"
        trace.add(span)
        trace.size += span.size
        trace.last_at = now
        self._bytes += span.size
        return None

    def touch(self, trace_ids: Iterable[str]) -> None:
        """Restart the quiet period of these open traces: spans of theirs were refused (429)
        and will come again, so silence now does not mean they are complete."""
        now = self._clock()
        with self._lock:
            for trace_id in trace_ids:
                trace = self._open.get(trace_id)
                if trace is not None:
                    trace.last_at = now

    def due(self) -> list[CompletedTrace]:
        """Traces complete now (quiet with a root or one missing parent, or max age), oldest
        first."""
        now = self._clock()
        quiet, max_age = self.limits.quiet_s, self.limits.max_age_s
        with self._lock:
            ready: list[tuple[str, str]] = []
            for trace_id, t in self._open.items():
                if now - t.first_at >= max_age:
                    ready.append((trace_id, "max_age"))
                elif now - t.last_at >= quiet:
                    reason = t.reason_if_quiet()
                    if reason is not None:
                        ready.append((trace_id, reason))
            return [self._close(trace_id, reason) for trace_id, reason in ready]

    def drain(self) -> list[CompletedTrace]:
        """Every open trace, complete or not (at shutdown)."""
        with self._lock:
            return [self._close(trace_id, "shutdown") for trace_id in list(self._open)]

    def _close(self, trace_id: str, reason: str) -> CompletedTrace:
        trace = self._open.pop(trace_id)
        self._bytes -= trace.size
        if self.limits.remember_completed:
            self._done[trace_id] = None
            while len(self._done) > self.limits.remember_completed:
                self._done.popitem(last=False)
        return CompletedTrace(
            trace_id, list(trace.spans.values()), reason, trace.has_root, trace.last_at
        )
