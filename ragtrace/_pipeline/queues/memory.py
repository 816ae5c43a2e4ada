"""The in-process queue: a bounded deque between ``submit`` and the worker threads.

``put`` runs on the request path and takes no lock while the workers are busy: appending to a
deque is atomic, and the lock is taken only to wake a worker that sleeps in ``get_batch``. A
lock shared with the workers made ``submit`` wait whenever a worker held it and lost the GIL
(docs/decisions/request-path-measurements.md). The bound is checked before the append, so threads
that submit at the same instant may pass it by one item each.

A worker announces that it is about to sleep (``_waiting``) and looks at the deque once more
before it does, under the lock; ``put`` appends, then reads the announcement. Whichever comes
first, the item is seen: either the worker finds it, or ``put`` sees the announcement and
notifies under the lock, which the worker only releases by starting to wait.

``flush`` waits until every item put has been taken and marked done (``task_done``), like
``queue.Queue.join``; ``close`` refuses new items, and ``take_remaining`` empties what was
left, for the closer to count. An item that ``put`` appends while the queue closes is either
taken back (``put`` returns False) or was among those the closer counted (``put`` returns True),
never both and never neither.
"""

from __future__ import annotations

import threading
import time
from collections import deque

from ragtrace._pipeline.queues.base import WorkItem


class MemoryQueue:
    """A bounded in-process queue (the default backend): a ``WorkQueue``, both ends here."""

    full_reason = "queue_full"

    def __init__(self, maxsize: int = 10000) -> None:
        if maxsize < 1:
            raise ValueError(f"queue_size must be >= 1, got {maxsize}")
        self.maxsize = maxsize
        self._items: deque[WorkItem] = deque()
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._all_done = threading.Condition(self._lock)
        self._waiting = 0  # consumers about to sleep in get_batch: only they need a notify
        self._in_flight = 0  # taken by get_batch, not yet task_done
        self._closed = False

    def put(self, item: WorkItem) -> bool:
        items = self._items
        if self._closed or len(items) >= self.maxsize:
            return False
        items.append(item)
        if self._waiting:
            with self._lock:
                self._not_empty.notify()
        if self._closed:  # closed while appending: the closer may not have seen it
            return self._take_back(item)
        return True

    def _take_back(self, item: WorkItem) -> bool:
        """False if ``item`` was still here (now removed); True if the closer took it."""
        with self._lock:
            items = self._items
            # By identity: ``deque.remove`` compares with ``==``, which for records can be slow,
            # raise, or match another submission of an equal record.
            for i in range(len(items) - 1, -1, -1):  # it was appended last: look from the end
                if items[i] is item:
                    del items[i]
                    break
            else:
                return True
            if not items and not self._in_flight:
                self._all_done.notify_all()
            return False

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        deadline = time.monotonic() + wait_s
        items = self._items
        with self._lock:
            while not items or self._closed:
                remaining = deadline - time.monotonic()
                if self._closed or remaining <= 0:
                    return []  # once closed, what is left is counted by the closer
                self._waiting += 1
                try:
                    if not items:  # again, after announcing: see the module's docstring
                        self._not_empty.wait(remaining)
                finally:
                    self._waiting -= 1
            n = min(max_items, len(items))
            self._in_flight += n
            return [items.popleft() for _ in range(n)]

    def task_done(self, n: int) -> None:
        """``n`` items taken with ``get_batch`` are finished (published, or counted dropped)."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - n)
            if not self._in_flight and not self._items:
                self._all_done.notify_all()

    def publishable(self, items: list[WorkItem]) -> list[bool]:
        """Every item taken here is this process's alone."""
        return [True] * len(items)

    def ack(self, items: list[WorkItem]) -> None:
        """Taken items are gone already: nothing to acknowledge."""

    def flush(self, timeout_s: float) -> bool:
        """Wait until every item put so far is taken and done; False on timeout."""
        with self._lock:  # woken by task_done, take_remaining, _take_back
            return self._all_done.wait_for(
                lambda: not self._items and not self._in_flight, timeout_s
            )

    def release(self, items: list[WorkItem]) -> None:
        """Nothing to give back: the items are lost, and the caller counts them."""

    def depth(self) -> int:
        return len(self._items)

    def room(self) -> int:
        """How many more items ``put`` takes now (0 when closed)."""
        return 0 if self._closed else max(0, self.maxsize - len(self._items))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._not_empty.notify_all()

    def take_remaining(self) -> int:
        """Empty a closed queue; returns how many items were waiting (the caller counts them).

        Raises:
            RuntimeError: The queue is open (``put`` could add items meanwhile).
        """
        with self._lock:
            if not self._closed:
                raise RuntimeError("take_remaining needs a closed queue")
            n = len(self._items)
            self._items.clear()
            self._all_done.notify_all()
            return n
