"""When and how often a judge is called: retries with backoff, timeouts, a concurrency limit.

``CallPolicy.call(send)`` runs one request with retries: exponential backoff with jitter (or the
server's ``Retry-After``) after a transient failure (timeout, HTTP 429, 5xx, an unreachable
server), none after a permanent one (400, 401, 404, an unparseable answer). Inside ``send``:

- ``slot()`` guards an attempt: it fails at once while the circuit breaker is open, and waits at
  most ``timeout_s`` for one of ``concurrency`` slots;
- ``watch()`` wraps the part that reaches the server: repeated unreachable-server failures open
  the ``CircuitBreaker`` for a few seconds, so a dead judge costs milliseconds, not minutes.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ragtrace.judges.errors import (
    JudgeError,
    JudgeRateLimited,
    JudgeServerError,
    JudgeTimeout,
    JudgeUnavailable,
)

TRANSIENT = (JudgeTimeout, JudgeRateLimited, JudgeServerError, JudgeUnavailable)
BREAKER_FAILURES = 3  # consecutive unreachable-server failures that open the breaker
BREAKER_MAX_OPEN_S = 30.0

T = TypeVar("T")


class CircuitBreaker:
    """Opens after ``failures`` unreachable-server failures in a row; a success closes it.

    It stays open two seconds per failure so far, at most ``BREAKER_MAX_OPEN_S``. Thread-safe.
    """

    def __init__(self, failures: int = BREAKER_FAILURES) -> None:
        self.failures = failures
        self._lock = threading.Lock()
        self._unreachable = 0
        self._open_until = 0.0

    def is_open(self) -> bool:
        """Whether calls should fail without trying the server."""
        with self._lock:
            return time.monotonic() < self._open_until

    def record(self, error: JudgeError | None) -> None:
        """Count the outcome of one server call (None: it answered)."""
        with self._lock:
            if isinstance(error, JudgeUnavailable):
                self._unreachable += 1
                if self._unreachable >= self.failures:
                    wait = min(BREAKER_MAX_OPEN_S, 2.0 * self._unreachable)
                    self._open_until = time.monotonic() + wait
            elif error is None:
                self._unreachable, self._open_until = 0, 0.0


class CallPolicy:
    """Retries, backoff, per-attempt timeout and concurrency for one judge. Thread-safe.

    Args:
        timeout_s: Most seconds one HTTP call may take (also the wait for a free slot).
        max_retries: Extra attempts after a transient failure.
        backoff_s, max_backoff_s: First retry delay (doubled each time, with jitter) and cap.
        concurrency: Most calls in flight at once.
    """

    def __init__(
        self,
        *,
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        max_backoff_s: float,
        concurrency: int,
    ) -> None:
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.backoff_s, self.max_backoff_s = float(backoff_s), float(max_backoff_s)
        self.concurrency = int(concurrency)
        self.breaker = CircuitBreaker()
        self._slots = threading.BoundedSemaphore(self.concurrency)

    def call(self, send: Callable[[], T]) -> T:
        """``send()``, tried again after a transient failure while retries and the breaker allow.

        Raises:
            JudgeError: The last failure, or the first permanent one.
        """
        delay = self.backoff_s
        for attempt in range(self.max_retries + 1):
            try:
                return send()
            except TRANSIENT as exc:
                if attempt == self.max_retries or self.breaker.is_open():
                    raise
                wait = getattr(exc, "retry_after", None) or delay * (0.5 + random.random())
                time.sleep(min(float(wait), self.max_backoff_s))
                delay = min(delay * 2, self.max_backoff_s)
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the concurrency slots for an attempt.

        Raises:
            JudgeUnavailable: The breaker is open.
            JudgeTimeout: No slot came free within ``timeout_s``.
        """
        if self.breaker.is_open():
            raise JudgeUnavailable("judge unreachable recently; not calling it for a few seconds")
        if not self._slots.acquire(timeout=self.timeout_s):
            raise JudgeTimeout(f"no free judge slot within {self.timeout_s:g} s")
        try:
            yield
        finally:
            self._slots.release()

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Run the code that reaches the server; its ``JudgeError`` or success feeds the breaker."""
        try:
            yield
        except JudgeError as error:
            self.breaker.record(error)
            raise
        self.breaker.record(None)
