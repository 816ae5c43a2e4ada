"""Queue backends between ``submit`` and the evaluation workers: the protocols of a queue's two
ends (``base``), the in-process default ``MemoryQueue`` and the Redis queue's two sides."""

from __future__ import annotations

from ragtrace._pipeline.queues.base import (
    Shipper,
    WorkConsumer,
    WorkItem,
    WorkProducer,
    WorkQueue,
)
from ragtrace._pipeline.queues.memory import MemoryQueue

__all__ = [
    "MemoryQueue",
    "Shipper",
    "WorkConsumer",
    "WorkItem",
    "WorkProducer",
    "WorkQueue",
]
