"""The Redis commands of the queue, each one atomic: add under a cap, claim, acknowledge.

Lua scripts keep the stream's invariants on the server, so no crash or timeout between two
commands can break them:

- ``add``: append entries while the stream holds fewer than ``max_backlog`` (never ``MAXLEN``
  trimming, which deletes entries still pending for a consumer), skipping any whose
  idempotency key was added in the last ``dedupe_s`` (an application's retry after a timeout
  whose first try did reach Redis); one answer per entry.
- ``publishable``: before a worker publishes a batch, which entries are still its own and were
  not published already (by key): the others are duplicates, counted and never published.

Each works on a whole batch in a few commands (one ``XPENDING`` over the batch's id range for
this consumer, one ``HMGET`` per key window, ``XACK``/``XDEL``/``HSET`` with every id at once),
so a record costs about the same number of Redis commands however large the batch.
- ``ack``: ``XACK`` then ``XDEL`` the entries a worker has published, if they are still its own
  (an entry another worker has reclaimed is that worker's to acknowledge), remember their keys
  as published for ``dedupe_s``, and count them (``published``, or ``duplicates``).
- ``renew``: reset the idle time of the entries a worker is still evaluating (``XCLAIM ...
  JUSTID``, which does not count a delivery), if they are still its own: the claim-renewal
  heartbeat, so that reclaiming takes work only from dead or stuck workers.
- ``dead``: copy an entry to the dead-letter stream with its reason, then ``XACK`` and ``XDEL``
  it (only if it was still pending, so two workers cannot both dead-letter it).
- ``ensure_group``: create the consumer group if it is missing (never there yet, or gone with
  the data after a ``FLUSHALL``, a restart without AOF, a failover to an empty replica). An
  empty or missing stream gets the group at ``$``; a stream that still holds entries gets it at
  ``0``, so they are all delivered: an entry is deleted when it is acknowledged, so whatever
  the stream holds has not been published.
- Both ``add`` and ``ensure_group`` write the stream's epoch (``<stream>:epoch``: a random id and
  the creation time) when it is missing, so a stream that Redis lost comes back with a new
  epoch, and everyone who saw the old one can tell (``ragtrace._pipeline.queues.redis_losses``).
- ``prune_consumers``: remove consumers idle past a bound with nothing pending (a worker that
  was killed or scaled away); one with pending entries stays until they are reclaimed.

Idempotency keys live in hashes per time window (``<stream>:keys:<n>``, ``<stream>:done:<n>``,
``n = now // dedupe_s``); a key is looked up in the current and the previous window, and a
window expires ``2 * dedupe_s`` after its last write, so a key is remembered for at least
``dedupe_s``, in memory bounded by the records of about two windows.

``connect`` imports the client lazily and names the extra to install when it is missing.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ragtrace._config.redis_queue import RedisQueueOptions

logger = logging.getLogger(__name__)

FIELD = "item"
"""The stream entry's field that holds the encoded work item."""

ADDED, FULL, DUPLICATE = 1, 0, 2
"""``add``'s answers per entry."""
PUBLISH, ALREADY_PUBLISHED, NOT_MINE = 1, 2, 3
"""``publishable``'s answers per entry."""

# Helpers every script below shares. ``call_chunked`` runs a command whose trailing arguments
# may be many (Lua's ``unpack`` has a stack limit); ``held`` returns the set of ids in ``ids``
# that are pending for consumer ``ARGV[2]`` of group ``ARGV[1]``, with one ``XPENDING`` over
# the batch's id range (``lo``, ``hi``) filtered by consumer.
_LIB = """
local function call_chunked(cmd, key, head, items)
  local result = 0
  for i = 1, #items, 500 do
    local args = {}
    for j = 1, #head do args[#args + 1] = head[j] end
    for j = i, math.min(i + 499, #items) do args[#args + 1] = items[j] end
    local r = redis.call(cmd, key, unpack(args))
    if type(r) == 'number' then result = result + r end
  end
  return result
end
local function found_in(hash, keys, seen)
  for i = 1, #keys, 500 do
    local part = {}
    for j = i, math.min(i + 499, #keys) do part[#part + 1] = keys[j] end
    local values = redis.call('HMGET', hash, unpack(part))
    for j = 1, #part do if values[j] then seen[part[j]] = true end end
  end
end
local function known(keys, current, previous)
  local seen = {}
  if #keys > 0 then
    found_in(current, keys, seen)
    found_in(previous, keys, seen)
  end
  return seen
end
local function remember(hash, fields, keep_ms)
  if #fields > 0 then
    call_chunked('HSET', hash, {}, fields)
    redis.call('PEXPIRE', hash, keep_ms)
  end
end
local function epoch(key, candidate)
  local id = redis.call('HGET', key, 'id')
  if id then return id end
  local t = redis.call('TIME')
  local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', key, 'id', candidate, 'created_ms', ms)
  return candidate
end
local function held(lo, hi)
  local mine = {}
  local rows = redis.call('XPENDING', KEYS[1], ARGV[1], lo, hi, 1000000, ARGV[2])
  for _, row in ipairs(rows) do mine[row[1]] = true end
  return mine
end
"""

_ADD = (
    _LIB
    + """
local cap = tonumber(ARGV[1])
local keep_ms = tonumber(ARGV[2])
local current = epoch(KEYS[5], ARGV[3])
local n = redis.call('XLEN', KEYS[1])
local keys = {}
for i = 4, #ARGV, 2 do if ARGV[i] ~= '' then keys[#keys + 1] = ARGV[i] end end
local seen = known(keys, KEYS[3], KEYS[4])
local added, dup = 0, 0
local out, fields = {}, {}
for i = 4, #ARGV, 2 do
  local key = ARGV[i]
  if key ~= '' and seen[key] then
    dup = dup + 1
    out[#out + 1] = 2
  elseif n >= cap then
    out[#out + 1] = 0
  else
    redis.call('XADD', KEYS[1], '*', 'item', ARGV[i + 1])
    if key ~= '' then
      seen[key] = true
      fields[#fields + 1] = key
      fields[#fields + 1] = 1
    end
    n = n + 1
    added = added + 1
    out[#out + 1] = 1
  end
end
remember(KEYS[3], fields, keep_ms)
if added > 0 then redis.call('HINCRBY', KEYS[2], 'submitted', added) end
if dup > 0 then redis.call('HINCRBY', KEYS[2], 'duplicates_refused', dup) end
return {out, current, n}
"""
)

_PUBLISHABLE = (
    _LIB
    + """
local mine = held(ARGV[3], ARGV[4])
local keys = {}
for i = 5, #ARGV, 2 do if ARGV[i + 1] ~= '' then keys[#keys + 1] = ARGV[i + 1] end end
local done = known(keys, KEYS[2], KEYS[3])
local out = {}
for i = 5, #ARGV, 2 do
  if not mine[ARGV[i]] then
    out[#out + 1] = 3
  elseif ARGV[i + 1] ~= '' and done[ARGV[i + 1]] then
    out[#out + 1] = 2
  else
    out[#out + 1] = 1
  end
end
return out
"""
)

_ACK = (
    _LIB
    + """
local keep_ms = tonumber(ARGV[5])
local mine = held(ARGV[3], ARGV[4])
local ids, fields = {}, {}
local published, dups = 0, 0
local out = {}
for i = 6, #ARGV, 3 do
  local id = ARGV[i]
  if mine[id] then
    ids[#ids + 1] = id
    if ARGV[i + 2] == '1' then published = published + 1 else dups = dups + 1 end
    if ARGV[i + 1] ~= '' then
      fields[#fields + 1] = ARGV[i + 1]
      fields[#fields + 1] = 1
    end
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if #ids > 0 then
  call_chunked('XACK', KEYS[1], {ARGV[1]}, ids)
  call_chunked('XDEL', KEYS[1], {}, ids)
end
remember(KEYS[3], fields, keep_ms)
if published > 0 then redis.call('HINCRBY', KEYS[2], 'published', published) end
if dups > 0 then redis.call('HINCRBY', KEYS[2], 'duplicates', dups) end
return out
"""
)

_RENEW = (
    _LIB
    + """
local mine = held(ARGV[3], ARGV[4])
local ids, out = {}, {}
for i = 5, #ARGV do
  if mine[ARGV[i]] then
    ids[#ids + 1] = ARGV[i]
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
for i = 1, #ids, 500 do
  local args = {ARGV[1], ARGV[2], 0}
  for j = i, math.min(i + 499, #ids) do args[#args + 1] = ids[j] end
  args[#args + 1] = 'JUSTID'  -- after the ids: unpack() must come last in a call
  redis.call('XCLAIM', KEYS[1], unpack(args))
end
return out
"""
)

_DEAD = """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #pending == 0 then return 0 end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*', 'item', ARGV[3], 'reason', ARGV[4],
           'id', ARGV[2], 'deliveries', ARGV[5], 'group', ARGV[1])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('XDEL', KEYS[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], 'dead_lettered', 1)
if string.sub(ARGV[4], 1, 11) == 'undecodable' then
  redis.call('HINCRBY', KEYS[2], 'undecodable', 1)
end
return 1
"""

_ENSURE_GROUP = (
    _LIB
    + """
local current = epoch(KEYS[3], ARGV[2])
local start = '0'
if redis.call('XLEN', KEYS[1]) == 0 then start = '$' end
local made = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], start, 'MKSTREAM')
if type(made) == 'table' and made.err then
  if string.find(made.err, 'BUSYGROUP') then return {0, current} end
  return redis.error_reply(made.err)
end
redis.call('HINCRBY', KEYS[2], 'groups_created', 1)
return {1, current}
"""
)

_PRUNE = """
local removed = {}
local consumers = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
for _, c in ipairs(consumers) do
  local info = {}
  for j = 1, #c, 2 do info[c[j]] = c[j + 1] end
  if info['name'] ~= ARGV[3] and tonumber(info['pending']) == 0
     and tonumber(info['idle']) >= tonumber(ARGV[2]) then
    redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], info['name'])
    removed[#removed + 1] = info['name']
  end
end
return removed
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


def close_client(client: Any) -> None:
    """Close ``client``'s connections; a failure is logged, never raised into a shutdown."""
    try:
        client.close()
    except Exception as exc:
        logger.debug("closing a Redis client: %s", exc)


def is_missing_group(exc: BaseException) -> bool:
    """Whether ``exc`` is Redis saying the stream or its consumer group does not exist."""
    return "NOGROUP" in str(exc)


class StreamCommands:
    """The queue's scripts and reads, bound to one client and one set of options."""

    def __init__(self, client: Any, options: RedisQueueOptions) -> None:
        self.client = client
        self.options = options
        self._add = client.register_script(_ADD)
        self._publishable = client.register_script(_PUBLISHABLE)
        self._ack = client.register_script(_ACK)
        self._renew = client.register_script(_RENEW)
        self._dead = client.register_script(_DEAD)
        self._ensure_group = client.register_script(_ENSURE_GROUP)
        self._prune = client.register_script(_PRUNE)
        self.epoch: str | None = None
        """The stream's epoch id as the last ``add`` or ``ensure_group`` found it."""
        self.backlog: int | None = None
        """The stream's length after the last ``add``."""

    @property
    def _keep_ms(self) -> int:
        return int(2 * self.options.dedupe_s * 1000)

    def _windows(self, kind: str) -> list[str]:
        """The current and the previous key window of ``kind`` (``keys`` or ``done``)."""
        n = int(time.time() // self.options.dedupe_s)
        return [f"{self.options.stream}:{kind}:{n}", f"{self.options.stream}:{kind}:{n - 1}"]

    def add(self, entries: Sequence[tuple[str | None, bytes]]) -> list[int]:
        """Append ``(key, payload)`` entries while the backlog allows: per entry ``ADDED``,
        ``FULL`` (refused: the backlog is at ``max_backlog``) or ``DUPLICATE`` (its key was
        added in the last ``dedupe_s``: it is in the stream already)."""
        if not entries:
            return []
        o = self.options
        args: list[Any] = [o.max_backlog, self._keep_ms, new_epoch_id()]
        for key, payload in entries:
            args += [key or "", payload]
        keys = [o.stream, o.stats_key, *self._windows("keys"), o.epoch_key]
        answers, epoch, backlog = self._add(keys=keys, args=args)
        self.epoch, self.backlog = as_text(epoch), int(backlog)
        return [int(x) for x in answers]

    def publishable(self, entries: Sequence[tuple[str, str | None]]) -> list[int]:
        """Per ``(entry id, key)``: ``PUBLISH``, ``ALREADY_PUBLISHED`` (its key was published
        in the last ``dedupe_s``) or ``NOT_MINE`` (pending for another consumer, or gone)."""
        if not entries:
            return []
        o = self.options
        args: list[Any] = [o.group, o.consumer, *id_range(e[0] for e in entries)]
        for entry_id, key in entries:
            args += [entry_id, key or ""]
        keys = [o.stream, *self._windows("done")]
        return [int(x) for x in self._publishable(keys=keys, args=args)]

    def ack(self, entries: Sequence[tuple[str, str | None, bool]]) -> list[bool]:
        """Acknowledge and delete ``(entry id, key, published)`` entries still pending for this
        consumer; True for each one that was (``published`` False: a duplicate, skipped)."""
        if not entries:
            return []
        o = self.options
        args: list[Any] = [o.group, o.consumer, *id_range(e[0] for e in entries), self._keep_ms]
        for entry_id, key, published in entries:
            args += [entry_id, key or "", "1" if published else "0"]
        keys = [o.stream, o.stats_key, self._windows("done")[0]]
        return [bool(x) for x in self._ack(keys=keys, args=args)]

    def renew(self, ids: Sequence[str]) -> list[bool]:
        """Reset the idle time of entries still pending for this consumer; True for each."""
        if not ids:
            return []
        o = self.options
        args = [o.group, o.consumer, *id_range(ids), *ids]
        return [bool(x) for x in self._renew(keys=[o.stream], args=args)]

    def dead_letter(self, entry_id: str, payload: bytes, reason: str, deliveries: int) -> bool:
        """Move one pending entry to the dead-letter stream; False if no longer pending."""
        o = self.options
        keys = [o.stream, o.stats_key, o.dead_stream]
        args = [o.group, entry_id, payload, reason, deliveries, DEAD_LETTER_KEEP]
        return bool(self._dead(keys=keys, args=args))

    def note_undelivered(self, ids: Sequence[str], sinks: Sequence[str]) -> None:
        """Remember which ``sinks`` did not confirm the delivery of ``ids``' results, for the
        dead letter of an entry that never gets through (``undelivered_to``). Each note expires
        by itself once its entry would have been dead-lettered: nothing to clean up on ack."""
        o = self.options
        keep_ms = int(((o.max_deliveries + 2) * o.reclaim_idle_s + 60) * 1000)
        pipe = self.client.pipeline(transaction=False)
        for entry_id in ids:
            pipe.set(f"{o.undelivered_prefix}{entry_id}", ",".join(sinks), px=keep_ms)
        pipe.execute()

    def undelivered_to(self, entry_id: str) -> str | None:
        """The sinks that last did not confirm ``entry_id``'s delivery (``note_undelivered``)."""
        found = self.client.get(f"{self.options.undelivered_prefix}{entry_id}")
        return None if found is None else as_text(found)

    def deliveries(self, entry_id: str) -> int:
        """How many times ``entry_id`` has been delivered to the group (this claim included)."""
        o = self.options
        rows = self.client.xpending_range(o.stream, o.group, min=entry_id, max=entry_id, count=1)
        return int(rows[0]["times_delivered"]) if rows else 1

    def ensure_group(self) -> bool:
        """Create the consumer group (and the stream) if missing; True if it was created."""
        o = self.options
        keys = [o.stream, o.stats_key, o.epoch_key]
        created, epoch = self._ensure_group(keys=keys, args=[o.group, new_epoch_id()])
        self.epoch = as_text(epoch)
        return bool(created)

    def prune_consumers(self, idle_s: float) -> list[str]:
        """Remove the group's consumers idle for ``idle_s`` with nothing pending (never this
        one); their names."""
        o = self.options
        removed = self._prune(keys=[o.stream], args=[o.group, int(idle_s * 1000), o.consumer])
        return [as_text(name) for name in removed]

    def stats(self) -> dict[str, int]:
        """The fleet's counters: submitted, published, duplicates, dead_lettered, ..."""
        raw = self.client.hgetall(self.options.stats_key)
        return {as_text(k): int(v) for k, v in raw.items()}

    def current_epoch(self) -> dict[str, str]:
        """The stream's epoch (``id``, ``created_ms``); empty when the key is missing."""
        raw = self.client.hgetall(self.options.epoch_key)
        return {as_text(k): as_text(v) for k, v in raw.items()}


def new_epoch_id() -> str:
    """A candidate epoch id: the one written if the stream has none yet."""
    return secrets.token_hex(8)


def id_order(entry_id: str) -> tuple[int, int]:
    """A stream entry id (``<ms>-<seq>``) as a sortable pair."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def id_range(ids: Iterable[str]) -> tuple[str, str]:
    """The lowest and highest of some entry ids (for ``XPENDING start end``)."""
    ordered = sorted(ids, key=id_order)
    return ordered[0], ordered[-1]


def as_text(value: bytes | str) -> str:
    """A reply value (bytes from the client) as text."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def entry_field(fields: Any, name: str = FIELD) -> bytes:
    """One field of a stream entry as bytes (b"" when absent)."""
    fields = fields or {}
    value = fields.get(name.encode(), fields.get(name, b""))
    return value if isinstance(value, bytes) else str(value).encode()
