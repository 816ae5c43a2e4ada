"""Daemon threads that run evaluator calls, so a worker can give up on a call that hangs.

``ThreadPoolExecutor`` joins its threads at interpreter exit, so one hung evaluator would keep
the host application from exiting; these threads are daemons. A call that overstays its timeout
keeps its thread busy, so the pool grows (up to ``max_threads``) to keep serving others; every
thread it had to add beyond the base size is reported through ``on_grow``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_Task = tuple["Future[Any]", Callable[[], Any]]


class CallPool:
    """Runs callables on daemon threads and returns futures."""

    def __init__(
        self,
        base_threads: int = 2,
        max_threads: int = 32,
        name: str = "ragtrace-eval",
        on_grow: Callable[[], None] | None = None,
    ) -> None:
        if base_threads < 1 or max_threads < base_threads:
            raise ValueError("need 1 <= base_threads <= max_threads")
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._backlog = 0
        self._base = base_threads
        self._max = max_threads
        self._name = name
        self._on_grow = on_grow
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """Run ``fn`` on a pool thread. Raises RuntimeError once the pool is shut down."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("call pool is shut down")
            grow = self._idle == 0 and len(self._threads) < self._max
            if grow:
                self._start_thread_locked()
            elif self._idle > 0:
                self._idle -= 1
            else:
                self._backlog += 1  # every thread is busy: the task waits for the first free one
        if grow and len(self._threads) > self._base and self._on_grow is not None:
            self._on_grow()
        self._tasks.put((future, fn))
        return future

    def threads(self) -> int:
        with self._lock:
            return len(self._threads)

    def shutdown(self) -> None:
        """Stop idle threads; threads stuck in a call end with it (they are daemons)."""
        with self._lock:
            self._closed = True
            n = len(self._threads)
        for _ in range(n):
            self._tasks.put(None)

    def _start_thread_locked(self) -> None:
        thread = threading.Thread(
            target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True
        )
        self._threads.append(thread)
        thread.start()

    def _run(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, fn = task
            result: Any = None
            error: BaseException | None = None
            run = future.set_running_or_notify_cancel()
            if run:
                try:
                    result = fn()
                except BaseException as exc:
                    error = exc
            # Free this thread before waking the caller, or a caller that submits again at
            # once would find no idle thread and grow the pool for nothing.
            with self._lock:
                if self._backlog > 0:
                    self._backlog -= 1
                else:
                    self._idle += 1
            if run:
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)
