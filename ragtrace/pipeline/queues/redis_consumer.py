"""The worker's side of the Redis queue: read a consumer group, reclaim, dead-letter, acknowledge.

``get_batch`` reads new entries with ``XREADGROUP`` (blocking at most ``wait_s``). Every
``reclaim_every_s`` one thread also runs ``XAUTOCLAIM`` over the whole group's pending list, so
entries left idle for ``reclaim_idle_s`` by *any* consumer (a worker that died, or this one
before a restart) are taken over, not only this consumer's own. Reclaimed entries are claimed
one at a time, just before each is evaluated alone, and a process holds at most one reclaimed
entry at a time (until it is acknowledged or released, or for ``reclaim_idle_s`` at most), so a
record that kills its process cannot take the records it shared a batch with, nor another
reclaimed record a second reading thread holds, down with it again; one delivered more than
``max_deliveries`` times goes to the dead-letter stream. An entry that cannot be decoded goes
to the dead-letter stream at once. ``ack(items)`` acknowledges and deletes what the sinks have
published; nothing is acknowledged earlier, so a worker killed mid-batch loses nothing.

Events are reported through ``on_event(name, n)``: ``reclaimed``, ``acknowledged``,
``dead_lettered:<reason>`` and ``deleted_pending`` (an entry deleted while still pending, which
only trimming by hand can cause; ``XAUTOCLAIM`` reports it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from ragtrace.pipeline.queues.base import WorkItem
from ragtrace.pipeline.queues.codec import CodecError, decode_item
from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.pipeline.queues.redis_streams import (
    StreamCommands,
    as_text,
    connect,
    entry_field,
)

EventHook = Callable[[str, int], None]
ErrorHook = Callable[[str, BaseException], None]
BatchHook = Callable[[float], None]
_MAX_TRACKED_BATCHES = 4096
_MAX_CLAIMS_PER_CALL = 32


class RedisConsumer:
    """A consuming ``WorkQueue`` over a Redis stream's consumer group.

    Args:
        options: Stream, group, consumer name, reclaim and dead-letter settings.
        on_event: ``on_event(name, n)`` for reclaims, acknowledgements and dead letters.
        on_error: ``on_error(site, exc)`` for broker errors (``get_batch`` then returns []).
        on_batch: ``on_batch(seconds)`` when a batch is acknowledged, timed from its read.
        client: A ready ``redis.Redis`` (default: one made from ``options.url``).
    """

    role: Literal["consume"] = "consume"
    full_reason = "queue_full"

    def __init__(
        self,
        options: RedisQueueOptions,
        *,
        on_event: EventHook | None = None,
        on_error: ErrorHook | None = None,
        on_batch: BatchHook | None = None,
        client: Any = None,
    ) -> None:
        self.options = options
        self.commands = StreamCommands(client if client is not None else connect(options), options)
        self._on_event = on_event or (lambda name, n: None)
        self._on_error = on_error or (lambda site, exc: None)
        self._on_batch = on_batch or (lambda seconds: None)
        self._read_at: dict[str, float] = {}
        self._cursor = "0-0"
        self._reclaim_lock = threading.Lock()
        self._next_reclaim = 0.0
        self._reclaimed: tuple[str, float] | None = None  # (receipt, since) held by this process
        self._group_ready = False
        self._closed = False
        self._lock = threading.Lock()
        self.unacked = 0
        self.last_read = 0.0
        """``time.monotonic()`` of the last read that reached Redis (0: none yet)."""
        self.last_ack = 0.0
        """``time.monotonic()`` of the last acknowledgement that reached Redis (0: none yet)."""

    @property
    def reclaim_every_s(self) -> float:
        return min(15.0, max(0.2, self.options.reclaim_idle_s / 4))

    def put(self, item: WorkItem) -> bool:
        """A worker evaluates; it does not submit."""
        return False

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` entries: a redelivered one alone, else new ones."""
        if self._closed:
            return []
        try:
            if not self._group_ready:
                self.commands.ensure_group()
                self._group_ready = True
            reclaimed = None
            if time.monotonic() >= self._next_reclaim and self._may_reclaim():
                reclaimed = self._reclaim_one()
            items = [reclaimed] if reclaimed is not None else self._read(max_items, wait_s)
        except Exception as exc:
            self._on_error("redis_queue.read", exc)
            time.sleep(min(wait_s, 0.5))  # the broker is down: do not spin
            return []
        if items:
            with self._lock:
                self.unacked += len(items)
                if len(self._read_at) >= _MAX_TRACKED_BATCHES:  # batches that never came back
                    self._read_at.clear()
                self._read_at[items[0].receipt or ""] = time.monotonic()
        return items

    def ack(self, items: list[WorkItem]) -> None:
        """Acknowledge and delete published entries (raises when Redis is unreachable)."""
        ids = [item.receipt for item in items if item.receipt is not None]
        self._done_with(ids)
        with self._lock:
            self.unacked = max(0, self.unacked - len(items))
            read_at = self._read_at.pop(ids[0], None) if ids else None
        if not ids:
            return
        acked = self.commands.ack(ids)
        self.last_ack = time.monotonic()
        self._on_event("acknowledged", acked)
        if read_at is not None:
            self._on_batch(self.last_ack - read_at)

    def release(self, items: list[WorkItem]) -> None:
        """Give up ``items`` without acknowledging them: Redis delivers them again after
        ``reclaim_idle_s`` (and dead-letters them after ``max_deliveries``)."""
        self._done_with([item.receipt for item in items if item.receipt is not None])
        with self._lock:
            self.unacked = max(0, self.unacked - len(items))
            if items and items[0].receipt is not None:
                self._read_at.pop(items[0].receipt, None)

    def task_done(self, n: int) -> None:
        """Finished items are acknowledged (``ack``) or left pending (``release``) already."""

    def flush(self, timeout_s: float) -> bool:
        """Nothing is put here: the stream is filled by other processes."""
        return True

    def depth(self) -> int:
        """Entries held here and not handed out: none (the stream holds them)."""
        return 0

    def close(self) -> None:
        """Stop reading; what was read and not acknowledged stays pending in Redis."""
        self._closed = True

    def take_remaining(self) -> int:
        """Nothing waits here: the stream keeps what was not read."""
        return 0

    # -- reading ------------------------------------------------------------------------------

    def _read(self, max_items: int, wait_s: float) -> list[WorkItem]:
        o = self.options
        reply = self.commands.client.xreadgroup(
            o.group,
            o.consumer,
            {o.stream: ">"},
            count=max(1, min(max_items, o.batch)),
            block=max(1, int(wait_s * 1000)),
        )
        self.last_read = time.monotonic()
        items: list[WorkItem] = []
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                item = self._decode(as_text(entry_id), fields, deliveries=1)
                if item is not None:
                    items.append(item)
        return items

    def _decode(self, entry_id: str, fields: Any, deliveries: int) -> WorkItem | None:
        payload = entry_field(fields)
        try:
            return replace(decode_item(payload), receipt=entry_id)
        except CodecError as exc:
            self._dead_letter(entry_id, payload, f"decode:{exc.reason}", deliveries)
            return None

    def _dead_letter(self, entry_id: str, payload: bytes, reason: str, deliveries: int) -> None:
        if self.commands.dead_letter(entry_id, payload, reason, deliveries):
            self._on_event(f"dead_lettered:{reason.split(':', maxsplit=1)[0]}", 1)

    # -- reclaiming ---------------------------------------------------------------------------

    def _may_reclaim(self) -> bool:
        """No reclaimed entry is held here (one held past ``reclaim_idle_s`` no longer counts:
        Redis would hand it to another consumer by then)."""
        held = self._reclaimed
        return held is None or time.monotonic() - held[1] > self.options.reclaim_idle_s

    def _done_with(self, receipts: list[str]) -> None:
        held = self._reclaimed
        if held is not None and held[0] in receipts:
            self._reclaimed = None

    def _reclaim_one(self) -> WorkItem | None:
        """Take over one entry idle past ``reclaim_idle_s`` from any consumer of the group.

        One at a time, just before it is evaluated: an entry's delivery count grows only when
        a worker really tries it, so the records a poison one shared a batch with are not
        dead-lettered with it. Entries delivered too often are dead-lettered on the way.
        """
        if not self._reclaim_lock.acquire(blocking=False):
            return None  # another thread is at it; this one reads new entries
        try:
            if not self._may_reclaim():  # another thread took one since this one looked
                return None
            for _ in range(_MAX_CLAIMS_PER_CALL):
                claimed = self._claim_next()
                if claimed is None:
                    self._next_reclaim = time.monotonic() + self.reclaim_every_s
                    return None
                entry_id, fields = claimed
                deliveries = self._deliveries(entry_id)
                if deliveries > self.options.max_deliveries:
                    payload = entry_field(fields)
                    self._dead_letter(entry_id, payload, "max_deliveries", deliveries)
                    continue
                item = self._decode(entry_id, fields, deliveries)
                if item is not None:
                    self._reclaimed = (entry_id, time.monotonic())
                    self._on_event("reclaimed", 1)
                    return item
            return None
        finally:
            self._reclaim_lock.release()

    def _claim_next(self) -> tuple[str, Any] | None:
        """The next idle entry, now this consumer's; None when there is none."""
        o = self.options
        while True:
            reply = self.commands.client.xautoclaim(
                o.stream,
                o.group,
                o.consumer,
                min_idle_time=int(o.reclaim_idle_s * 1000),
                start_id=self._cursor,
                count=1,
            )
            self._cursor = as_text(reply[0])
            deleted = reply[2] if len(reply) > 2 else []
            if deleted:
                self._on_event("deleted_pending", len(deleted))
            for entry_id, fields in reply[1]:
                if fields is not None:
                    return as_text(entry_id), fields
            if self._cursor == "0-0":
                return None

    def _deliveries(self, entry_id: str) -> int:
        """How many times ``entry_id`` has been delivered (this claim included)."""
        o = self.options
        rows = self.commands.client.xpending_range(
            o.stream, o.group, min=entry_id, max=entry_id, count=1
        )
        return int(rows[0]["times_delivered"]) if rows else 1


def _entry_order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
