"""Noticing that Redis lost the queue: a stream or a consumer group that vanished or went back.

Redis can lose the queue's data without an error anyone sees: a ``FLUSHALL``, a restart without
AOF, a failover to an empty or lagging replica. The queue comes back by itself (``add`` and
``ensure_group`` create what is missing), the counters start again at zero, and without this
module it would look like a fresh deployment. Every process that uses the queue (the shipper in
the application, each worker's consumer and monitor) keeps a ``LossWatch`` with what it saw:

- the stream's epoch (``<stream>:epoch``: an id and a creation time, written once with the
  stream by ``add`` or ``ensure_group``): a different epoch means the stream was lost and made
  again (``stream_reset``);
- the highest entry id it read: a stream whose last id, or a group whose last-delivered id, is
  behind it went back in time (``stream_reset``: entries vanished; ``group_reset``: the group
  was rewound or made again, its entries are delivered again);
- the stream's length when it last looked: the records that were added and not yet published
  then, the estimate of what may be lost with the stream.

A reset is recorded once per fleet in ``<stream>:resets`` (keyed by the new epoch, so every
process that notices the same reset refines one record: the estimate is the largest any of them
saw), reported through ``on_event`` as ``queue_reset:<reason>`` (by the first process to record
it) and ``data_lost:<reason>`` (the records it added to the estimate, so that the fleet's sum is
the record's), and logged as one warning line per process. ``ragtrace queue stats`` shows it.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import Any

from ragtrace._pipeline.queues.redis_streams import StreamCommands, as_text, id_order

STREAM_RESET = "stream_reset"
GROUP_RESET = "group_reset"
REASONS = (STREAM_RESET, GROUP_RESET)
"""Why records may have been lost (the ``reason`` label of ``ragtrace_queue_data_lost_total``)."""

EventHook = Callable[[str, int], None]
ErrorHook = Callable[[str, BaseException], None]
_log = logging.getLogger(__name__)

_RECORD = """
local est = tonumber(ARGV[3])
if redis.call('HGET', KEYS[1], 'last_token') == ARGV[1] then
  local prev = tonumber(redis.call('HGET', KEYS[1], 'last_possibly_lost') or '0')
  if est <= prev then return {0, 0} end
  redis.call('HSET', KEYS[1], 'last_possibly_lost', est)
  redis.call('HINCRBY', KEYS[1], 'possibly_lost', est - prev)
  return {0, est - prev}
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'last_token', ARGV[1], 'last_reason', ARGV[2], 'last_at_ms', ms,
           'last_possibly_lost', est)
redis.call('HINCRBY', KEYS[1], 'resets', 1)
redis.call('HINCRBY', KEYS[1], 'resets:' .. ARGV[2], 1)
redis.call('HINCRBY', KEYS[1], 'possibly_lost', est)
return {1, est}
"""


class LossWatch:
    """What one process saw of the stream, and the resets it finds.

    Args:
        commands: The queue's Redis commands (the reset is recorded through their client).
        on_event: ``on_event(name, n)``: ``queue_reset:<reason>`` and ``data_lost:<reason>``.
        on_error: ``on_error(site, exc)`` when recording a reset fails (it is still reported).
        role: Who watches, for the warning (``worker``, ``shipper``).
    """

    def __init__(
        self,
        commands: StreamCommands,
        on_event: EventHook,
        on_error: ErrorHook | None = None,
        role: str = "worker",
    ) -> None:
        self._commands = commands
        self._record = commands.client.register_script(_RECORD)
        self._on_event = on_event
        self._on_error = on_error or (lambda site, exc: None)
        self._role = role
        self._lock = threading.Lock()
        self.epoch: str | None = None
        self.backlog = 0
        self.highest = (0, 0)

    def saw_ids(self, ids: list[str]) -> None:
        """Entries read from the stream (new ones, delivered for the first time)."""
        if ids:
            top = max(id_order(i) for i in ids)
            with self._lock:
                self.highest = max(self.highest, top)

    def saw(self, epoch: str | None, backlog: int | None = None) -> None:
        """The stream's epoch (None: the key is missing, nothing is known yet) and length."""
        if epoch is None:
            return
        with self._lock:
            before, estimate = self.epoch, self.backlog
            self.epoch = epoch
            changed = before is not None and before != epoch
            if changed:
                self.highest = (0, 0)
            if backlog is not None:
                self.backlog = backlog
        if changed:
            self._report(STREAM_RESET, f"epoch:{epoch}", estimate)

    def saw_ends(self, epoch: str | None, last_id: str | None, last_delivered: str | None) -> None:
        """The stream's last id and the group's last-delivered id, read under ``epoch``: either
        behind the highest id this process read is a reset."""
        with self._lock:
            if epoch is None or epoch != self.epoch or self.highest == (0, 0):
                return
            highest, estimate = self.highest, self.backlog
            stream_back = last_id is not None and id_order(last_id) < highest
            group_back = last_delivered is not None and id_order(last_delivered) < highest
            if stream_back or group_back:
                self.highest = (0, 0)
        if stream_back:
            self._report(STREAM_RESET, f"stream:{epoch}:{last_id}", estimate)
        elif group_back:
            self._report(GROUP_RESET, f"group:{epoch}:{last_delivered}", 0)

    def group_recreated(self, epoch: str | None) -> None:
        """This process created the group again (it was gone): a ``stream_reset`` if the epoch
        changed with it, else a ``group_reset`` (the stream's entries are delivered again)."""
        with self._lock:
            same = epoch is not None and epoch == self.epoch
            if same:
                self.highest = (0, 0)
        if same:
            self._report(GROUP_RESET, f"group:{epoch}:{secrets.token_hex(4)}", 0)
        else:
            self.saw(epoch)

    def _report(self, reason: str, token: str, estimate: int) -> None:
        first, added = True, estimate
        try:
            o = self._commands.options
            reply: Any = self._record(keys=[o.resets_key], args=[token, reason, estimate])
            first, added = bool(int(reply[0])), int(reply[1])
        except Exception as exc:  # counted here all the same
            self._on_error("redis_queue.reset", exc)
        if first:
            self._on_event(f"queue_reset:{reason}", 1)
        if added:
            self._on_event(f"data_lost:{reason}", added)
        _log.warning(
            "ragtrace %s: %s on stream %r (group %r): Redis lost the queue's data or rewound it "
            "(FLUSHALL, a restart without AOF, a failover to an empty or lagging replica); up to "
            "%d records added and not yet published may be lost; see `ragtrace queue stats`",
            self._role,
            reason,
            self._commands.options.stream,
            self._commands.options.group,
            estimate,
        )


def resets(commands: StreamCommands) -> dict[str, Any]:
    """The record of resets in ``<stream>:resets`` (empty when there was none)."""
    raw = commands.client.hgetall(commands.options.resets_key)
    return {as_text(k): as_text(v) for k, v in raw.items()}
