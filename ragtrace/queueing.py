"""The queue between ``submit`` and the evaluation workers, behind a small interface.

The in-process default is a bounded deque: ``put`` never blocks and returns False when full (the
caller counts the drop). A distributed backend (e.g. a Redis Streams consumer group, so workers
run on other machines) implements the same ``WorkQueue`` protocol; work items hold only the
record and evaluator names, so they serialise without code.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from ragtrace.exporters.base import Evaluation
from ragtrace.model import RagRecord


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One record waiting for evaluation.

    Attributes:
        record: The finished request.
        evaluators: Names of the evaluators the sampler chose for it (cheap-first order).
        done: Evaluations already made on the request thread (inline evaluators).
    """

    record: RagRecord
    evaluators: tuple[str, ...]
    done: tuple[Evaluation, ...] = ()


class WorkQueue(Protocol):
    """What the pipeline needs from a queue."""

    def put(self, item: WorkItem) -> bool:
        """Add an item without blocking; False when the queue is full or closed."""

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` items, waiting up to ``wait_s`` for the first; [] on timeout."""

    def depth(self) -> int:
        """Items waiting."""

    def close(self) -> None:
        """Refuse new items and wake every waiting consumer."""


class MemoryQueue:
    """A bounded in-process queue (the default backend)."""

    def __init__(self, maxsize: int = 10000) -> None:
        if maxsize < 1:
            raise ValueError(f"queue_size must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: deque[WorkItem] = deque()
        self._not_empty = threading.Condition(threading.Lock())
        self._closed = False

    def put(self, item: WorkItem) -> bool:
        with self._not_empty:
            if self._closed or len(self._items) >= self.maxsize:
                return False
            self._items.append(item)
            self._not_empty.notify()
            return True

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        deadline = time.monotonic() + wait_s
        with self._not_empty:
            while not self._items or self._closed:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return []  # once closed, what is left is counted by the closer
                self._not_empty.wait(remaining)
            n = min(max_items, len(self._items))
            return [self._items.popleft() for _ in range(n)]

    def depth(self) -> int:
        return len(self._items)

    def close(self) -> None:
        with self._not_empty:
            self._closed = True
            self._not_empty.notify_all()
