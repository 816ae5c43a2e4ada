"""Where a backend looks after its own cache misses, and where it keeps what it computed.

Three tiers stand behind each embedder's, sentence splitter's and NER analyzer's own LRU cache,
all keyed by (namespace, text) and holding raw bytes, asked in this order:

1. the shared memory cache of a process pool (``ragtrace._backends.shared_cache``), when this
   process belongs to one;
2. the passage store filled at indexing time (``ragtrace._backends.passage_store``), when one is
   installed or named by ``$RAGTRACE_PASSAGE_STORE``;
3. the fleet's cache in Redis (``ragtrace._backends.fleet_cache``), which ``ragtrace worker``
   installs: what any worker of the fleet computed.

A value found in the store or the fleet cache is copied into the shared cache, so the pool's
other processes find it in memory. What a backend computes goes to the shared cache and the
fleet cache, and to the store only when the store is open for writing (``ragtrace index``).
``lookup_many`` and ``keep_many`` ask the fleet cache about many texts in one round trip.

Each lookup is counted by tier and result in ``ragtrace._backends.tier_counts.COUNTS``, which
``ragtrace_cache_lookups_total`` exports.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace._backends import fleet_cache, passage_store, shared_cache
from ragtrace._backends.tier_counts import (
    COUNTS,
    ERROR,
    FLEET_CACHE,
    HIT,
    MISS,
    PASSAGE_STORE,
    SHARED_CACHE,
)


def lookup(namespace: str, key: str) -> bytes | None:
    """The value a tier holds for ``key`` in ``namespace``, or None."""
    return lookup_many(namespace, [key])[0]


def lookup_many(namespace: str, keys: Sequence[str]) -> list[bytes | None]:
    """The value a tier holds for each of ``keys`` (None where none does), in order."""
    found: list[bytes | None] = [None] * len(keys)
    cache = shared_cache.current()
    store = passage_store.current()
    todo = list(range(len(keys)))
    if cache is not None:
        for i in todo:
            found[i] = cache.get(namespace, keys[i])
        hits = sum(found[i] is not None for i in todo)
        COUNTS.add(SHARED_CACHE, HIT, hits)
        COUNTS.add(SHARED_CACHE, MISS, len(todo) - hits)
        todo = [i for i in todo if found[i] is None]
    if store is not None:
        for i in todo:
            value, result = store.lookup(namespace, keys[i])
            COUNTS.add(PASSAGE_STORE, result)
            found[i] = value
        _copy_to(cache, namespace, keys, found, todo)
        todo = [i for i in todo if found[i] is None]
    fleet = fleet_cache.current()
    if fleet is not None and todo:
        values = fleet.get_many(namespace, [keys[i] for i in todo])
        if values is None:
            COUNTS.add(FLEET_CACHE, ERROR, len(todo))
        else:
            for i, value in zip(todo, values, strict=True):
                found[i] = value
            hits = sum(v is not None for v in values)
            COUNTS.add(FLEET_CACHE, HIT, hits)
            COUNTS.add(FLEET_CACHE, MISS, len(todo) - hits)
            _copy_to(cache, namespace, keys, found, todo)
    return found


def keep(namespace: str, key: str, value: bytes) -> None:
    """Store a computed value in the tiers that take it."""
    keep_many(namespace, [(key, value)])


def keep_many(namespace: str, items: Sequence[tuple[str, bytes]]) -> None:
    """Store computed values in the tiers that take them (the fleet cache in one round trip)."""
    cache = shared_cache.current()
    if cache is not None:
        for key, value in items:
            cache.put(namespace, key, value)
    store = passage_store.current()
    if store is not None and store.writable:
        for key, value in items:
            store.put(namespace, key, value)
    fleet = fleet_cache.current()
    if fleet is not None and items:
        fleet.put_many(namespace, items)


def writing() -> bool:
    """Whether a writable passage store is installed (``ragtrace index`` is running): values a
    backend finds in its own cache are then kept too, since the store may lack them."""
    store = passage_store.installed()  # a store the variable names is never writable
    return store is not None and store.writable


def active() -> bool:
    """Whether any tier is there to ask (so a backend can skip building keys when none is)."""
    return (
        shared_cache.current() is not None
        or passage_store.current() is not None
        or fleet_cache.current() is not None
    )


def _copy_to(
    cache: shared_cache.SharedCache | None,
    namespace: str,
    keys: Sequence[str],
    found: Sequence[bytes | None],
    rows: Sequence[int],
) -> None:
    """Copy values a slower tier gave into the pool's shared cache."""
    if cache is None:
        return
    for i in rows:
        value = found[i]
        if value is not None:
            cache.put(namespace, keys[i], value)
