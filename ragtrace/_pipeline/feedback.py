"""The recent records ``attach_feedback`` can still send to evaluators.

``RecentRecords`` keeps the last ``window`` records by trace id, each with the names of the
evaluators already chosen for it, so feedback that arrives later (a thumbs down) can have the
record evaluated again without running an evaluator twice.

A record is remembered when it is submitted, often before a worker has asked the sampler
about it (the request path only queues it). Its entry then goes through three states:

- ``pending``: queued, nothing chosen yet. Feedback that arrives now is put on the record
  itself, so the sampler sees it when the worker chooses (``attach`` says ``waiting``);
- ``choosing``: a worker has ``claim``-ed it and is asking the sampler; ``attach`` waits
  the few microseconds until it is ``settle``-d;
- ``chosen``: ``attach`` takes the record out with the evaluators that ran, and the pipeline
  asks the sampler again about the others::

    recent = RecentRecords(1000)
    recent.remember(record)                       # submit: not chosen yet
    current, tracked = recent.claim(record)       # worker: the record as it is now
    recent.settle(record, ("groundedness",))      # worker: what the sampler chose
    found = recent.attach(record.trace_id, {"thumbs": "down"})  # None once forgotten

``remember`` and ``refuse`` run on the request path and take no lock: each appends to an
arrivals deque (an atomic operation), and whoever next takes the lock (a worker's ``claim`` or
``settle``, ``attach``) first files the arrivals in order. The table therefore goes through
exactly the states it would if each call had filed its record at once. A lock shared with the
workers made ``submit`` wait whenever a worker held it and lost the GIL (docs/decisions/
request-path-measurements.md). When nobody else files them, the request path does once ``window``
arrivals wait, so they stay bounded.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, replace

from ragtrace._model import RagRecord

PENDING, CHOOSING, CHOSEN = "pending", "choosing", "chosen"


# An entry: (the record as submitted, the record as it is now (with feedback), the chosen
# names or None, the state). A tuple, replaced whole on each change: the request path builds one
# per record, and a tuple costs less to build than an object.
_Entry = tuple[RagRecord, RagRecord, "tuple[str, ...] | None", str]


@dataclass(frozen=True, slots=True)
class Attached:
    """What ``RecentRecords.attach`` found.

    Attributes:
        record: The record with the feedback in its attributes.
        ran: Evaluators already chosen for it (empty while ``waiting``).
        waiting: The record was still queued: the feedback went onto it and the sampler
            will see it when a worker chooses its evaluators; nothing else to do.
    """

    record: RagRecord
    ran: frozenset[str]
    waiting: bool


class RecentRecords:
    """The records of the last ``window`` ``remember`` calls, by trace id (oldest forgotten
    first); thread-safe. A record that took feedback while it waited for its worker is kept
    past the window until its worker has chosen (the feedback must reach the sampler). A trace
    remembered again (a second record in one trace, or feedback) keeps its newest record.

    Args:
        window: How many records to keep (>= 1).
        wait_s: How long ``attach`` waits for a worker that is choosing for the record.
    """

    def __init__(self, window: int, wait_s: float = 1.0) -> None:
        self._window = window
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified when a choice is settled
        self._records: dict[str, _Entry] = {}
        # (record, chosen, refused) of each ``remember`` and ``refuse`` not filed yet, oldest
        # first: appended without the lock, filed under it (``_file_arrivals``).
        self._arrivals: deque[tuple[RagRecord, tuple[str, ...] | None, bool]] = deque()
        # (trace id, record) of each ``remember``, oldest first: finding the oldest entry this
        # way costs O(1), where the dict's first key is found by skipping deleted slots.
        self._order: deque[tuple[str, RagRecord]] = deque()
        # Entries past the window kept for their feedback; aged again once chosen.
        self._kept: set[str] = set()

    def remember(self, record: RagRecord, chosen: tuple[str, ...] | None = None) -> None:
        """Keep ``record`` (replacing its trace's entry): ``chosen`` names the evaluators the
        sampler chose for it, None while a worker has yet to choose (``claim``). Lock-free
        unless ``window`` arrivals wait to be filed."""
        self._arrive((record, chosen, False))

    def refuse(self, record: RagRecord) -> None:
        """The queue refused ``record`` (remembered unchosen): no worker will choose for it,
        but feedback may still send it to evaluators (as ``settle(record, ())``, lock-free)."""
        self._arrive((record, (), True))

    def _arrive(self, arrival: tuple[RagRecord, tuple[str, ...] | None, bool]) -> None:
        arrivals = self._arrivals
        arrivals.append(arrival)
        if len(arrivals) > self._window:
            with self._lock:
                self._file_arrivals()

    def _file_arrivals(self) -> None:
        """File every waiting ``remember`` and ``refuse`` in order (the caller holds the
        lock)."""
        arrivals, records, order = self._arrivals, self._records, self._order
        while arrivals:  # only this method takes from it, under the lock
            record, chosen, refused = arrivals.popleft()
            if refused:
                self._settle_entry(record, ())
                continue
            trace_id = record.trace_id
            records[trace_id] = (record, record, chosen, PENDING if chosen is None else CHOSEN)
            order.append((trace_id, record))
            if len(order) > self._window:
                oldest, submitted = order.popleft()
                found = records.get(oldest)
                if found is not None and found[0] is submitted:  # not remembered again since
                    if found[3] == PENDING and found[1] is not submitted:
                        self._kept.add(oldest)  # took feedback its worker has yet to see
                    else:
                        del records[oldest]

    def claim(self, record: RagRecord) -> tuple[RagRecord, bool]:
        """A worker is about to choose for ``record`` (remembered unchosen): returns the record
        to choose for (with any feedback attached meanwhile) and whether its entry is still
        here. ``settle`` must follow when it is."""
        with self._lock:
            self._file_arrivals()
            entry = self._records.get(record.trace_id)
            if entry is None or entry[0] is not record or entry[3] != PENDING:
                return record, False
            self._records[record.trace_id] = (record, entry[1], None, CHOOSING)
            return entry[1], True

    def settle(self, record: RagRecord, chosen: tuple[str, ...]) -> None:
        """The sampler chose ``chosen`` for the claimed ``record`` (or, with ``()``, the queue
        refused it: feedback may still send it to evaluators)."""
        with self._changed:
            self._file_arrivals()
            self._settle_entry(record, chosen)
            self._changed.notify_all()

    def _settle_entry(self, record: RagRecord, chosen: tuple[str, ...]) -> None:
        entry = self._records.get(record.trace_id)
        if entry is not None and entry[0] is record and entry[3] != CHOSEN:
            self._records[record.trace_id] = (record, entry[1], chosen, CHOSEN)
            if self._kept and record.trace_id in self._kept:
                self._kept.discard(record.trace_id)
                self._order.append((record.trace_id, record))  # ages from now on

    def attach(self, trace_id: str, feedback: object) -> Attached | None:
        """Put ``feedback`` on the record of ``trace_id``; None if it was forgotten.

        A chosen record is taken out (the caller remembers it again with what it chooses
        now); a pending one keeps its place and waits for its worker with the feedback on it.
        """

        def settled() -> bool:
            self._file_arrivals()
            entry = self._records.get(trace_id)
            return entry is None or entry[3] != CHOOSING

        with self._changed:
            if not self._changed.wait_for(settled, self._wait_s):
                return None
            entry = self._records.get(trace_id)
            if entry is None:
                return None
            submitted, current, names, state = entry
            updated = with_feedback(current, feedback)
            if state == PENDING:
                self._records[trace_id] = (submitted, updated, None, PENDING)
                return Attached(updated, frozenset(), waiting=True)
            del self._records[trace_id]
            return Attached(updated, frozenset(names or ()), waiting=False)

    def after_fork(self) -> None:
        """In a forked child: a fresh lock (the parent's may have been held mid-fork) and no
        records (they were the parent's requests, queued on the parent's queue)."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._records = {}
        self._arrivals = deque()
        self._order = deque()
        self._kept = set()


def with_feedback(record: RagRecord, feedback: object) -> RagRecord:
    """``record`` with ``feedback`` in its attributes, where sampling rules look for it."""
    return replace(record, attributes={**record.attributes, "feedback": feedback})
