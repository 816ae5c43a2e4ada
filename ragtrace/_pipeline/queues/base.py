"""The seam between ``submit`` and the evaluation workers: a work item and the protocols of
the two ends of a queue.

``submit`` puts items on a ``WorkProducer``; worker threads take them off a ``WorkConsumer``.
A queue with both ends in this process is a ``WorkQueue`` (both protocols, and
``take_remaining``): the in-process default, ``MemoryQueue``, a bounded deque whose ``put``
never blocks and returns False when full (the caller counts the drop). A queue that sends its
items to other processes is a ``Shipper`` (the Redis shipper: the application evaluates
nothing), and one that reads what other processes sent is only a ``WorkConsumer`` (the Redis
consumer of ``ragtrace worker``). Work items hold only the record and evaluator names, so they
serialise without code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ragtrace._model import Evaluation, RagRecord


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
            (``ragtrace._pipeline.raw_text``); only in the process that has it, never encoded.
        ship_unevaluated: Send it to the workers even when no evaluator was chosen: a turn
            of a conversation the workers score as a whole (``ragtrace._pipeline
            .conversations``). Never encoded (the workers need no flag: they see the turn).
    """

    record: RagRecord
    evaluators: tuple[str, ...] | None
    done: tuple[Evaluation, ...] = ()
    receipt: str | None = None
    key: str | None = None
    raw: RagRecord | None = None
    ship_unevaluated: bool = False


class WorkProducer(Protocol):
    """The end ``submit`` puts items on."""

    @property
    def full_reason(self) -> str:
        """The drop reason counted when ``put`` refuses an item."""

    def put(self, item: WorkItem) -> bool:
        """Add an item without blocking; False when the queue is full or closed."""

    def flush(self, timeout_s: float) -> bool:
        """Wait until every item put here has been dealt with: evaluated in this process
        (``task_done``), or sent elsewhere; False on timeout."""

    def depth(self) -> int:
        """Items waiting here."""

    def close(self) -> None:
        """Refuse new items (and wake every waiting consumer of an in-process queue)."""


class WorkConsumer(Protocol):
    """The end worker threads take items from."""

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` items, waiting up to ``wait_s`` for the first; [] on timeout."""

    def publishable(self, items: list[WorkItem]) -> list[bool]:
        """Per item, whether to publish it now (called after evaluating a batch, before the
        sinks): a queue shared by several consumers says False for an item another consumer
        has taken over or whose record was published already, and counts it as a duplicate.

        May raise when a remote queue is unreachable; the caller then releases the batch.
        """

    def ack(self, items: list[WorkItem]) -> None:
        """The sinks have published ``items``: forget them (a remote queue acknowledges).

        May raise when a remote queue is unreachable; the items are then delivered again.
        """

    def release(self, items: list[WorkItem]) -> None:
        """``items`` could not be published: a remote queue delivers them again later."""

    def task_done(self, n: int) -> None:
        """``n`` items taken with ``get_batch`` are finished: published, released, or dropped
        and counted (``flush`` of an in-process queue waits for this)."""

    def close(self) -> None:
        """Stop handing out items and wake every thread waiting in ``get_batch``."""


class WorkQueue(WorkProducer, WorkConsumer, Protocol):
    """A queue whose both ends are in this process (``MemoryQueue``; ``ragtrace ingest``'s):
    what the workers fail to evaluate is lost here, and what is left at shutdown is counted."""

    def take_remaining(self) -> int:
        """After ``close``: drop the items still waiting and return how many, for the caller
        to count."""


class Shipper(WorkProducer, Protocol):
    """A producer whose items are evaluated by other processes (the Redis shipper): this
    process starts no workers for it."""

    @property
    def connected(self) -> bool:
        """Whether the last send reached the other end (False while it is unreachable)."""

    def choose_with(self, choose: Callable[[WorkItem], WorkItem]) -> None:
        """Have items queued with ``evaluators=None`` given their evaluators by ``choose``
        (the pipeline's sampler) before they leave, off the request path."""

    def room(self) -> int:
        """How many more items ``put`` takes now (0 when closed)."""

    def hold_when_full(self) -> None:
        """From now on keep items the other end refuses as full and send them again, instead
        of dropping them: for a caller that refuses its own senders when ``room`` runs out
        (``ragtrace ingest``)."""

    def end_session(self, session_id: str) -> bool:
        """Tell the other processes that conversation ``session_id`` has ended, so that they
        score it without waiting for it to go quiet; False (counted) when that could not be
        said. Never raises."""

    def after_fork(self) -> None:
        """In a forked child: forget the parent's threads, connections and buffered items."""


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The public members ``protocol`` declares, its bases' included (read off the classes)."""
    names: dict[str, None] = {}
    for cls in reversed(protocol.__mro__):
        if not getattr(cls, "_is_protocol", False) or cls is Protocol:
            continue
        for name, member in vars(cls).items():
            if not name.startswith("_") and (
                inspect.isfunction(member) or isinstance(member, property)
            ):
                names[name] = None
    return tuple(names)


def check_protocol(obj: object, protocol: type) -> None:
    """Raise a TypeError naming the members of ``protocol`` that ``obj`` lacks (methods must be
    callable): a worker thread would otherwise die on the first missing call."""
    missing = []
    for name in protocol_members(protocol):
        declared = getattr(protocol, name)
        found = getattr(obj, name, None)
        if found is None or (not isinstance(declared, property) and not callable(found)):
            missing.append(name)
    if missing:
        raise TypeError(
            f"{type(obj).__name__} is not a {protocol.__name__}: it lacks {', '.join(missing)} "
            f"({protocol.__module__}.{protocol.__name__})"
        )
