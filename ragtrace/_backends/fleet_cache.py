"""A cache in Redis that every worker of a fleet reads and writes: a chunk is embedded once.

Each worker process keeps its own LRU caches, and the processes of one worker share a memory
segment (``ragtrace._backends.shared_cache``); across machines, two workers that meet the same
passage would each embed it. ``ragtrace worker`` therefore installs a ``FleetCache`` on the
Redis that carries its queue (``RAGTRACE_FLEET_CACHE_MB``, default 256; 0 turns it off): the
embedder, the sentence splitter and the NER backend ask it after their process's caches and the
passage store missed (``ragtrace._backends.cache_tiers``), and store what they computed in it.

Bound and eviction: the cache is ``slots`` direct-mapped keys (``<prefix>:<slot>``, the slot
picked by a 16-byte BLAKE2b digest of (namespace, text)), each holding the digest and the value.
A value larger than ``CAPACITY`` bytes is not stored, so the cache never holds more than about
``slots * SLOT_BYTES`` bytes (``size_mb`` megabytes). A new entry replaces whatever held its
slot (the newest of the texts that share a slot wins, as in the shared memory cache), and every
entry expires ``ttl_s`` after it was written. Redis's own ``maxmemory`` eviction is not relied
on: the queue's streams live in the same Redis and must never be evicted.

A slot read back is accepted only when its stored digest is the text's: another text's value is
a miss, never a wrong answer. Values are raw bytes (vectors as float32, splits and entities as
JSON); nothing read from Redis is unpickled. Keys carry the queue's stream name, so a hash tag in
it (``{ragtrace}:work``) keeps them in one Redis Cluster slot, where ``MGET`` works.

A Redis that errs or times out never fails an evaluation: the lookup counts as an ``error``, the
value is computed, and the cache is left alone for ``RETRY_AFTER_S`` seconds (logged, at most
once a minute) so a dead Redis costs no time per record::

    cache = FleetCache.connect("redis://127.0.0.1:6379/0", prefix="ragtrace:work:cache")
    fleet_cache.install(cache)        # this process's backends use it
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._backends._loading import from_env
from ragtrace._backends.shared_cache import key_digest

SIZE_ENV = "RAGTRACE_FLEET_CACHE_MB"
DEFAULT_MB = 256.0
DEFAULT_TTL_S = 7 * 24 * 3600.0
SLOT_BYTES = 2048  # a slot's share of the bound: the value, its digest, Redis's key overhead
DIGEST_BYTES = 16
CAPACITY = SLOT_BYTES - DIGEST_BYTES - 128  # largest value stored
TIMEOUT_S = 0.5  # per command: a slow Redis must not hold evaluation up
RETRY_AFTER_S = 5.0
LOG_EVERY_S = 60.0

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FleetCacheSpec:
    """What a worker process needs to open the same fleet cache (pickled to it)."""

    url: str
    prefix: str
    slots: int
    ttl_s: float


@dataclass
class FleetStats:
    """What one process saw of the fleet cache.

    Attributes:
        hits: Lookups that found their value.
        misses: Lookups that did not (no entry, or another text's).
        errors: Lookups that failed or were skipped while Redis was failing.
        writes: Values stored.
        too_large: Values not stored because they exceed ``CAPACITY``.
    """

    hits: int = 0
    misses: int = 0
    errors: int = 0
    writes: int = 0
    too_large: int = 0


class FleetCache:
    """A bounded map from (namespace, text) to bytes in Redis, shared by a fleet's workers.

    Args:
        client: A ``redis.Redis`` (thread-safe; its commands should time out quickly).
        prefix: Key prefix (``<stream>:cache`` in ``ragtrace worker``).
        slots: Keys the cache may use (its bound: ``slots * SLOT_BYTES`` bytes).
        ttl_s: Seconds an entry lives after it was written.
        spec: How another process opens the same cache (``connect`` fills it in).

    Raises:
        ValueError: ``slots`` below 1, ``ttl_s`` not positive, or an empty prefix.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        slots: int,
        ttl_s: float = DEFAULT_TTL_S,
        spec: FleetCacheSpec | None = None,
    ) -> None:
        if not prefix or isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"a fleet cache needs a prefix and >= 1 slots, got {slots!r}")
        if not ttl_s > 0:
            raise ValueError(f"fleet cache ttl_s must be > 0, got {ttl_s!r}")
        self.client = client
        self.prefix = prefix
        self.slots = slots
        self.ttl_s = float(ttl_s)
        self.spec = spec
        self.stats = FleetStats()
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._logged_at = -LOG_EVERY_S

    @classmethod
    def connect(
        cls, url: str, *, prefix: str, size_mb: float | None = None, ttl_s: float = DEFAULT_TTL_S
    ) -> FleetCache:
        """A cache on the Redis at ``url`` holding about ``size_mb`` megabytes (default
        ``$RAGTRACE_FLEET_CACHE_MB`` or 256). No connection is made until the first lookup."""
        import redis

        slots = slots_for(configured_mb(size_mb))
        if slots < 1:
            raise ValueError("fleet cache size must be > 0 MB (0 means no fleet cache)")
        client = redis.Redis.from_url(
            url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
        )
        spec = FleetCacheSpec(url, prefix, slots, float(ttl_s))
        return cls(client, prefix=prefix, slots=slots, ttl_s=ttl_s, spec=spec)

    @classmethod
    def from_spec(cls, spec: FleetCacheSpec) -> FleetCache:
        """The cache ``spec`` names, with a client of this process's own."""
        import redis

        client = redis.Redis.from_url(
            spec.url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
        )
        return cls(client, prefix=spec.prefix, slots=spec.slots, ttl_s=spec.ttl_s, spec=spec)

    def get_many(self, namespace: str, keys: Sequence[str]) -> list[bytes | None] | None:
        """The values stored for ``keys`` (None where missing), from one round trip; None as a
        whole when Redis failed (or is being left alone after failing)."""
        if not keys:
            return []
        if not self._up():
            self._count("errors", len(keys))
            return None
        digests = [key_digest(namespace, k) for k in keys]
        try:
            raw = self.client.mget([self._key(d) for d in digests])
        except Exception as exc:
            self._failed(exc)
            self._count("errors", len(keys))
            return None
        values: list[bytes | None] = []
        for digest, stored in zip(digests, raw, strict=True):
            ok = isinstance(stored, bytes) and stored[:DIGEST_BYTES] == digest
            values.append(stored[DIGEST_BYTES:] if ok else None)
        hits = sum(v is not None for v in values)
        self._count("hits", hits)
        self._count("misses", len(values) - hits)
        return values

    def put_many(self, namespace: str, items: Sequence[tuple[str, bytes]]) -> int:
        """Store each (key, value) in one round trip; how many were stored (values past
        ``CAPACITY`` are left out; nothing is stored while Redis fails)."""
        fitting = [(k, v) for k, v in items if len(v) <= CAPACITY]
        self._count("too_large", len(items) - len(fitting))
        if not fitting or not self._up():
            return 0
        ttl_ms = int(self.ttl_s * 1000)
        try:
            with self.client.pipeline(transaction=False) as pipe:
                for key, value in fitting:
                    digest = key_digest(namespace, key)
                    pipe.set(self._key(digest), digest + value, px=ttl_ms)
                pipe.execute()
        except Exception as exc:
            self._failed(exc)
            return 0
        self._count("writes", len(fitting))
        return len(fitting)

    def get(self, namespace: str, key: str) -> bytes | None:
        """The value stored for ``key``, or None (missing, or Redis failing)."""
        found = self.get_many(namespace, [key])
        return None if not found else found[0]

    def put(self, namespace: str, key: str, value: bytes) -> bool:
        """Store one value; False when it was not stored."""
        return self.put_many(namespace, [(key, value)]) == 1

    def close(self) -> None:
        """Close the client's connections."""
        try:
            self.client.close()
        except Exception as exc:  # closing must never raise into a shutdown
            log.debug("fleet cache: closing the Redis client: %s", exc)

    def _key(self, digest: bytes) -> str:
        return f"{self.prefix}:{int.from_bytes(digest[:8], 'little') % self.slots:x}"

    def _up(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._down_until = now + RETRY_AFTER_S
            quiet = now - self._logged_at < LOG_EVERY_S
            if not quiet:
                self._logged_at = now
        if not quiet:
            log.warning(
                "fleet cache: Redis failed (%s: %s); computing without it for %gs",
                type(exc).__name__,
                exc,
                RETRY_AFTER_S,
            )

    def _count(self, what: str, n: int) -> None:
        if n:
            with self._lock:
                setattr(self.stats, what, getattr(self.stats, what) + n)


def configured_mb(size_mb: float | None = None) -> float:
    """``size_mb``, else ``$RAGTRACE_FLEET_CACHE_MB``, else ``DEFAULT_MB``; 0 means no cache."""
    where = "fleet cache size"
    if size_mb is None:
        where = f"${SIZE_ENV}"
        size_mb = from_env(SIZE_ENV, DEFAULT_MB, float, "a number of megabytes")
    if isinstance(size_mb, bool) or not size_mb >= 0 or size_mb == float("inf"):
        raise ValueError(f"{where} must be a finite number >= 0 (MB), got {size_mb!r}")
    return float(size_mb)


def slots_for(size_mb: float) -> int:
    """How many slots ``size_mb`` megabytes hold."""
    return int(size_mb * 1024 * 1024) // SLOT_BYTES


_current: FleetCache | None = None


def install(cache: FleetCache | None) -> None:
    """Make ``cache`` the one this process's backends use (None: none)."""
    global _current
    _current = cache


def current() -> FleetCache | None:
    """The fleet cache installed in this process, if any."""
    return _current


def installed_spec() -> FleetCacheSpec | None:
    """How a worker process of this one opens the installed cache (None: none installed)."""
    return None if _current is None else _current.spec
