"""Metric updates taken off the request path: queued there, applied in a batch later.

A Prometheus update costs a lock and, for a histogram, a bucket search: a microsecond or two
each, several per request. ``DeferredUpdates.defer(fn, *args)`` only appends to a deque (atomic,
no lock); the updates are applied, in order, by whichever comes first:

- a scrape or any ``registry.collect()``: the instance is registered on the metrics' registry
  ahead of every family, so a scrape of this process always sees every update queued before it;
- a daemon thread, every ``interval_s`` (1 s by default): for a registry read elsewhere, such as
  the ``PROMETHEUS_MULTIPROC_DIR`` files another process of a web server serves; sooner when
  ``wake_at`` updates are waiting (a burst of requests), so the queue's memory stays small;
- ``drain()``, which flush and shutdown call;
- the request path itself when ``max_pending`` updates are waiting (the thread is stuck or
  gone): the queue never grows without bound and nothing is dropped.

Functions given to ``poll(fn)`` run after each batch (counts that other code keeps, copied into
families at the same moments). An update or poll that raises is counted in ``failures`` (and in
``on_error``) and the others still apply. After a fork the thread is started again in the
child (with new locks) on its next ``defer`` or ``drain``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

DEFAULT_INTERVAL_S = 1.0
DEFAULT_MAX_PENDING = 50_000
DEFAULT_WAKE_AT = 1_000

Update = tuple[Callable[..., object], tuple[Any, ...]]


class DeferredUpdates:
    """Queued metric updates, applied in order off the request path (see the module docs).

    Args:
        registry: Registered on it, so that collecting the registry applies what is queued.
            Create this before the families it updates, so it is collected first.
        interval_s: How often the background thread applies the queue.
        max_pending: Past this many queued updates, ``defer`` applies the queue itself.
        wake_at: At this many queued updates, ``defer`` wakes the thread early.
        on_error: Called with each exception an update raised.
    """

    def __init__(
        self,
        registry: CollectorRegistry | None,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_pending: int = DEFAULT_MAX_PENDING,
        wake_at: int = DEFAULT_WAKE_AT,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending!r}")
        if wake_at < 1:
            raise ValueError(f"wake_at must be >= 1, got {wake_at!r}")
        self._interval_s = interval_s
        self._max_pending = max_pending
        self._wake_at = min(wake_at, max_pending)
        self._on_error = on_error
        self._pending: deque[Update] = deque()
        self._polls: tuple[Callable[[], object], ...] = ()
        self._apply_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._pid = -1  # the process whose thread runs (-1: none started yet)
        self._locks_pid = os.getpid()  # the process whose locks these are
        self._thread: threading.Thread | None = None
        self.failures = 0
        self._registry = registry
        if registry is not None:
            registry.register(self)

    # -- the request path ---------------------------------------------------------------------

    def defer(self, fn: Callable[..., object], *args: Any) -> None:
        """Queue ``fn(*args)``; never raises (a closed instance applies it at once)."""
        if self._pid != os.getpid():
            self._start()
        pending = self._pending
        pending.append((fn, args))
        waiting = len(pending)
        if waiting >= self._wake_at:
            if waiting >= self._max_pending or self._closed:
                self.drain()
            elif not self._wake.is_set():
                self._wake.set()
        elif self._closed:
            self.drain()

    # -- applying ----------------------------------------------------------------------------

    def drain(self) -> int:
        """Apply every queued update now, in order, then run the polls; returns how many
        updates were applied."""
        if self._locks_pid != os.getpid():  # a forked child: not on a lock held at the fork
            self._start()
        done = 0
        pending = self._pending
        with self._apply_lock:  # one applier at a time keeps the order
            while True:
                try:
                    fn, args = pending.popleft()
                except IndexError:
                    break
                self._apply(fn, args)
                done += 1
            for poll in self._polls:
                self._apply(poll, ())
        return done

    def poll(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` after every batch from now on."""
        with self._apply_lock:
            self._polls = (*self._polls, fn)

    def _apply(self, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception as exc:
            self.failures += 1
            if self._on_error is not None:
                with contextlib.suppress(Exception):
                    self._on_error(exc)

    @property
    def pending(self) -> int:
        """Updates queued and not applied yet."""
        return len(self._pending)

    def close(self) -> None:
        """Apply what is queued and stop the thread (later updates apply at once)."""
        self._closed = True
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        self.drain()
        if self._registry is not None:
            with contextlib.suppress(KeyError):
                self._registry.unregister(self)
            self._registry = None

    # -- prometheus_client's collector protocol -----------------------------------------------

    def collect(self) -> Iterable[Metric]:
        """Apply the queue (a scrape is about to read the families); yields nothing."""
        self.drain()
        return ()

    def describe(self) -> Iterable[Metric]:
        return ()

    # -- the thread ------------------------------------------------------------------------------

    def _start(self) -> None:
        pid = os.getpid()
        if self._locks_pid != pid:  # a forked child: the parent's locks may be held
            self._apply_lock = threading.Lock()
            self._start_lock = threading.Lock()
            self._locks_pid = pid
        with self._start_lock:
            if self._pid == pid:
                return
            self._pid = pid
            if self._closed:
                return
            self._thread = threading.Thread(
                target=self._run, name="ragtrace-metrics-batch", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait(self._interval_s)
            if not self._closed:  # close() keeps the flag set so the thread ends
                self._wake.clear()
            self.drain()
