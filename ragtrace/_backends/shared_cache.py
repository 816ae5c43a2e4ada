"""A cache in shared memory that the worker processes of one pool read and write together.

Each worker process keeps its own LRU caches of sentence vectors and NER results; on their own,
two processes each compute every passage they meet, so a second process speeds up traffic with
recurring passages far less than it speeds up repeated traffic. A ``ProcessPool`` therefore
creates one ``SharedCache`` (``multiprocessing.shared_memory``, ``RAGTRACE_SHARED_CACHE_MB``
megabytes, default 32) and installs it in every process it starts; the embedder and the NER
backend look in it after their own cache misses and store what they computed. Outside a pool
``current()`` is None and nothing changes.

Layout: fixed slots of ``SLOT_BYTES`` (2 kB), direct-mapped by a 16-byte BLAKE2b digest of
(namespace, key). A slot holds the key's digest, the value's length, an 8-byte check (a digest
of the key's digest and the value) and the value. There are no locks: a writer overwrites the
slot, and a reader copies it once and accepts it only when the key digest and the check both
match, so a slot read while another process writes it, or written by two at once, is a miss
(counted as ``torn``), never another key's value. Values longer than a slot are not shared
(counted as ``too_large``). Values are raw bytes: vectors as float32, entities as JSON; nothing
read from the segment is unpickled. The segment is created readable by this user only (mode
0600) and unlinked when the pool closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragtrace._backends._loading import from_env

if TYPE_CHECKING:
    from multiprocessing import shared_memory

SLOT_BYTES = 2048
DEFAULT_MB = 32.0
SIZE_ENV = "RAGTRACE_SHARED_CACHE_MB"
_HEADER = struct.Struct("<16sI8s")  # key digest, value length, value digest
CAPACITY = SLOT_BYTES - _HEADER.size

log = logging.getLogger(__name__)


@dataclass
class CacheStats:
    """What one process saw of the shared cache.

    Attributes:
        hits: Lookups that found their value.
        misses: Lookups that did not (slot empty or holding another key).
        torn: Lookups that found the key but a value being written (treated as misses).
        writes: Values stored.
        too_large: Values not stored because they exceed a slot.
    """

    hits: int = 0
    misses: int = 0
    torn: int = 0
    writes: int = 0
    too_large: int = 0


class SharedCache:
    """A fixed-size map from (namespace, text) to bytes in a shared memory segment.

    Build one with ``create`` (the owner, which unlinks it on ``close``) or ``attach``.
    """

    def __init__(self, memory: shared_memory.SharedMemory, *, owner: bool) -> None:
        self._memory = memory
        self._owner = owner
        self.slots = memory.size // SLOT_BYTES
        if self.slots < 1 or memory.buf is None:
            memory.close()
            raise ValueError(f"a shared cache needs at least {SLOT_BYTES} bytes")
        self._buf: memoryview = memory.buf
        self.stats = CacheStats()

    @classmethod
    def create(cls, size_mb: float) -> SharedCache:
        """A new zeroed segment of ``size_mb`` megabytes (rounded down to whole 4 kB pages)."""
        if not size_mb > 0:
            raise ValueError(f"shared cache size must be > 0 MB, got {size_mb!r}")
        from multiprocessing import shared_memory  # only processes that share a cache pay for it

        slots = max(2, int(size_mb * 1024 * 1024) // SLOT_BYTES // 2 * 2)
        return cls(shared_memory.SharedMemory(create=True, size=slots * SLOT_BYTES), owner=True)

    @classmethod
    def attach(cls, name: str) -> SharedCache:
        """The segment ``name`` created by another process."""
        from multiprocessing import shared_memory

        return cls(shared_memory.SharedMemory(name=name), owner=False)

    @property
    def name(self) -> str:
        """What ``attach`` takes."""
        return self._memory.name

    def get(self, namespace: str, key: str) -> bytes | None:
        """The value stored for ``key`` in ``namespace``, or None."""
        digest = key_digest(namespace, key)
        start = self._slot(digest)
        raw = bytes(self._buf[start : start + SLOT_BYTES])
        stored, length, check = _HEADER.unpack_from(raw)
        if stored != digest:
            self.stats.misses += 1
            return None
        value = raw[_HEADER.size : _HEADER.size + length]
        if length > CAPACITY or _value_digest(digest, value) != check:
            self.stats.torn += 1
            return None
        self.stats.hits += 1
        return value

    def put(self, namespace: str, key: str, value: bytes) -> bool:
        """Store ``value`` for ``key``, replacing whatever held its slot; False when too large."""
        if len(value) > CAPACITY:
            self.stats.too_large += 1
            return False
        digest = key_digest(namespace, key)
        start = self._slot(digest)
        buf = self._buf
        buf[start + _HEADER.size : start + _HEADER.size + len(value)] = value
        _HEADER.pack_into(buf, start, digest, len(value), _value_digest(digest, value))
        self.stats.writes += 1
        return True

    def close(self) -> None:
        """Detach; the owner also removes the segment."""
        self._memory.close()
        if self._owner:
            with contextlib.suppress(FileNotFoundError):
                self._memory.unlink()

    def _slot(self, digest: bytes) -> int:
        return int.from_bytes(digest[:8], "little") % self.slots * SLOT_BYTES


def key_digest(namespace: str, key: str) -> bytes:
    """The 16-byte digest that stands for (namespace, key) here and in passage stores."""
    data = f"{namespace}\x00{key}".encode("utf-8", errors="surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


def _value_digest(digest: bytes, value: bytes) -> bytes:
    """The check of a slot: it covers the key's digest too, so a header whose parts come from
    two writes (one process's key digest, another's length and check) fails it."""
    return hashlib.blake2b(digest + value, digest_size=8).digest()


def configured_mb(size_mb: float | None = None) -> float:
    """``size_mb``, else ``$RAGTRACE_SHARED_CACHE_MB``, else ``DEFAULT_MB``; 0 means no cache."""
    if size_mb is None:
        size_mb = from_env(SIZE_ENV, DEFAULT_MB, float, "a number of megabytes")
    if not size_mb >= 0 or size_mb == float("inf"):
        raise ValueError(f"shared cache size must be a finite number >= 0 MB, got {size_mb!r}")
    return size_mb


def create_for_pool(size_mb: float | None = None) -> SharedCache | None:
    """The cache a new process pool shares, or None when turned off (0 MB) or when shared
    memory is unavailable here (logged: the pool still works, with per-process caches)."""
    size = configured_mb(size_mb)
    if size == 0:
        return None
    try:
        return SharedCache.create(size)
    except OSError as exc:
        log.warning("no shared cache for worker processes (%s); each keeps its own", exc)
        return None


_current: SharedCache | None = None


def install(cache: SharedCache | None) -> None:
    """Make ``cache`` the one this process's backends use (None: none)."""
    global _current
    _current = cache


def current() -> SharedCache | None:
    """The shared cache installed in this process, if any."""
    return _current
