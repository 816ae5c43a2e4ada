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
        # Insertion-ordered: the first key is the oldest (a replaced entry keeps its place).
        self._records: dict[str, tuple[RagRecord, tuple[str, ...]]] = {}

    def remember(self, record: RagRecord, chosen: Iterable[str]) -> None:
        """Keep ``record`` and the evaluators ``chosen`` for it (replacing its trace's entry).

        On the request path: the names are kept as given and made a set only by ``take``.
        """
        names = chosen if type(chosen) is tuple else tuple(chosen)
        records = self._records
        with self._lock:
            records[record.trace_id] = (record, names)
            while len(records) > self._window:
                del records[next(iter(records))]

    def take(self, trace_id: str) -> tuple[RagRecord, frozenset[str]] | None:
        """Remove and return the record of ``trace_id`` and its evaluators; None if forgotten."""
        with self._lock:
            found = self._records.pop(trace_id, None)
        return None if found is None else (found[0], frozenset(found[1]))

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held mid-fork)."""
        self._lock = threading.Lock()


def with_feedback(record: RagRecord, feedback: object) -> RagRecord:
    """``record`` with ``feedback`` in its attributes, where sampling rules look for it."""
    return replace(record, attributes={**record.attributes, "feedback": feedback})
