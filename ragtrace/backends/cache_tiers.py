"""Where a backend looks after its own cache misses, and where it keeps what it computed.

Two tiers stand behind each embedder's and NER analyzer's own LRU cache, both keyed by
(namespace, text) and holding raw bytes:

1. the shared memory cache of a process pool (``ragtrace.backends.shared_cache``), when this
   process belongs to one;
2. the passage store filled at indexing time (``ragtrace.backends.passage_store``), when one is
   installed or named by ``$RAGTRACE_PASSAGE_STORE``.

A value found in the store is copied into the shared cache, so the pool's other processes find
it in memory. What a backend computes goes to the shared cache, and to the store only when the
store is open for writing (``ragtrace index``).

Each lookup is counted by tier and result in ``ragtrace.backends.tier_counts.COUNTS``, which
``ragtrace_cache_lookups_total`` exports.
"""

from __future__ import annotations

from ragtrace.backends import passage_store, shared_cache
from ragtrace.backends.tier_counts import COUNTS, HIT, MISS, PASSAGE_STORE, SHARED_CACHE


def lookup(namespace: str, key: str) -> bytes | None:
    """The value a tier holds for ``key`` in ``namespace``, or None."""
    cache = shared_cache.current()
    if cache is not None:
        value = cache.get(namespace, key)
        COUNTS.add(SHARED_CACHE, MISS if value is None else HIT)
        if value is not None:
            return value
    store = passage_store.current()
    if store is None:
        return None
    value, result = store.lookup(namespace, key)
    COUNTS.add(PASSAGE_STORE, result)
    if value is not None and cache is not None:
        cache.put(namespace, key, value)
    return value


def keep(namespace: str, key: str, value: bytes) -> None:
    """Store a computed value in the tiers that take it."""
    cache = shared_cache.current()
    if cache is not None:
        cache.put(namespace, key, value)
    store = passage_store.current()
    if store is not None and store.writable:
        store.put(namespace, key, value)


def writing() -> bool:
    """Whether a writable passage store is installed (``ragtrace index`` is running): values a
    backend finds in its own cache are then kept too, since the store may lack them."""
    store = passage_store.installed()  # a store the variable names is never writable
    return store is not None and store.writable


def active() -> bool:
    """Whether any tier is there to ask (so a backend can skip building keys when none is)."""
    return shared_cache.current() is not None or passage_store.current() is not None
