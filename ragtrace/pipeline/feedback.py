"""The recent records ``attach_feedback`` can still send to evaluators.

``RecentRecords`` keeps the last ``window`` records by trace id, each with the names of the
evaluators already chosen for it, so feedback that arrives later (a thumbs down) can have the
record evaluated again without running an evaluator twice::

    recent = RecentRecords(1000)
    recent.remember(record, ("groundedness",))
    record, ran = recent.take(record.trace_id)  # None once 1000 newer records came in
    record = with_feedback(record, {"thumbs": "down"})
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace

from ragtrace.model import RagRecord


class RecentRecords:
    """The last ``window`` records by trace id (oldest forgotten first); thread-safe.

    Args:
        window: How many records to keep (>= 1).
    """

    def __init__(self, window: int) -> None:
        self._window = window
        self._lock = threading.Lock()
        self._records: OrderedDict[str, tuple[RagRecord, frozenset[str]]] = OrderedDict()

    def remember(self, record: RagRecord, chosen: Iterable[str]) -> None:
        """Keep ``record`` and the evaluators ``chosen`` for it (replacing its trace's entry)."""
        with self._lock:
            self._records[record.trace_id] = (record, frozenset(chosen))
            while len(self._records) > self._window:
                self._records.popitem(last=False)

    def take(self, trace_id: str) -> tuple[RagRecord, frozenset[str]] | None:
        """Remove and return the record of ``trace_id`` and its evaluators; None if forgotten."""
        with self._lock:
            return self._records.pop(trace_id, None)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held mid-fork)."""
        self._lock = threading.Lock()


def with_feedback(record: RagRecord, feedback: object) -> RagRecord:
    """``record`` with ``feedback`` in its attributes, where sampling rules look for it."""
    return replace(record, attributes={**record.attributes, "feedback": feedback})
