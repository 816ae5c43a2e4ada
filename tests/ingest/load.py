"""A bounded OTLP/HTTP load for ``ragtrace ingest``: senders that retry on 429 as a Collector
does, and the tally that reconciles what was sent with what was acknowledged and refused.

``send_traces(port, traces, ...)`` posts ``traces`` RAG requests (4 spans each, ``per_export``
traces per export) from ``senders`` threads; an export answered 429 or 503 is sent again after
``retry_s`` until it is accepted or ``deadline_s`` passes. Every request is bounded in time and
the whole load stops by itself.
"""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import dataclass, field

from tests.ingest.otlp_bodies import as_protobuf
from tests.ingest.test_service import rag_trace

PB = "application/x-protobuf"
SPANS_PER_TRACE = 4


@dataclass
class Tally:
    """What the senders saw, in spans and exports."""

    sent: int = 0
    """Distinct spans the senders had to deliver."""
    acknowledged: int = 0
    """Spans in exports answered 200."""
    refused: int = 0
    """Spans in exports answered 429 or 503 (each sent again)."""
    exports_refused: int = 0
    other: list[int] = field(default_factory=list)
    """Any other answer's status (none is expected)."""
    undelivered: int = 0
    """Spans still not acknowledged at the deadline."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        with self.lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)


def send_traces(
    port: int,
    traces: int,
    *,
    first: int = 0x10000,
    per_export: int = 10,
    senders: int = 4,
    retry_s: float = 0.05,
    deadline_s: float = 120.0,
    service: str = "load-bot",
) -> Tally:
    """Send ``traces`` requests to the receiver on ``port`` until each is acknowledged."""
    tally = Tally(sent=traces * SPANS_PER_TRACE)
    exports = [
        as_protobuf(
            [
                spec
                for t in range(start, min(start + per_export, traces))
                for spec in rag_trace(first + t, service=service)
            ]
        )
        for start in range(0, traces, per_export)
    ]
    spans_in = [
        (min(start + per_export, traces) - start) * SPANS_PER_TRACE
        for start in range(0, traces, per_export)
    ]
    stop_at = time.monotonic() + deadline_s

    def sender(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for n in range(index, len(exports), senders):
            while True:
                if time.monotonic() > stop_at:
                    tally.add(undelivered=spans_in[n])
                    break
                try:
                    conn.request("POST", "/v1/traces", exports[n], {"Content-Type": PB})
                    answer = conn.getresponse()
                    answer.read()
                    status = answer.status
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    time.sleep(retry_s)
                    continue
                if status == 200:
                    tally.add(acknowledged=spans_in[n])
                    break
                if status in (429, 503):
                    tally.add(refused=spans_in[n], exports_refused=1)
                    time.sleep(retry_s)
                    continue
                with tally.lock:
                    tally.other.append(status)
                break
        conn.close()

    threads = [threading.Thread(target=sender, args=(i,), daemon=True) for i in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(deadline_s + 60)
    return tally
