"""The worker's side of the Redis queue: read a consumer group, reclaim, dead-letter, acknowledge.

``get_batch`` reads new entries with ``XREADGROUP`` (blocking at most ``wait_s``). Every
``reclaim_every_s`` one thread also runs ``XAUTOCLAIM`` over the whole group's pending list, so
entries left idle for ``reclaim_idle_s`` by *any* consumer (a worker that died, or this one
before a restart) are taken over, not only this consumer's own. Reclaimed entries are claimed
one at a time, just before each is evaluated alone, and a process holds at most one reclaimed
entry at a time (until it is acknowledged or released, or for ``reclaim_idle_s`` at most), so a
record that kills its process cannot take the records it shared a batch with, nor another
reclaimed record a second reading thread holds, down with it again; one delivered more than
``max_deliveries`` times goes to the dead-letter stream. An entry that cannot be decoded (too
large, nested too deep, not a work item) goes to the dead-letter stream at once, reason
``undecodable``.

While entries are held, a heartbeat thread renews their claim every ``reclaim_idle_s / 4``
(``XCLAIM ... JUSTID`` on those still this consumer's), so a healthy worker that takes longer
than ``reclaim_idle_s`` over a batch keeps it; it stops renewing a batch held past
``max_hold_s`` (a stuck worker's work is then reclaimed). The same thread removes consumers
idle past ``consumer_idle_s`` with nothing pending.

Before the sinks publish a batch, ``publishable(items)`` asks Redis which entries are still this
consumer's and were not published already (by idempotency key): the others are duplicates,
counted and not published again. ``ack(items)`` acknowledges and deletes what the sinks have
published and the sinks confirmed delivered (the workers' ``ScoreSinks.deliver``, within
``deliver_timeout_s``); nothing is acknowledged earlier, so a worker killed mid-batch, or one
whose exports are held by an endpoint that is down, loses nothing. A batch not delivered goes
back with ``undelivered(items, sinks)``: counted (``delivery_failed:<sink>``, per entry), logged
(rate-limited), and left pending, so it is reclaimed after ``reclaim_idle_s`` (by any worker)
and dead-lettered after ``max_deliveries`` like any other.

When Redis says ``NOGROUP`` (the stream or the group is gone: a ``FLUSHALL``, a restart without
AOF, a failover to an empty replica), the group is created again at once (``ensure_group``) and
reading goes on. What the lost stream held is gone: ``losses`` (a ``LossWatch``, which the
worker's monitor also feeds) tells a lost stream from a lost group by the stream's epoch, records
the reset with an estimate of the records lost, and reports ``queue_reset:<reason>`` and
``data_lost:<reason>`` (``ragtrace._pipeline.queues.redis_losses``).

Events are reported through ``on_event(name, n)``: ``reclaimed``, ``acknowledged``,
``dead_lettered:<reason>``, ``duplicate:published`` and ``duplicate:reclaimed`` (entries not
published again), ``ack_lost`` (published, but no longer this consumer's when acknowledged),
``delivery_failed:<sink>`` (evaluated and published, not confirmed delivered, left pending),
``renewed``, ``group_recreated``, ``queue_reset:<reason>``, ``data_lost:<reason>``,
``consumers_removed`` and ``deleted_pending`` (an entry
deleted while still pending, which only trimming by hand can cause; ``XAUTOCLAIM`` reports it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._diagnostics import RateLimitedWarning
from ragtrace._pipeline.queues.base import WorkItem
from ragtrace._pipeline.queues.codec import CodecError
from ragtrace._pipeline.queues.redacting import read_item, redacted_payload
from ragtrace._pipeline.queues.redis_losses import LossWatch
from ragtrace._pipeline.queues.redis_streams import (
    ALREADY_PUBLISHED,
    NOT_MINE,
    StreamCommands,
    as_text,
    connect,
    entry_field,
    is_missing_group,
)
from ragtrace._redaction import NO_REDACTION, Redaction

EventHook = Callable[[str, int], None]
ErrorHook = Callable[[str, BaseException], None]
BatchHook = Callable[[float], None]
_MAX_TRACKED_BATCHES = 4096
_MAX_CLAIMS_PER_CALL = 32
_T = TypeVar("_T")
_log = logging.getLogger(__name__)


@dataclass
class _Held:
    """An entry this consumer read and has not acknowledged or released."""

    key: str | None
    since: float
    verdict: int = 0  # ``publishable``'s answer, 0 until asked


class RedisConsumer:
    """A ``WorkConsumer`` over a Redis stream's consumer group.

    Args:
        options: Stream, group, consumer name, reclaim and dead-letter settings.
        on_event: ``on_event(name, n)`` for reclaims, acknowledgements and dead letters.
        on_error: ``on_error(site, exc)`` for broker errors (``get_batch`` then returns []).
        on_batch: ``on_batch(seconds)`` when a batch is acknowledged, timed from its read.
        client: A ready ``redis.Redis`` (default: one made from ``options.url``).
        redaction: The policy each record read and each dead letter goes through, whatever the
            application did (``ragtrace._pipeline.queues.redacting``; the worker's ``redact``).
    """

    def __init__(
        self,
        options: RedisQueueOptions,
        *,
        on_event: EventHook | None = None,
        on_error: ErrorHook | None = None,
        on_batch: BatchHook | None = None,
        client: Any = None,
        redaction: Redaction = NO_REDACTION,
    ) -> None:
        self.options = options
        self._redaction = redaction
        self.commands = StreamCommands(client if client is not None else connect(options), options)
        event = on_event or (lambda name, n: None)
        self._on_event: EventHook = lambda name, n: event(name, n) if n else None
        self._on_error = on_error or (lambda site, exc: None)
        self._on_batch = on_batch or (lambda seconds: None)
        self.losses = LossWatch(self.commands, self._on_event, self._on_error, "worker")
        self._read_at: dict[str, float] = {}
        self._held: dict[str, _Held] = {}
        self._heartbeat: threading.Thread | None = None
        self._wake = threading.Event()
        self._next_prune = 0.0
        self._cursor = "0-0"
        self._reclaim_lock = threading.Lock()
        self._next_reclaim = 0.0
        self._reclaimed: tuple[str, float] | None = None  # (receipt, since) held by this process
        self._group_ready = False
        self._closed = False
        self._lock = threading.Lock()
        self._undelivered_warning = RateLimitedWarning()
        self.unacked = 0
        self.last_read = 0.0
        """``time.monotonic()`` of the last read that reached Redis (0: none yet)."""
        self.last_ack = 0.0
        """``time.monotonic()`` of the last acknowledgement that reached Redis (0: none yet)."""
        self.last_poll = 0.0
        """``time.monotonic()`` of the last ``get_batch`` call (the worker loop is running)."""

    @property
    def reclaim_every_s(self) -> float:
        return min(15.0, max(0.2, self.options.reclaim_idle_s / 4))

    @property
    def renew_every_s(self) -> float:
        """How often held entries' claims are renewed (well within ``reclaim_idle_s``)."""
        return max(0.05, self.options.reclaim_idle_s / 4)

    @property
    def deliver_timeout_s(self) -> float:
        """How long a batch's sinks may take to confirm delivery before it is given back
        (half of ``reclaim_idle_s``, 1 to 10 s; the heartbeat keeps the claim meanwhile)."""
        return min(10.0, max(1.0, self.options.reclaim_idle_s / 2))

    @property
    def oldest_held_s(self) -> float:
        """How long the oldest entry held here has been held (0 when none)."""
        now = time.monotonic()
        with self._lock:
            return max((now - h.since for h in self._held.values()), default=0.0)

    def get_batch(self, max_items: int, wait_s: float) -> list[WorkItem]:
        """Up to ``max_items`` entries: a redelivered one alone, else new ones."""
        self.last_poll = time.monotonic()
        if self._closed:
            return []
        try:
            if not self._group_ready:
                self._ensure_group()
            reclaimed = None
            if time.monotonic() >= self._next_reclaim and self._may_reclaim():
                reclaimed = self._grouped(self._reclaim_one)
            if reclaimed is not None:
                items = [reclaimed]
            else:
                items = self._grouped(lambda: self._read(max_items, wait_s))
            if time.monotonic() >= self._next_prune:
                self.prune()
        except Exception as exc:
            self._on_error("redis_queue.read", exc)
            time.sleep(min(wait_s, 0.5))  # the broker is down: do not spin
            return []
        if items:
            now = time.monotonic()
            with self._lock:
                self.unacked += len(items)
                if len(self._read_at) >= _MAX_TRACKED_BATCHES:  # batches that never came back
                    self._read_at.clear()
                self._read_at[items[0].receipt or ""] = now
                for item in items:
                    self._held[item.receipt or ""] = _Held(item.key, now)
            self._start_heartbeat()
        return items

    def publishable(self, items: list[WorkItem]) -> list[bool]:
        """Which of ``items`` to publish: those still this consumer's whose record was not
        published already. The others are counted (``duplicate:published``: acknowledged
        without publishing; ``duplicate:reclaimed``: another consumer has them now, and
        acknowledges them). Raises when Redis is unreachable (the caller releases the batch)."""
        entries = [(item.receipt, item.key) for item in items if item.receipt is not None]
        verdicts = iter(self._grouped(lambda: self.commands.publishable(entries)))
        out: list[bool] = []
        counts = {ALREADY_PUBLISHED: 0, NOT_MINE: 0}
        with self._lock:
            for item in items:
                if item.receipt is None:
                    out.append(True)
                    continue
                verdict = next(verdicts)
                held = self._held.get(item.receipt)
                if held is not None:
                    held.verdict = verdict
                if verdict in counts:
                    counts[verdict] += 1
                out.append(verdict not in counts)
        self._on_event("duplicate:published", counts[ALREADY_PUBLISHED])
        self._on_event("duplicate:reclaimed", counts[NOT_MINE])
        return out

    def ack(self, items: list[WorkItem]) -> None:
        """Acknowledge and delete published entries still this consumer's, and duplicates
        ``publishable`` found already published (raises when Redis is unreachable)."""
        read_at, held = self._forget(items)
        entries = [
            (i, h.key if h else None, not h or h.verdict != ALREADY_PUBLISHED)
            for i, h in held
            if not h or h.verdict != NOT_MINE
        ]
        if not entries:
            return
        acked = self._grouped(lambda: self.commands.ack(entries))
        self.last_ack = time.monotonic()
        outcomes = [(published, ok) for (_, _, published), ok in zip(entries, acked, strict=True)]
        self._on_event("acknowledged", sum(1 for published, ok in outcomes if published and ok))
        self._on_event("ack_lost", sum(1 for published, ok in outcomes if published and not ok))
        if read_at is not None:
            self._on_batch(self.last_ack - read_at)

    def release(self, items: list[WorkItem]) -> None:
        """Give up ``items`` without acknowledging them: Redis delivers them again after
        ``reclaim_idle_s`` (and dead-letters them after ``max_deliveries``)."""
        self._forget(items)

    def undelivered(self, items: list[WorkItem], sinks: list[str]) -> None:
        """``items`` were published but ``sinks`` did not confirm delivery: count them per
        sink, log (rate-limited) and ``release`` them, so they are delivered again."""
        for sink in sinks:
            self._on_event(f"delivery_failed:{sink}", len(items))
        self._undelivered_warning.warn(
            "ragtrace worker: %d records not acknowledged: %s did not confirm delivery; they "
            "stay pending and are delivered again after %.0f s",
            len(items),
            ", ".join(sinks),
            self.options.reclaim_idle_s,
        )
        self.release(items)
        ids = [item.receipt for item in items if item.receipt is not None]
        try:  # the dead letter's detail only: without it, its reason is max_deliveries alone
            self.commands.note_undelivered(ids, sinks)
        except Exception as exc:
            _log.debug("ragtrace worker: could not note the undelivered sinks: %s", exc)

    def _forget(self, items: list[WorkItem]) -> tuple[float | None, list[tuple[str, _Held | None]]]:
        """Stop holding ``items`` (acknowledged or released): when their batch was read, and
        what was held of each, by receipt."""
        ids = [item.receipt for item in items if item.receipt is not None]
        self._done_with(ids)
        with self._lock:
            self.unacked = max(0, self.unacked - len(items))
            read_at = self._read_at.pop(ids[0], None) if ids else None
            return read_at, [(i, self._held.pop(i, None)) for i in ids]

    def task_done(self, n: int) -> None:
        """Finished items are acknowledged (``ack``) or left pending (``release``) already."""

    def close(self) -> None:
        """Stop reading; what was read and not acknowledged stays pending in Redis (and its
        claim is renewed while it is being finished)."""
        self._closed = True
        self._wake.set()

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
        ids: list[str] = []
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                ids.append(as_text(entry_id))
                item = self._decode(ids[-1], fields, deliveries=1)
                if item is not None:
                    items.append(item)
        self.losses.saw_ids(ids)
        return items

    def _decode(self, entry_id: str, fields: Any, deliveries: int) -> WorkItem | None:
        payload = entry_field(fields)
        try:
            return read_item(payload, entry_id, self.options.max_entry_bytes, self._redaction)
        except CodecError as exc:
            self._dead_letter(entry_id, payload, f"undecodable:{exc.reason}", deliveries)
            return None

    # -- the group ------------------------------------------------------------------------------

    def _ensure_group(self) -> None:
        """Create the group if it is missing; a group that existed before is a reset."""
        created = self.commands.ensure_group()
        if created and self._group_ready:
            self._on_event("group_recreated", 1)
            self.losses.group_recreated(self.commands.epoch)  # logs the warning
        else:
            self.losses.saw(self.commands.epoch)
        self._group_ready = True

    def _grouped(self, call: Callable[[], _T]) -> _T:
        """``call()``; on ``NOGROUP``, create the group again and call once more."""
        try:
            return call()
        except Exception as exc:
            if not is_missing_group(exc):
                raise
        self._ensure_group()
        return call()

    # -- the heartbeat --------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        if self._heartbeat is not None and self._heartbeat.is_alive():
            return
        with self._lock:
            if self._heartbeat is not None and self._heartbeat.is_alive():
                return
            self._heartbeat = threading.Thread(
                target=self._beat, name="ragtrace-queue-heartbeat", daemon=True
            )
            self._heartbeat.start()

    def _beat(self) -> None:
        """Renew held claims (and prune idle consumers) until closed with nothing held."""
        while True:
            self._wake.wait(self.renew_every_s)
            with self._lock:
                idle = not self._held
            if self._closed and idle:
                return
            try:
                self.renew()
                self.prune()
            except Exception as exc:
                self._on_error("redis_queue.renew", exc)

    def renew(self) -> int:
        """Renew the claims of entries held for less than ``max_hold_s``; how many were."""
        now = time.monotonic()
        with self._lock:
            ids = [i for i, h in self._held.items() if now - h.since < self.options.max_hold_s]
        if not ids:
            return 0
        renewed = sum(self._grouped(lambda: self.commands.renew(ids)))
        self._on_event("renewed", renewed)
        return renewed

    def prune(self) -> None:
        """Every ``consumer_idle_s / 4`` at most: remove consumers idle past
        ``consumer_idle_s`` with nothing pending."""
        now = time.monotonic()
        if now < self._next_prune:
            return
        self._next_prune = now + min(300.0, max(1.0, self.options.consumer_idle_s / 4))
        try:
            removed = self.commands.prune_consumers(self.options.consumer_idle_s)
        except Exception as exc:
            if "no such key" in str(exc).lower() or is_missing_group(exc):
                return  # nothing to prune yet: reading creates the group
            raise
        if removed:
            self._on_event("consumers_removed", len(removed))
            _log.info("ragtrace worker: removed idle consumers %s", ", ".join(removed))

    def _dead_letter(self, entry_id: str, payload: bytes, reason: str, deliveries: int) -> None:
        payload = redacted_payload(payload, self._redaction, self.options.max_entry_bytes)
        if self.commands.dead_letter(entry_id, payload, reason, deliveries):
            self._on_event(f"dead_lettered:{reason.split(':', maxsplit=1)[0]}", 1)

    def _why_dead(self, entry_id: str) -> str:
        """``max_deliveries``, with the sinks that last did not confirm the entry's delivery
        when a worker noted them (a destination down, not a record that kills workers)."""
        try:
            sinks = self.commands.undelivered_to(entry_id)
        except Exception:
            sinks = None
        if not sinks:
            return "max_deliveries"
        return f"max_deliveries: {sinks} did not confirm delivery"

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
                deliveries = self.commands.deliveries(entry_id)
                if deliveries > self.options.max_deliveries:
                    payload = entry_field(fields)
                    self._dead_letter(entry_id, payload, self._why_dead(entry_id), deliveries)
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
