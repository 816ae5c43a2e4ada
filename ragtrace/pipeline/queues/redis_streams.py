"""The Redis commands of the queue, each one atomic: add under a cap, acknowledge, dead-letter.

Three Lua scripts keep the stream's invariants on the server, so no crash between two commands
can break them:

- ``add``: append entries while the stream holds fewer than ``max_backlog`` (never ``MAXLEN``
  trimming, which deletes entries still pending for a consumer); returns how many went in.
- ``ack``: ``XACK`` then ``XDEL`` the entries a worker has published, and count the ones that
  were still pending as published (an entry published twice, after a reclaim, counts once).
- ``dead``: copy an entry to the dead-letter stream with its reason, then ``XACK`` and ``XDEL``
  it (only if it was still pending, so two workers cannot both dead-letter it).

``connect`` imports the client lazily and names the extra to install when it is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace.pipeline.queues.redis_options import RedisQueueOptions

FIELD = "item"
"""The stream entry's field that holds the encoded work item."""

_ADD = """
local cap = tonumber(ARGV[1])
local n = redis.call('XLEN', KEYS[1])
local added = 0
for i = 2, #ARGV do
  if n >= cap then break end
  redis.call('XADD', KEYS[1], '*', 'item', ARGV[i])
  n = n + 1
  added = added + 1
end
if added > 0 then redis.call('HINCRBY', KEYS[2], 'submitted', added) end
return added
"""

_ACK = """
local acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 2))
redis.call('XDEL', KEYS[1], unpack(ARGV, 2))
if acked > 0 then redis.call('HINCRBY', KEYS[2], 'published', acked) end
return acked
"""

_DEAD = """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #pending == 0 then return 0 end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'item', ARGV[3], 'reason', ARGV[4],
           'id', ARGV[2], 'deliveries', ARGV[5], 'group', ARGV[1])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'dead_lettered', 1)
return 1
"""

DEAD_LETTER_KEEP = 100_000
"""Entries the dead-letter stream keeps (approximately; the oldest go first)."""


def connect(options: RedisQueueOptions) -> Any:
    """A ``redis.Redis`` client for ``options.url`` with short timeouts.

    Raises:
        ImportError: The ``redis`` package is missing, naming the extra to install.
    """
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise ImportError(
            "the Redis queue needs the client: pip install 'ragtrace[redis]'"
        ) from exc
    return redis.Redis.from_url(
        options.connection_url,
        socket_timeout=options.timeout_s,
        socket_connect_timeout=options.timeout_s,
        health_check_interval=30,
    )


class StreamCommands:
    """The queue's scripts and reads, bound to one client and one set of options."""

    def __init__(self, client: Any, options: RedisQueueOptions) -> None:
        self.client = client
        self.options = options
        self._add = client.register_script(_ADD)
        self._ack = client.register_script(_ACK)
        self._dead = client.register_script(_DEAD)

    def add(self, payloads: Sequence[bytes]) -> int:
        """Append payloads while the backlog allows; how many were added (in order)."""
        o = self.options
        return int(self._add(keys=[o.stream, o.stats_key], args=[o.max_backlog, *payloads]))

    def ack(self, ids: Sequence[str]) -> int:
        """Acknowledge and delete published entries; how many were still pending."""
        if not ids:
            return 0
        o = self.options
        return int(self._ack(keys=[o.stream, o.stats_key], args=[o.group, *ids]))

    def dead_letter(self, entry_id: str, payload: bytes, reason: str, deliveries: int) -> bool:
        """Move one pending entry to the dead-letter stream; False if no longer pending."""
        o = self.options
        keys = [o.stream, o.stats_key, o.dead_stream]
        args = [o.group, entry_id, payload, reason, deliveries, DEAD_LETTER_KEEP]
        return bool(self._dead(keys=keys, args=args))

    def ensure_group(self) -> None:
        """Create the consumer group (and the stream) if missing; reads from the start."""
        try:
            self.client.xgroup_create(
                self.options.stream, self.options.group, id="0", mkstream=True
            )
        except Exception as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def stats(self) -> dict[str, int]:
        """The fleet's counters: submitted, published, dead_lettered."""
        raw = self.client.hgetall(self.options.stats_key)
        return {as_text(k): int(v) for k, v in raw.items()}


def as_text(value: bytes | str) -> str:
    """A reply value (bytes from the client) as text."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def entry_field(fields: Any, name: str = FIELD) -> bytes:
    """One field of a stream entry as bytes (b"" when absent)."""
    fields = fields or {}
    value = fields.get(name.encode(), fields.get(name, b""))
    return value if isinstance(value, bytes) else str(value).encode()
