"""The queue ``init`` puts sampled work on: in process by default, a Redis stream when asked.

``queue_url`` (``init(queue_url=...)``, ``RAGTRACE_QUEUE_URL``, or ``queue:`` in the settings
file) makes the application ship-only: records are sampled here, inline evaluators run here,
and everything else is evaluated by ``ragtrace worker`` processes reading the stream.
"""

from __future__ import annotations

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._diagnostics import Diagnostics
from ragtrace._metrics.collection import Metrics
from ragtrace._pipeline.queues.redis_shipper import RedisShipper


def shipping_queue(url: str, metrics: Metrics, diagnostics: Diagnostics) -> RedisShipper:
    """A ``RedisShipper`` for ``url`` whose drops and errors go to ragtrace's metrics.

    Raises:
        ValueError: ``url`` is not a usable Redis URL (the message says why).
    """
    options = RedisQueueOptions.from_url(url)

    def on_drop(reason: str, n: int) -> None:
        for _ in range(n):
            metrics.count_drop(reason)

    def on_reset(name: str, n: int) -> None:
        # Records shipped and not yet evaluated when Redis lost the stream: this process's
        # part of the loss, counted as drops (the workers count theirs in
        # ragtrace_queue_data_lost_total; each process adds only what it saw).
        if name.startswith("data_lost:"):
            on_drop("queue_lost", n)

    return RedisShipper(
        options,
        on_drop=on_drop,
        on_error=diagnostics.error,
        on_shipped=metrics.count_shipped,
        on_reset=on_reset,
    )
