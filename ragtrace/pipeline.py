"""Where finished records go: ``submit(record)`` hands each one to the registered record sinks.

This is the minimal pipeline of the capture layer: sinks are called on the thread that finished
the request, each guarded, so a sink must be quick (append to a list, put on a queue). The
sampling, queueing and evaluation stages plug in behind the same ``submit`` interface.

A record sink is any callable taking a ``RagRecord``; register one with
``Ragtrace.add_record_sink(fn)``. Tests use this to observe exactly what was captured.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ragtrace.diagnostics import Diagnostics
from ragtrace.model import RagRecord

RecordSink = Callable[[RagRecord], None]


class RecordPipeline:
    """Fans records out to sinks; never raises into the caller."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        self._diag = diagnostics
        self._sinks: tuple[RecordSink, ...] = ()
        self._lock = threading.Lock()
        self._closed = False
        self.submitted = 0

    def add_sink(self, sink: RecordSink) -> None:
        if not callable(sink):
            raise TypeError(f"record sink must be callable, got {type(sink).__name__}")
        with self._lock:
            self._sinks = (*self._sinks, sink)

    def remove_sink(self, sink: RecordSink) -> None:
        with self._lock:
            self._sinks = tuple(s for s in self._sinks if s is not sink)

    def submit(self, record: RagRecord) -> bool:
        """Hand ``record`` to every sink. Returns False when the pipeline is shut down."""
        if self._closed:
            return False
        self.submitted += 1
        for sink in self._sinks:
            try:
                sink(record)
            except Exception as exc:
                self._diag.error("pipeline.sink", exc)
        return True

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Nothing is buffered here yet; always True."""
        return True

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self._closed = True
