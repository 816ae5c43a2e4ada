"""Admission by work in flight: an ingest that cannot keep up says so at once.

Decoding and assembling an export is CPU work, and one process has only so much of it. Left
alone, every export the receivers take past that point still gets its thread, and all of them
share the same CPU: each answer comes later, none is refused, and a sender cannot tell a slow
ingest from a full one. ``Admission`` bounds the exports being decoded and assembled at once
(over OTLP/HTTP and OTLP/gRPC together, ``ingest_max_in_flight``); an export that finds every
slot taken is answered at once, 429 with ``Retry-After`` (``RESOURCE_EXHAUSTED`` with a
``RetryInfo`` over gRPC), before it is decoded, and is never kept: the sender holds it and
retries. Every refusal is counted with its reason (``on_refused``;
``ragtrace_ingest_requests_refused_total{reason}``)::

    admission = Admission(8, on_refused=metrics.count_refused)
    if not admission.enter():       # counted "in_flight"
        ...                         # answer 429 / RESOURCE_EXHAUSTED
    try:
        ...                         # decode, assemble, answer
    finally:
        admission.leave()
"""

from __future__ import annotations

import threading
from collections.abc import Callable

IN_FLIGHT = "in_flight"
"""The refusal reason of an export that found every slot taken."""


def _not_counted(reason: str) -> None:
    """Refusals of a receiver run without a service (tests, tools) are not counted."""


class Admission:
    """A bound on the exports being decoded and assembled at once (see the module docstring).

    Args:
        max_in_flight: Exports taken at once; None: no bound.
        on_refused: ``on_refused(reason)`` for every export refused (``in_flight`` here; the
            receivers also pass ``shutting_down``, the service ``buffer_full`` and
            ``queue_full``).

    Raises:
        ValueError: ``max_in_flight`` is below 1.
    """

    def __init__(
        self, max_in_flight: int | None = None, on_refused: Callable[[str], None] = _not_counted
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.refused = on_refused
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Exports being decoded and assembled now."""
        return self._in_flight

    def enter(self) -> bool:
        """Take a slot (True), or count the export refused (``in_flight``) and return False."""
        with self._lock:
            if self.max_in_flight is None or self._in_flight < self.max_in_flight:
                self._in_flight += 1
                return True
        self.refused(IN_FLIGHT)
        return False

    def leave(self) -> None:
        """Give back the slot ``enter`` took."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
