"""Spans to an exporter in batches, never waiting past a deadline, counting what was not sent.

ragtrace's own tracer provider (``otlp_endpoint`` set, no provider from the application) uses
``BoundedSpanProcessor`` instead of the SDK's ``BatchSpanProcessor``, whose ``force_flush``
ignores its timeout and whose shutdown waits for each batch's retries (about 10 s a batch with
an unreachable endpoint)::

    processor = BoundedSpanProcessor(OTLPSpanExporter(endpoint=url), metrics.count_dropped_spans)
    provider.add_span_processor(processor)
    ...
    processor.close(timeout_s=2.0)      # returns within 2 s, whatever the endpoint does

Every span that ends here is either handed to the exporter with success or counted once in
``on_drop(reason, n)``: ``queue_full`` (the buffer was full), ``export_failed`` (the exporter
gave up: connection refused, 4xx/5xx after its retries, a timeout), ``shutdown`` (still
buffered or in flight when the shutdown's time ran out, or ended after shutdown). A batch in
flight at the deadline is not waited for: its export carries on in a daemon thread, which
the process does not wait for at exit.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragtrace.pipeline.lifecycle import Deadline, run_bounded

DropCounter = Callable[[str, int], None]
"""``on_drop(reason, n)``: ``n`` spans were not sent, for ``reason``."""

MAX_QUEUE = 2048
MAX_BATCH = 512
DELAY_S = 1.0


class BoundedSpanProcessor(SpanProcessor):
    """Buffers ended spans and exports them in batches from one daemon thread.

    Args:
        exporter: Where batches go (an ``OTLPSpanExporter``, say).
        on_drop: Counts spans that were not sent, by reason.
        shutdown_timeout_s: The budget of a ``shutdown()`` called without one (by
            ``TracerProvider.shutdown``, say).
        max_queue: Most spans buffered; more are dropped (``queue_full``).
        max_batch: Most spans per export.
        delay_s: Longest a span waits before its batch is sent.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        on_drop: DropCounter,
        *,
        shutdown_timeout_s: float = 5.0,
        max_queue: int = MAX_QUEUE,
        max_batch: int = MAX_BATCH,
        delay_s: float = DELAY_S,
    ) -> None:
        self._exporter = exporter
        self._on_drop = on_drop
        self._shutdown_timeout_s = shutdown_timeout_s
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._delay_s = delay_s
        self._closed = False
        self._start()
        ref = weakref.ref(self)

        def restart_in_child() -> None:
            processor = ref()
            if processor is not None and not processor._closed:
                processor._start()

        os.register_at_fork(after_in_child=restart_in_child)

    def _start(self) -> None:
        """Fresh state and a worker thread (at creation, and in a forked child)."""
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[ReadableSpan] = deque()
        self._in_flight = 0
        self._flushing = 0  # callers waiting in force_flush: send at once
        self._batch_no = 0  # bumped when shutdown gives up on the batch in flight
        threading.Thread(target=self._run, name="ragtrace-span-export", daemon=True).start()

    # -- the application's threads -----------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Buffer a sampled span; never blocks, never raises."""
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        reason = None
        with self._cond:
            if self._closed:
                reason = "shutdown"
            elif len(self._queue) >= self._max_queue:
                reason = "queue_full"
            else:
                self._queue.append(span)
                if len(self._queue) >= self._max_batch:
                    self._cond.notify_all()
        if reason is not None:
            self._drop(reason, 1)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Send everything buffered; False if that did not finish within the timeout."""
        return self._flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        """``close()`` within the budget given at creation (``TracerProvider.shutdown``)."""
        self.close()

    def close(self, timeout_s: float | None = None) -> bool:
        """Refuse new spans, send what is buffered within ``timeout_s`` (default: the budget
        given at creation), count what is left as ``shutdown`` and stop. Idempotent.

        Returns:
            True if everything buffered was sent (or counted as failed) in time.
        """
        deadline = Deadline(self._shutdown_timeout_s if timeout_s is None else timeout_s)
        with self._cond:
            if self._closed:
                return True
            self._closed = True
        sent = self._flush(deadline.remaining())
        with self._cond:
            left = len(self._queue) + self._in_flight
            self._queue.clear()
            self._in_flight = 0
            if not sent:
                self._batch_no += 1  # the batch in flight is counted here, not by the worker
            self._cond.notify_all()
        self._drop("shutdown", left)
        # Interrupts the exporter's retry back-off; a request on the wire runs to its timeout.
        run_bounded(self._exporter.shutdown, deadline.remaining(), name="span-exporter-shutdown")
        return sent

    @property
    def buffered(self) -> int:
        """Spans buffered or in flight."""
        with self._cond:
            return len(self._queue) + self._in_flight

    # -- the worker thread ---------------------------------------------------------------------

    def _flush(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._queue or self._in_flight:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(remaining)
                return True
            finally:
                self._flushing -= 1

    def _run(self) -> None:
        cond = self._cond  # a forked child gets a new one, and a new thread
        while True:
            with cond:
                due = time.monotonic() + self._delay_s
                while not self._due(due):
                    if self._closed and not self._queue:
                        return
                    if not self._queue:
                        due = time.monotonic() + self._delay_s
                    cond.wait(max(0.0, due - time.monotonic()))
                n = min(self._max_batch, len(self._queue))
                batch = [self._queue.popleft() for _ in range(n)]
                self._in_flight = n
                batch_no = self._batch_no
            sent = self._export(batch)
            with cond:
                if batch_no != self._batch_no:  # shutdown gave up on it and counted it
                    return
                if not sent:  # counted before a flush waiting for it returns
                    self._drop("export_failed", n)
                self._in_flight = 0
                cond.notify_all()

    def _due(self, due: float) -> bool:
        """Whether to send a batch now (called holding the lock)."""
        if not self._queue:
            return False
        hurry = self._flushing or self._closed or len(self._queue) >= self._max_batch
        return bool(hurry) or time.monotonic() >= due

    def _export(self, batch: list[ReadableSpan]) -> bool:
        try:
            return self._exporter.export(batch) == SpanExportResult.SUCCESS
        except Exception:  # an exporter that raises has not sent the batch
            return False

    def _drop(self, reason: str, n: int) -> None:
        if n > 0:
            with contextlib.suppress(Exception):  # counting must never break the app's thread
                self._on_drop(reason, n)
