"""Queue backends between ``submit`` and the evaluation workers.

``WorkQueue`` is the protocol every backend implements; ``MemoryQueue`` is the in-process
default.
"""

from __future__ import annotations

from ragtrace.pipeline.queues.base import WorkItem, WorkQueue
from ragtrace.pipeline.queues.memory import MemoryQueue

__all__ = ["MemoryQueue", "WorkItem", "WorkQueue"]
