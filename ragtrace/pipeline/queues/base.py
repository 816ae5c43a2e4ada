"""The seam between ``submit`` and the evaluation workers: a work item and the queue protocol.

The in-process default (``MemoryQueue``) is a bounded deque: ``put`` never blocks and returns
False when full (the caller counts the drop). A distributed backend (e.g. a Redis Streams
consumer group, so workers run on other machines) implements the same ``WorkQueue`` protocol;
work items hold only the record and evaluator names, so they serialise without code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ragtrace.exporters.base import Evaluation
from ragtrace.model import RagRecord


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One record waiting for evaluation.

    Attributes:
        record: The finished request.
        evaluators: Names of the evaluators the sampler chose for it (cheap-first order).
        done: Evaluations already made on the request thread (inline evaluators).
    """

    record: RagRecord
    evaluators: tuple[str, ...]
    done: tuple[Evaluation, ...] = ()


class WorkQueue(Protocol):
    """What the pipeline needs from a queue."""

    def put(self, item: WorkItem) -> bool:
        """Add an item without blocking; False when the queue is full or closed."""

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` items, waiting up to ``wait_s`` for the first; [] on timeout."""

    def depth(self) -> int:
        """Items waiting."""

    def close(self) -> None:
        """Refuse new items and wake every waiting consumer."""
