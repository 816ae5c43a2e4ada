"""The application's side of the Redis queue: ship sampled work items, evaluate nothing here.

``put`` appends to a bounded local buffer and returns at once (no I/O, no encoding, no
sampling on the request thread); one background thread asks the sampler about items queued
without a choice (``choose_with``; items it chose nothing for stay here, unless marked
``ship_unevaluated``: a turn of a conversation the workers score), encodes the items
and adds them to the stream in batches
(one Lua call per batch, short socket timeouts). While Redis is down or slow the buffer fills;
when it is full ``put`` refuses (``buffer_full``). The sender reconnects with exponential
backoff and keeps the batch it failed to send, so nothing is lost while the buffer has room.
Each item gets an idempotency key when it is first sent, kept through every retry: when a send
timed out but did reach Redis (a stalled server), the retry does not add the record twice.
Every drop is reported with its reason through ``on_drop``:

- ``buffer_full``: the local buffer was full (broker down or slower than the app);
- ``queue_full``: the stream already held ``max_backlog`` entries (the workers are behind);
  after ``hold_when_full()`` (``ragtrace ingest``, which answers its senders 429 instead) such
  records stay in the buffer and are sent again after a short backoff, never dropped;
- ``too_large``: the encoded record was over ``max_entry_bytes``;
- ``encode_error``: the record could not be encoded;
- ``shutdown``: still buffered when ``close`` ran out of time.

Each add also reads the stream's epoch and length: a stream Redis lost and that came back with a
new epoch is reported once through ``on_reset`` (``queue_reset:<reason>`` and
``data_lost:<reason>`` with the records possibly lost, see ``redis_losses``) and logged.

``flush(timeout_s)`` waits until the buffer is empty and the last batch is in Redis; ``room()``
says how many more items ``put`` takes now. ``end_session(id)`` writes a conversation's end mark
for the workers (``redis_sessions.SessionEndMarks``) on the caller's thread, over the sender's
client: at most the socket timeout (``timeout_s``); a mark not written is a drop
(``session_end_failed``, ``session_ends_full``).
"""

from __future__ import annotations

import logging
import random
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._pipeline.queues.base import WorkItem
from ragtrace._pipeline.queues.codec import encode_item
from ragtrace._pipeline.queues.redis_losses import LossWatch
from ragtrace._pipeline.queues.redis_sessions import (
    SESSION_END_FAILED,
    SESSION_ENDS_FULL,
    SessionEndMarks,
)
from ragtrace._pipeline.queues.redis_streams import (
    ADDED,
    DUPLICATE,
    StreamCommands,
    close_client,
    connect,
)

DropHook = Callable[[str, int], None]
ErrorHook = Callable[[str, BaseException], None]

MIN_BACKOFF_S = 0.05
MAX_BACKOFF_S = 5.0
MAX_FULL_BACKOFF_S = 0.5
"""Longest wait before sending again records the stream refused as full (``hold_when_full``)."""
_log = logging.getLogger(__name__)
_Queued = tuple[WorkItem, bytes | None]
"""A buffered item, with its payload once it was encoded (kept for retries)."""


class RedisShipper:
    """A ``Shipper``: items go to a Redis stream for ``ragtrace worker``.

    Args:
        options: Where and how (see ``RedisQueueOptions``).
        on_drop: ``on_drop(reason, n)`` for every record that will never reach the stream.
        on_error: ``on_error(site, exc)`` for broker errors (the app never sees them).
        on_shipped: ``on_shipped(n)`` when ``n`` records reached the stream.
        on_reset: ``on_reset(name, n)`` when the stream was lost since the last add
            (``queue_reset:<reason>``, ``data_lost:<reason>``; see ``redis_losses``).
        client: A ready ``redis.Redis`` (default: one made from ``options.url`` on first use).
    """

    full_reason = "buffer_full"

    def __init__(
        self,
        options: RedisQueueOptions,
        *,
        on_drop: DropHook | None = None,
        on_error: ErrorHook | None = None,
        on_shipped: Callable[[int], None] | None = None,
        on_reset: Callable[[str, int], None] | None = None,
        client: Any = None,
    ) -> None:
        self.options = options
        self._hold = False
        self._on_shipped = on_shipped or (lambda n: None)
        self._on_drop = on_drop or (lambda reason, n: None)
        self._on_error = on_error or (lambda site, exc: None)
        self._on_reset = on_reset or (lambda name, n: None)
        self._losses: LossWatch | None = None
        self._client = client
        self._choose: Callable[[WorkItem], WorkItem] | None = None
        self._commands: StreamCommands | None = None
        self._end_marks: SessionEndMarks | None = None
        self._connecting = threading.Lock()
        self._buffer: deque[_Queued] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._in_flight = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self.connected = False
        self.shipped = 0

    def choose_with(self, choose: Callable[[WorkItem], WorkItem]) -> None:
        """Let the sender thread give items queued with ``evaluators=None`` their evaluators
        (the pipeline's sampler), so that sampling happens off the request path too."""
        self._choose = choose

    def hold_when_full(self) -> None:
        """Keep records the stream refuses as full and send them again, instead of dropping
        them (``queue_full``): for a caller that refuses its own senders when ``room()`` runs
        out (``ragtrace ingest``)."""
        self._hold = True

    # -- the request thread -------------------------------------------------------------------

    def put(self, item: WorkItem) -> bool:
        """Buffer one item for the sender; False (a ``buffer_full`` drop) when full or closed."""
        with self._cond:
            # A batch in flight still holds its room: if sending fails it comes back.
            if self._closed or len(self._buffer) + self._in_flight >= self.options.buffer:
                return False
            self._buffer.append((item, None))
            if self._thread is None:
                self._start()
            if len(self._buffer) == 1:
                self._cond.notify()
            return True

    def end_session(self, session_id: str) -> bool:
        """Mark conversation ``session_id`` ended for the workers (they score it once the mark
        is ``END_GRACE_S`` old). False, counted as a drop, when the mark was not written (Redis
        unreachable within ``timeout_s``, or too many marks waiting); never raises."""
        if self._closed:
            return False
        try:
            if self._end_marks is None:
                self._end_marks = SessionEndMarks(self._stream().client, self.options.stream)
            written = self._end_marks.mark(session_id)
        except Exception as exc:
            self._on_error("redis_queue.end_session", exc)
            self._on_drop(SESSION_END_FAILED, 1)
            return False
        if not written:
            self._on_drop(SESSION_ENDS_FULL, 1)
        return written

    def depth(self) -> int:
        """Items buffered here, not yet in Redis."""
        return len(self._buffer) + self._in_flight

    def room(self) -> int:
        """How many more items ``put`` takes now (0 when closed)."""
        if self._closed:
            return 0
        return max(0, self.options.buffer - len(self._buffer) - self._in_flight)

    def flush(self, timeout_s: float) -> bool:
        """Wait until everything buffered is in Redis (or refused and counted)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._buffer or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.05))
        return True

    def close(self) -> None:
        """Refuse new items; what is still buffered is counted as ``shutdown`` (``flush`` first
        to send it). The connections of a client made here are closed once the sender is done
        (a client given to the constructor stays open: it is its owner's)."""
        with self._cond:
            self._closed = True
            left = len(self._buffer)
            self._buffer.clear()
            self._cond.notify_all()
        if left:
            self._on_drop("shutdown", left)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(0.1, self.options.timeout_s))
            if thread.is_alive():
                return  # still sending: it keeps its connection until the process ends
        if self._commands is not None and self._client is None:
            close_client(self._commands.client)

    def after_fork(self) -> None:
        """In a forked child: the parent's thread and connections are not ours."""
        self._cond = threading.Condition(threading.Lock())
        self._buffer = deque()
        self._in_flight = 0
        self._thread = None
        self._client = None
        self._commands = None
        self._end_marks = None
        self._connecting = threading.Lock()
        self._losses = None

    # -- the sender thread --------------------------------------------------------------------

    def _start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name="ragtrace-redis-shipper", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        backoff = full_backoff = MIN_BACKOFF_S
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            encoded = self._encode(batch)
            try:
                held = self._send(encoded)
                backoff = MIN_BACKOFF_S
            except Exception as exc:
                self._retry_later(encoded, exc)
                time.sleep(backoff * (0.5 + random.random()))
                backoff = min(MAX_BACKOFF_S, backoff * 2)
                continue
            finally:
                with self._cond:
                    self._in_flight = 0
                    self._cond.notify_all()
            if held:  # the stream is full: wait for the workers before sending again
                time.sleep(full_backoff * (0.5 + random.random()))
                full_backoff = min(MAX_FULL_BACKOFF_S, full_backoff * 2)
            else:
                full_backoff = MIN_BACKOFF_S

    def _next_batch(self) -> list[_Queued] | None:
        with self._cond:
            while not self._buffer:
                if self._closed:
                    return None
                self._cond.wait(0.5)
            n = min(self.options.batch, len(self._buffer))
            batch = [self._buffer.popleft() for _ in range(n)]
            self._in_flight = n
            return batch

    def _encode(self, batch: list[_Queued]) -> list[tuple[WorkItem, bytes]]:
        """The items that can go, with their payloads (and keys); the others are counted drops
        (or, with nothing chosen and nothing done, sampled out: the sampler counted them)."""
        encoded: list[tuple[WorkItem, bytes]] = []
        for queued, ready in batch:
            if ready is not None:  # sent before: the same key and payload again
                encoded.append((queued, ready))
                continue
            item = queued
            try:
                if item.evaluators is None and self._choose is not None:
                    item = self._choose(item)
                    if not item.evaluators and not item.done and not item.ship_unevaluated:
                        continue
                item = replace(item, key=secrets.token_hex(8))
                payload = encode_item(item)
            except Exception as exc:
                self._on_error("redis_queue.encode", exc)
                self._on_drop("encode_error", 1)
                continue
            if len(payload) > self.options.max_entry_bytes:
                self._on_drop("too_large", 1)
                continue
            encoded.append((item, payload))
        return encoded

    def _send(self, encoded: list[tuple[WorkItem, bytes]]) -> bool:
        """Add the batch; True when records refused as full were kept to be sent again."""
        if not encoded:
            return False
        commands = self._stream()
        answers = commands.add([(item.key, payload) for item, payload in encoded])
        self.connected = True
        if self._losses is not None:
            self._losses.saw(commands.epoch, commands.backlog)
        arrived = sum(1 for a in answers if a in (ADDED, DUPLICATE))
        self.shipped += arrived
        self._on_shipped(arrived)
        refused = [e for e, a in zip(encoded, answers, strict=True) if a not in (ADDED, DUPLICATE)]
        if not refused:
            return False
        if not self._hold:
            self._on_drop("queue_full", len(refused))
            return False
        self._put_back(refused)
        return True

    def _retry_later(self, encoded: list[tuple[WorkItem, bytes]], exc: BaseException) -> None:
        """Put the batch back at the front, to be sent again (same keys)."""
        self.connected = False
        self._on_error("redis_queue.ship", exc)
        self._put_back(encoded)

    def _put_back(self, encoded: list[tuple[WorkItem, bytes]]) -> None:
        """Put a sent batch back at the front; what no longer fits is a ``buffer_full`` drop."""
        with self._cond:
            room = max(0, self.options.buffer - len(self._buffer))
            keep = encoded[:room]
            self._buffer.extendleft(reversed(keep))
            self._in_flight = 0  # back in the buffer: counted once while the sender backs off
        if len(encoded) > len(keep):
            self._on_drop("buffer_full", len(encoded) - len(keep))

    def _stream(self) -> StreamCommands:
        """The stream's commands on one client, made on first use (by the sender thread or
        ``end_session``, whichever comes first)."""
        with self._connecting:
            if self._commands is None:
                client = self._client if self._client is not None else connect(self.options)
                commands = StreamCommands(client, self.options)
                self._losses = LossWatch(
                    commands,
                    lambda name, n: self._on_reset(name, n) if n else None,
                    self._on_error,
                    "shipper",
                )
                self._commands = commands
            return self._commands
