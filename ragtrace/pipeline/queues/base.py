"""The seam between ``submit`` and the evaluation workers: a work item and the queue protocol.

The in-process default (``MemoryQueue``) is a bounded deque: ``put`` never blocks and returns
False when full (the caller counts the drop). A distributed backend (e.g. a Redis Streams
consumer group, so workers run on other machines) implements the same ``WorkQueue`` protocol;
work items hold only the record and evaluator names, so they serialise without code.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from ragtrace.exporters.base import Evaluation
from ragtrace.model import RagRecord


@dataclass(slots=True)
class WorkItem:
    """One record waiting for evaluation. Never changed once made (not ``frozen`` only
    because a frozen dataclass costs about a microsecond more to build, on the request path).

    Attributes:
        record: The finished request.
        evaluators: Names of the evaluators the sampler chose for it (cheap-first order);
            None while nothing is chosen (an in-process item: the worker asks the sampler).
            Items that leave the process always name them.
        done: Evaluations already made on the request thread (inline evaluators).
        receipt: What a consuming queue needs to acknowledge the item (a stream entry id);
            None for items that never left the process.
        key: The item's idempotency key, given when it first leaves the process and kept
            through every retry: a queue adds an item with a key it has seen recently only
            once, and a worker never publishes one twice. None in process.
        raw: The record before redaction, for the raw-text evaluators
            (``ragtrace.pipeline.raw_text``); only in the process that has it, never encoded.
    """

    record: RagRecord
    evaluators: tuple[str, ...] | None
    done: tuple[Evaluation, ...] = ()
    receipt: str | None = None
    key: str | None = None
    raw: RagRecord | None = None


QueueRole = Literal["local", "ship", "consume"]
"""``local``: filled and consumed in this process (the default); ``ship``: this process only
fills it and others evaluate (the app with a Redis queue); ``consume``: others fill it and this
process evaluates (``ragtrace worker``)."""


class WorkQueue(Protocol):
    """What the pipeline needs from a queue."""

    @property
    def role(self) -> QueueRole:
        """Where the queue's items are evaluated (see ``QueueRole``)."""

    @property
    def full_reason(self) -> str:
        """The drop reason counted when ``put`` refuses an item."""

    def put(self, item: WorkItem) -> bool:
        """Add an item without blocking; False when the queue is full or closed."""

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` items, waiting up to ``wait_s`` for the first; [] on timeout."""

    def publishable(self, items: list[WorkItem]) -> list[bool]:
        """Per item, whether to publish it now (called after evaluating a batch, before the
        sinks): a consuming queue says False for an item another consumer has taken over or
        whose record was published already, and counts it as a duplicate.

        May raise when a remote queue is unreachable; the caller then releases the batch.
        """

    def ack(self, items: list[WorkItem]) -> None:
        """The sinks have published ``items``: forget them (a consuming queue acknowledges).

        May raise when a remote queue is unreachable; the items are then delivered again.
        """

    def task_done(self, n: int) -> None:
        """``n`` items taken with ``get_batch`` are finished: published, or dropped and counted
        (``flush`` of an in-process queue waits for this)."""

    def flush(self, timeout_s: float) -> bool:
        """Wait until every item put here has been dealt with: evaluated in this process
        (``task_done``), or sent elsewhere; False on timeout."""

    def release(self, items: list[WorkItem]) -> None:
        """``items`` could not be published: a remote queue delivers them again later."""

    def depth(self) -> int:
        """Items waiting."""

    def close(self) -> None:
        """Refuse new items and wake every waiting consumer."""

    def take_remaining(self) -> int:
        """After ``close``: drop the items still waiting here and return how many, for the
        caller to count (a queue that keeps them elsewhere returns 0)."""


QUEUE_METHODS = tuple(
    name
    for name, member in vars(WorkQueue).items()
    if inspect.isfunction(member) and not name.startswith("_")
)
"""What ``WorkQueue`` asks for beside ``role`` and ``full_reason`` (read off the protocol)."""


def check_queue(queue: object) -> None:
    """Raise a TypeError naming what ``queue`` lacks of the ``WorkQueue`` interface (a worker
    thread would otherwise die on the first missing call)."""
    missing = [m for m in QUEUE_METHODS if not callable(getattr(queue, m, None))]
    role = getattr(queue, "role", None)
    if role not in get_args(QueueRole):
        missing.append(f"role (one of {', '.join(get_args(QueueRole))}; got {role!r})")
    if not isinstance(getattr(queue, "full_reason", None), str):
        missing.append("full_reason")
    if missing:
        raise TypeError(
            f"{type(queue).__name__} is not a WorkQueue: it lacks {', '.join(missing)} "
            "(ragtrace.pipeline.queues.base.WorkQueue)"
        )
