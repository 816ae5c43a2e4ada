"""A worker's health in two parts: alive (restart it if not) and ready (work flows).

**Liveness** (``/livez``): the worker loop runs. It polls the queue every ``batch_wait_s``, or
it is evaluating a batch it has held for less than ``max_hold_s``. A Redis outage leaves it
alive (it polls, fails, retries): restarting a fleet whose broker is down helps nothing. A
worker whose loop has stopped, or that is stuck on one batch past ``max_hold_s``, is not alive
and its orchestrator restarts it; its entries are reclaimed by the others.

**Readiness** (``/readyz``, and ``/healthz``): reading and acknowledging. The last read of the
stream reached Redis within ``stale_s``, and, while it holds entries it has not acknowledged,
its last acknowledgement (or the first read of that work) is that recent too. A worker that
cannot reach Redis is not ready, and says why. Each answers 200 or 503 with the reasons as JSON.
"""

from __future__ import annotations

import time
from typing import Any, Protocol


class ConsumerState(Protocol):
    """What health reads off a consumer (``RedisConsumer`` has these)."""

    last_read: float
    last_ack: float
    last_poll: float
    unacked: int

    @property
    def oldest_held_s(self) -> float:
        """How long the oldest entry held has been held (0 when none)."""


class WorkerHealth:
    """Judges a consumer's recent reads and acknowledgements.

    Args:
        consumer: The queue consumer the worker reads from.
        stale_s: How old the last read (or acknowledgement, while work is held) may be for
            readiness, and the last poll of the queue for liveness.
        max_hold_s: How long a batch may be held while the loop does not poll, for liveness.
    """

    def __init__(
        self, consumer: ConsumerState, stale_s: float = 120.0, max_hold_s: float = 600.0
    ) -> None:
        if stale_s <= 0:
            raise ValueError(f"health stale_s must be > 0, got {stale_s!r}")
        self._consumer = consumer
        self.stale_s = stale_s
        self.max_hold_s = max_hold_s
        self._busy_since = 0.0
        self._created = time.monotonic()

    def live(self) -> tuple[bool, dict[str, Any]]:
        """``(alive, details)``: the worker loop polls the queue, or works on a batch held
        for less than ``max_hold_s``."""
        now = time.monotonic()
        c = self._consumer
        held_s = c.oldest_held_s
        since = c.last_poll or self._created
        poll_age = now - since
        problems: list[str] = []
        if poll_age > self.stale_s and not 0 < held_s < self.max_hold_s:
            what = "polled the queue" if c.last_poll else "started polling"
            problems.append(f"the worker loop has not {what} for {poll_age:.0f}s")
        if held_s >= self.max_hold_s:
            problems.append(f"a batch held for {held_s:.0f}s (max_hold_s {self.max_hold_s:.0f})")
        details: dict[str, Any] = {
            "alive": not problems,
            "problems": problems,
            "last_poll_age_s": round(poll_age, 3) if c.last_poll else None,
            "oldest_held_s": round(held_s, 3),
        }
        return not problems, details

    def check(self) -> tuple[bool, dict[str, Any]]:
        """``(ready, details)``: reading and acknowledging; details name what is stale."""
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
