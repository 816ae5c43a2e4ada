"""The stream's state as gauges: backlog, pending, lag and dead letters, polled every few seconds.

Reading Redis at scrape time would make ``/metrics`` as slow as the broker; a daemon thread
polls instead (``XLEN``, ``XPENDING``, ``XINFO GROUPS``) and the gauges hold the last values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ragtrace.exporters.queue_metrics import QueueMetrics
from ragtrace.pipeline.queues.redis_streams import StreamCommands

POLL_S = 5.0


class StreamMonitor:
    """Polls the stream and sets the fleet gauges.

    Args:
        commands: The queue's Redis commands.
        metrics: The gauges to set.
        on_error: ``on_error(site, exc)`` when a poll fails (the gauges keep their values).
        interval_s: Seconds between polls.
    """

    def __init__(
        self,
        commands: StreamCommands,
        metrics: QueueMetrics,
        on_error: Callable[[str, BaseException], None],
        interval_s: float = POLL_S,
    ) -> None:
        self._commands = commands
        self._metrics = metrics
        self._on_error = on_error
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> None:
        """Read the stream's state once and set the gauges (raises when Redis is down)."""
        o = self._commands.options
        client = self._commands.client
        backlog = int(client.xlen(o.stream))
        dead = int(client.xlen(o.dead_stream))
        pending = 0
        lag: int | None = None
        for group in client.xinfo_groups(o.stream) if backlog or dead else ():
            name = group.get("name")
            if (name.decode() if isinstance(name, bytes) else name) == o.group:
                pending = int(group.get("pending") or 0)
                raw_lag = group.get("lag")
                lag = None if raw_lag is None else int(raw_lag)
        self._metrics.set_stream_state(backlog, pending, 0 if not backlog else lag, dead)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="ragtrace-stream-monitor", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:
                self._on_error("worker.monitor", exc)
            self._stop.wait(self._interval_s)
