"""Records rebuilt by ``ragtrace ingest``, handed to evaluation only when the queue has room.

Ingest answers an export 200 only when the records it completes can be handed to evaluation.
The service reserves room for every open trace when it admits an export (``room_for_traces``:
the queue's room less the records already waiting), so a full queue (in process, or the Redis
shipper's buffer while the stream is at its backlog bound) turns into 429s before anything of
an export is taken, and a sender's retry loses nothing. A record the queue cannot take at once
(a trace that held more than one request) waits here, in order, and is handed on as soon as
there is room; while any is blocked so, the service refuses new exports. Nothing is dropped
here but at shutdown, when ``drain`` runs out of time: those records are counted
(``shutdown``)::

    handoff = HandOff(runtime.submit_record, queue.room, on_drop=metrics.count_record_dropped)
    handoff.offer(records)          # from the assembly thread
    handoff.hand_on()               # each tick
    handoff.drain(timeout_s=20)     # at shutdown
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable

from ragtrace._model import RagRecord


class HandOff:
    """Records waiting for room in the evaluation queue (see the module docstring).

    Args:
        submit: Hands one record on (``Ragtrace.submit_record``); False if it was dropped (the
            pipeline counts that drop itself).
        room: How many more records the queue takes now.
        on_drop: ``on_drop(reason, n)`` for records dropped here (``shutdown``).
    """

    def __init__(
        self,
        submit: Callable[[RagRecord], bool],
        room: Callable[[], int],
        on_drop: Callable[[str, int], None],
    ) -> None:
        self._submit = submit
        self._room = room
        self._on_drop = on_drop
        self._waiting: deque[RagRecord] = deque()
        self._blocked = 0
        self.handed = 0
        self.refused = 0

    @property
    def waiting(self) -> int:
        """Records waiting to be handed on (some may be on their way this instant)."""
        return len(self._waiting)

    @property
    def blocked(self) -> int:
        """Records the last ``hand_on`` left waiting because the queue had no room: while
        there are any, the service takes no new export."""
        return self._blocked

    def room_for_traces(self) -> int:
        """How many open traces the queue's room covers now (each completes into a record)."""
        return max(0, self._room() - self._blocked)

    def offer(self, records: Iterable[RagRecord]) -> int:
        """Queue ``records`` behind those waiting and hand on what fits; how many went."""
        self._waiting.extend(records)
        return self.hand_on()

    def hand_on(self) -> int:
        """Hand on waiting records while the queue has room; how many went."""
        handed = 0
        room = self._room() if self._waiting else 0
        while self._waiting and room > 0:
            record = self._waiting.popleft()
            if self._submit(record):
                self.handed += 1
            else:
                self.refused += 1
            handed += 1
            room -= 1
            if not room and self._waiting:
                room = self._room()
        self._blocked = len(self._waiting)
        return handed

    def drain(self, timeout_s: float, poll_s: float = 0.05) -> int:
        """Hand on everything waiting, for up to ``timeout_s``; what is left then is dropped
        and counted (``shutdown``). How many were dropped."""
        deadline = time.monotonic() + timeout_s
        while self._waiting:
            self.hand_on()
            if not self._waiting or time.monotonic() >= deadline:
                break
            time.sleep(poll_s)
        left = len(self._waiting)
        self._waiting.clear()
        self._blocked = 0
        if left:
            self._on_drop("shutdown", left)
        return left
