"""Health that means "reading and acknowledging", not "the process is alive".

A worker is healthy when its last read of the stream reached Redis within ``stale_s``, and,
while it holds entries it has not acknowledged, its last acknowledgement (or the first read of
that work) is that recent too. A worker wedged on a lost connection, or stuck on a batch, turns
unhealthy and its orchestrator restarts it; its entries are reclaimed by the others.
``/healthz`` answers 200 or 503 with the reasons as JSON.
"""

from __future__ import annotations

import time
from typing import Any, Protocol


class ConsumerState(Protocol):
    """What health reads off a consumer (``RedisConsumer`` has these)."""

    last_read: float
    last_ack: float
    unacked: int


class WorkerHealth:
    """Judges a consumer's recent reads and acknowledgements.

    Args:
        consumer: The queue consumer the worker reads from.
        stale_s: How old the last read (or acknowledgement, while work is held) may be.
    """

    def __init__(self, consumer: ConsumerState, stale_s: float = 120.0) -> None:
        if stale_s <= 0:
            raise ValueError(f"health stale_s must be > 0, got {stale_s!r}")
        self._consumer = consumer
        self.stale_s = stale_s
        self._busy_since = 0.0

    def check(self) -> tuple[bool, dict[str, Any]]:
        """``(healthy, details)``; details name what is stale."""
        now = time.monotonic()
        c = self._consumer
        problems: list[str] = []
        read_age = now - c.last_read if c.last_read else None
        if read_age is None:
            problems.append("no successful read yet")
        elif read_age > self.stale_s:
            problems.append(f"last read {read_age:.0f}s ago")
        if c.unacked > 0:
            if not self._busy_since:
                self._busy_since = now
            since = max(c.last_ack, self._busy_since)
            if now - since > self.stale_s:
                problems.append(
                    f"{c.unacked} entries held, no acknowledgement for {now - since:.0f}s"
                )
        else:
            self._busy_since = 0.0
        details: dict[str, Any] = {
            "healthy": not problems,
            "problems": problems,
            "last_read_age_s": None if read_age is None else round(read_age, 3),
            "last_ack_age_s": round(now - c.last_ack, 3) if c.last_ack else None,
            "unacknowledged": c.unacked,
        }
        return not problems, details
