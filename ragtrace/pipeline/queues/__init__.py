"""Queue backends between ``submit`` and the evaluation workers.

``WorkProducer`` is the end ``submit`` puts items on, ``WorkConsumer`` the end the workers take
them from; ``WorkQueue`` is both in one process, ``Shipper`` a producer whose items other
processes evaluate. ``MemoryQueue`` is the in-process default.
"""

from __future__ import annotations

from ragtrace.pipeline.queues.base import (
    Shipper,
    WorkConsumer,
    WorkItem,
    WorkProducer,
    WorkQueue,
)
from ragtrace.pipeline.queues.memory import MemoryQueue

__all__ = [
    "MemoryQueue",
    "Shipper",
    "WorkConsumer",
    "WorkItem",
    "WorkProducer",
    "WorkQueue",
]
