"""The stream's state as gauges: backlog, pending, lag and dead letters, polled every few seconds.

Reading Redis at scrape time would make ``/metrics`` as slow as the broker; a daemon thread
polls instead (``XLEN``, ``XINFO STREAM``, ``XINFO GROUPS``, the epoch key) and the gauges hold
the last values. Each poll also feeds the worker's ``LossWatch`` (the stream's epoch, length, last
id and the group's last-delivered id), which finds a stream or group that Redis lost or rewound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ragtrace._metrics.queues import QueueMetrics
from ragtrace._pipeline.queues.redis_losses import LossWatch
from ragtrace._pipeline.queues.redis_streams import StreamCommands, as_text

POLL_S = 5.0


class StreamMonitor:
    """Polls the stream and sets the fleet gauges.

    Args:
        commands: The queue's Redis commands.
        metrics: The gauges to set.
        on_error: ``on_error(site, exc)`` when a poll fails (the gauges keep their values).
        interval_s: Seconds between polls.
        losses: The consumer's ``LossWatch``, fed with what each poll reads.
    """

    def __init__(
        self,
        commands: StreamCommands,
        metrics: QueueMetrics,
        on_error: Callable[[str, BaseException], None],
        interval_s: float = POLL_S,
        losses: LossWatch | None = None,
    ) -> None:
        self._losses = losses
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
        epoch = self._commands.current_epoch().get("id")
        backlog = int(client.xlen(o.stream))
        dead = int(client.xlen(o.dead_stream))
        pending = 0
        lag: int | None = None
        last_id = last_delivered = None
        info, groups = _stream_info(client, o.stream)
        if info.get("last-generated-id") is not None:
            last_id = as_text(info["last-generated-id"])
        for group in groups:
            if as_text(group.get("name") or "") == o.group:
                pending = int(group.get("pending") or 0)
                raw_lag = group.get("lag")
                lag = None if raw_lag is None else int(raw_lag)
                raw_last = group.get("last-delivered-id")
                last_delivered = None if raw_last is None else as_text(raw_last)
        self._metrics.set_stream_state(backlog, pending, 0 if not backlog else lag, dead)
        if self._losses is not None:  # the ends first: against the length seen before
            self._losses.saw_ends(epoch, last_id, last_delivered)
            self._losses.saw(epoch, backlog)

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


def _stream_info(client: Any, stream: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``XINFO STREAM`` and ``XINFO GROUPS`` (empty when the stream does not exist)."""
    try:
        return dict(client.xinfo_stream(stream)), list(client.xinfo_groups(stream))
    except Exception as exc:
        if "no such key" in str(exc).lower():
            return {}, []
        raise
