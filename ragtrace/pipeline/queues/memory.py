"""The in-process queue: a bounded deque between ``submit`` and the worker threads."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Literal

from ragtrace.pipeline.queues.base import WorkItem


class MemoryQueue:
    """A bounded in-process queue (the default backend)."""

    role: Literal["local"] = "local"
    full_reason = "queue_full"

    def __init__(self, maxsize: int = 10000) -> None:
        if maxsize < 1:
            raise ValueError(f"queue_size must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: deque[WorkItem] = deque()
        self._lock = threading.Lock()  # ``put`` takes it bare: cheaper than the Condition's
        self._not_empty = threading.Condition(self._lock)
        self._waiting = 0  # consumers asleep in get_batch: only they need a notify
        self._closed = False

    def put(self, item: WorkItem) -> bool:
        with self._lock:
            if self._closed or len(self._items) >= self.maxsize:
                return False
            self._items.append(item)
            if self._waiting:
                self._not_empty.notify()
            return True

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        deadline = time.monotonic() + wait_s
        with self._not_empty:
            while not self._items or self._closed:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return []  # once closed, what is left is counted by the closer
                self._waiting += 1
                try:
                    self._not_empty.wait(remaining)
                finally:
                    self._waiting -= 1
            n = min(max_items, len(self._items))
            return [self._items.popleft() for _ in range(n)]

    def ack(self, items: list[WorkItem]) -> None:
        """Taken items are gone already: nothing to acknowledge."""

    def flush(self, timeout_s: float) -> bool:
        """Wait until the workers have taken every item; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self._items:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def release(self, items: list[WorkItem]) -> None:
        """Nothing to give back: the caller counts the lost items."""

    def depth(self) -> int:
        return len(self._items)

    def close(self) -> None:
        with self._not_empty:
            self._closed = True
            self._not_empty.notify_all()
