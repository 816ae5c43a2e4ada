"""Items to an exporter in batches, never waiting past a deadline, counting what was not sent.

``BoundedBatches`` is the core of ragtrace's own span and log processors (``span_export``,
``logs``): the SDK's batch processors' ``force_flush`` ignores its timeout and their
shutdown waits for each batch's retries (about 10 s a batch with an unreachable endpoint)::

    batches = BoundedBatches(export=send, shutdown_exporter=exporter.shutdown, on_drop=count)
    batches.add(item)                   # the application's thread: never blocks, never raises
    ...
    batches.close(timeout_s=2.0)        # returns within 2 s, whatever the endpoint does

Every item added is either exported with success or counted once in ``on_drop(reason, n)``:
``queue_full`` (the buffer was full), ``export_failed`` (the exporter gave up: connection
refused, 4xx/5xx after its retries, a timeout), ``shutdown`` (still buffered or in flight when
the shutdown's time ran out, or added after shutdown). A batch in flight at the deadline is not
waited for: its export carries on in a daemon thread, which the process does not wait for at
exit. After ``os.fork`` the child starts with an empty buffer and a thread of its own.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ragtrace._pipeline.lifecycle import Deadline, run_bounded

DropCounter = Callable[[str, int], None]
"""``on_drop(reason, n)``: ``n`` items were not sent, for ``reason``."""

MAX_QUEUE = 2048
MAX_BATCH = 512
DELAY_S = 1.0

T = TypeVar("T")


class BoundedBatches(Generic[T]):
    """Buffers items and exports them in batches from one daemon thread.

    Args:
        export: Sends one batch; True when it was sent (an exception counts as not sent).
        shutdown_exporter: Called once at ``close`` (interrupts the exporter's retries).
        on_drop: Counts items that were not sent, by reason.
        shutdown_timeout_s: The budget of a ``close()`` called without one.
        max_queue: Most items buffered; more are dropped (``queue_full``).
        max_batch: Most items per export.
        delay_s: Longest an item waits before its batch is sent.
        name: The export thread's name.
    """

    def __init__(
        self,
        export: Callable[[list[T]], bool],
        shutdown_exporter: Callable[[], object],
        on_drop: DropCounter,
        *,
        shutdown_timeout_s: float = 5.0,
        max_queue: int = MAX_QUEUE,
        max_batch: int = MAX_BATCH,
        delay_s: float = DELAY_S,
        name: str = "ragtrace-export",
    ) -> None:
        self._export_batch = export
        self._shutdown_exporter = shutdown_exporter
        self._on_drop = on_drop
        self.shutdown_timeout_s = shutdown_timeout_s
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._delay_s = delay_s
        self._name = name
        self._closed = False
        self._start()
        ref = weakref.ref(self)

        def restart_in_child() -> None:
            batches = ref()
            if batches is not None and not batches._closed:
                batches._start()

        os.register_at_fork(after_in_child=restart_in_child)

    def _start(self) -> None:
        """Fresh state and a worker thread (at creation, and in a forked child)."""
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[T] = deque()
        self._in_flight = 0
        self._flushing = 0  # callers waiting in flush: send at once
        self._batch_no = 0  # bumped when close gives up on the batch in flight
        self._added = 0  # items ever buffered, in order
        self._settled = 0  # of those, how many were exported or counted as not sent
        self._failed = 0  # items ever counted as not sent (``delivery_mark``)
        self._failed_lock = threading.Lock()
        threading.Thread(target=self._run, name=self._name, daemon=True).start()

    # -- the application's threads -----------------------------------------------------------

    def add(self, item: T) -> None:
        """Buffer ``item``; never blocks, never raises."""
        reason = None
        with self._cond:
            if self._closed:
                reason = "shutdown"
            elif len(self._queue) >= self._max_queue:
                reason = "queue_full"
            else:
                self._queue.append(item)
                self._added += 1
                if len(self._queue) >= self._max_batch:
                    self._cond.notify_all()
        if reason is not None:
            self._drop(reason, 1)

    def close(self, timeout_s: float | None = None) -> bool:
        """Refuse new items, send what is buffered within ``timeout_s`` (default: the budget
        given at creation), count what is left as ``shutdown`` and stop. Idempotent.

        Returns:
            True if everything buffered was sent (or counted as failed) in time.
        """
        deadline = Deadline(self.shutdown_timeout_s if timeout_s is None else timeout_s)
        with self._cond:
            if self._closed:
                return True
            self._closed = True
        sent = self.flush(deadline.remaining())
        with self._cond:
            left = len(self._queue) + self._in_flight
            self._queue.clear()
            self._in_flight = 0
            self._settled = self._added
            if not sent:
                self._batch_no += 1  # the batch in flight is counted here, not by the worker
            self._cond.notify_all()
        self._drop("shutdown", left)
        # Interrupts the exporter's retry back-off; a request on the wire runs to its timeout.
        run_bounded(self._shutdown_exporter, deadline.remaining(), name=f"{self._name}-shutdown")
        return sent

    @property
    def buffered(self) -> int:
        """Items buffered or in flight."""
        with self._cond:
            return len(self._queue) + self._in_flight

    def flush(self, timeout_s: float) -> bool:
        """Send everything buffered; False if that did not finish within ``timeout_s``."""
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

    def delivery_mark(self) -> int:
        """Items counted as not sent so far (``deliver``'s mark)."""
        with self._failed_lock:
            return self._failed

    def deliver(self, mark: int, timeout_s: float) -> bool:
        """Wait until every item added so far is exported (or counted as not sent), within
        ``timeout_s``; True if that happened and no item was counted as not sent since
        ``mark``. Items added by other threads meanwhile are not waited for."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            target = self._added
            self._flushing += 1
            self._cond.notify_all()
            try:
                while self._settled < target:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._cond.wait(remaining)
            finally:
                self._flushing -= 1
        return self.delivery_mark() == mark

    # -- the worker thread ---------------------------------------------------------------------

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
                if batch_no != self._batch_no:  # close gave up on it and counted it
                    return
                if not sent:  # counted before a flush waiting for it returns
                    self._drop("export_failed", n)
                self._in_flight = 0
                self._settled += n
                cond.notify_all()

    def _due(self, due: float) -> bool:
        """Whether to send a batch now (called holding the lock)."""
        if not self._queue:
            return False
        hurry = self._flushing or self._closed or len(self._queue) >= self._max_batch
        return bool(hurry) or time.monotonic() >= due

    def _export(self, batch: list[T]) -> bool:
        try:
            return self._export_batch(batch)
        except Exception:  # an exporter that raises has not sent the batch
            return False

    def _drop(self, reason: str, n: int) -> None:
        if n > 0:
            with self._failed_lock:
                self._failed += n
            with contextlib.suppress(Exception):  # counting must never break the app's thread
                self._on_drop(reason, n)


class BoundedProcessor(Generic[T]):
    """What ragtrace's span and log processors share: a ``BoundedBatches`` fed by the SDK,
    exporting through an OpenTelemetry exporter, and the flush and shutdown calls the SDK makes.

    Args:
        exporter: Where batches go (an ``OTLPSpanExporter``, an ``OTLPLogExporter``, say).
        on_drop: Counts items that were not sent, by reason (None: nowhere, for a provider
            built without metrics).
        shutdown_timeout_s: The budget of a ``shutdown()`` called without one (by the
            provider's own shutdown, say).
        max_queue: Most items buffered; more are dropped (``queue_full``).
        max_batch: Most items per export.
        delay_s: Longest an item waits before its batch is sent.
    """

    thread_name = "ragtrace-export"

    def __init__(
        self,
        exporter: Any,
        on_drop: DropCounter | None,
        *,
        shutdown_timeout_s: float = 5.0,
        max_queue: int = MAX_QUEUE,
        max_batch: int = MAX_BATCH,
        delay_s: float = DELAY_S,
    ) -> None:
        export = exporter.export
        self._batches: BoundedBatches[T] = BoundedBatches(
            lambda batch: getattr(export(batch), "name", "") == "SUCCESS",
            exporter.shutdown,
            on_drop or (lambda reason, n: None),
            shutdown_timeout_s=shutdown_timeout_s,
            max_queue=max_queue,
            max_batch=max_batch,
            delay_s=delay_s,
            name=self.thread_name,
        )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Send everything buffered; False if that did not finish within the timeout."""
        return self._batches.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        """``close()`` within the budget given at creation (the provider's shutdown)."""
        self.close()

    def close(self, timeout_s: float | None = None) -> bool:
        """``BoundedBatches.close``: True if everything buffered was sent in time."""
        return self._batches.close(timeout_s)

    @property
    def buffered(self) -> int:
        """Items buffered or in flight."""
        return self._batches.buffered

    def delivery_mark(self) -> int:
        """``BoundedBatches.delivery_mark``."""
        return self._batches.delivery_mark()

    def deliver(self, mark: int, timeout_s: float) -> bool:
        """``BoundedBatches.deliver``: True if everything emitted so far was exported with
        success and nothing failed since ``mark``."""
        return self._batches.deliver(mark, timeout_s)


def flush_provider(
    provider: object,
    timeout_s: float,
    *,
    name: str,
    on_error: Callable[[BaseException], None] | None = None,
) -> bool:
    """Ask a tracer or logger provider to send what it holds, never waiting past ``timeout_s``
    (the SDK's batch processors ignore the timeout they are given). True if it said it did,
    in time; a provider without ``force_flush`` has nothing to send."""
    force_flush = getattr(provider, "force_flush", None)
    if not callable(force_flush):
        return True
    done: list[bool] = []
    finished = run_bounded(
        lambda: done.append(bool(force_flush(int(timeout_s * 1000)))),
        timeout_s,
        name=name,
        on_error=on_error,
    )
    return finished and done == [True]


class ProviderFlush:
    """Delivery as a provider ragtrace does not own can tell it: its ``force_flush`` answer
    (the SDK's batch processors say whether the flush finished, not whether the export
    succeeded)."""

    def __init__(self, provider: object, name: str) -> None:
        self._provider = provider
        self._name = name

    def delivery_mark(self) -> int:
        return 0

    def deliver(self, mark: int, timeout_s: float) -> bool:
        return flush_provider(self._provider, timeout_s, name=self._name)
