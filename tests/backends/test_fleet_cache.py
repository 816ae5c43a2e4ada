"""The fleet cache on a real redis-server: bounded, never wrong, shared, harmless when down."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragtrace._backends import cache_tiers, fleet_cache
from ragtrace._backends.embeddings import CachedEmbedder, get_embedder
from ragtrace._backends.fleet_cache import CAPACITY, FleetCache
from ragtrace._backends.tier_counts import COUNTS, ERROR, FLEET_CACHE, HIT, MISS, since
from tests.components import free_port
from tests.redis_server import RedisServer, run_redis


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    with run_redis(tmp_path / "redis") as server:
        yield server


@pytest.fixture(autouse=True)
def no_fleet_cache() -> Iterator[None]:
    fleet_cache.install(None)
    yield
    fleet_cache.install(None)


def test_values_round_trip_with_a_ttl_and_other_texts_miss(redis_server: RedisServer) -> None:
    cache = FleetCache.connect(redis_server.url, prefix="t:cache", size_mb=1, ttl_s=60)
    assert cache.slots == 512
    assert cache.put_many("embedding:m", [("a chunk", b"\x01\x02"), ("another", b"\x03")]) == 2
    assert cache.get_many("embedding:m", ["a chunk", "another", "unseen"]) == [
        b"\x01\x02",
        b"\x03",
        None,
    ]
    assert cache.get("embedding:other-model", "a chunk") is None  # namespaces never mix
    client = redis_server.client()
    keys = client.keys("t:cache:*")
    assert len(keys) == 2
    assert all(0 < client.pttl(k) <= 60_000 for k in keys)
    assert (cache.stats.hits, cache.stats.misses, cache.stats.writes) == (2, 2, 2)


def test_the_cache_is_bounded_and_a_shared_slot_is_a_miss_never_a_wrong_value(
    redis_server: RedisServer,
) -> None:
    cache = FleetCache(redis_server.client(), prefix="t:cache", slots=4)
    texts = [f"passage sentence {i}" for i in range(100)]
    cache.put_many("ns", [(t, t.encode()) for t in texts])
    assert len(redis_server.client().keys("t:cache:*")) <= 4  # the bound: 4 slots
    found = cache.get_many("ns", texts)
    kept = [t for t, v in zip(texts, found, strict=True) if v is not None]
    assert 1 <= len(kept) <= 4
    assert all(v is None or v == t.encode() for t, v in zip(texts, found, strict=True))
    assert cache.put("ns", "huge", b"x" * (CAPACITY + 1)) is False
    assert cache.stats.too_large == 1


def test_a_redis_that_is_down_costs_an_error_count_not_an_evaluation() -> None:
    cache = FleetCache.connect(f"redis://127.0.0.1:{free_port()}/0", prefix="t:cache", size_mb=1)
    fleet_cache.install(cache)
    before = COUNTS.snapshot()
    started = time.monotonic()
    assert cache_tiers.lookup_many("ns", ["a", "b"]) == [None, None]
    cache_tiers.keep_many("ns", [("a", b"1")])
    assert cache_tiers.lookup_many("ns", ["a"]) == [None]  # left alone for a while: no wait
    assert time.monotonic() - started < 3 * fleet_cache.TIMEOUT_S + 1
    assert since(COUNTS.snapshot(), before) == {(FLEET_CACHE, ERROR): 3}
    assert cache.stats.errors == 3 and cache.stats.writes == 0


def _counting(model: Any, calls: list[str]) -> Any:
    def encode(texts: list[str]) -> Any:
        calls.extend(texts)
        return model(texts)

    return encode


def test_a_chunk_one_worker_embedded_is_not_embedded_by_another(
    redis_server: RedisServer,
) -> None:
    """Two workers: each its own embedder (own LRU cache, own model calls) and own Redis client;
    all they share is the fleet cache."""
    model = get_embedder(cache_size=0)._encoder  # the packaged MiniLM
    chunk = ["Hold the reset button for ten seconds.", "The light then blinks green."]
    workers = []
    for _ in range(2):
        calls: list[str] = []
        embedder = CachedEmbedder("minilm", _counting(model, calls), batch_size=8, cache_size=100)
        cache = FleetCache.connect(redis_server.url, prefix="fleet:cache", size_mb=1)
        workers.append((embedder, calls, cache))
    (first, first_calls, first_cache), (second, second_calls, second_cache) = workers

    fleet_cache.install(first_cache)
    vectors = first.encode(["How do I reset my router?", *chunk])
    assert sorted(first_calls) == sorted(["How do I reset my router?", *chunk])

    fleet_cache.install(second_cache)
    before = COUNTS.snapshot()
    again = second.encode(["Why is my router slow?", *chunk])
    assert second_calls == ["Why is my router slow?"]  # the chunk came from Redis
    assert (again[1:] == vectors[1:]).all()
    assert since(COUNTS.snapshot(), before) == {(FLEET_CACHE, HIT): 2, (FLEET_CACHE, MISS): 1}
    assert second.shared_hits == 2
