"""``ragtrace._backends.shared_cache``: the cache the worker processes of a pool share.

The segment is real POSIX shared memory; other processes are real ``spawn`` processes, and the
pool tests run the packaged MiniLM and spaCy NER in them. The evaluators and process targets
live at module level, since a spawned process imports this module to find them.
"""

from __future__ import annotations

import multiprocessing
import os
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ragtrace._backends import shared_cache
from ragtrace._backends.shared_cache import CAPACITY, SLOT_BYTES, SharedCache
from ragtrace._engine.processes import ProcessPool
from ragtrace._model import Chunk, RagRecord, Score
from ragtrace.evaluators import evaluator

PASSAGES = (
    "Ada Lovelace wrote the first published algorithm in London in 1843.",
    "The Analytical Engine was designed by Charles Babbage.",
    "Grace Hopper worked on the Harvard Mark I computer.",
)


@pytest.fixture
def cache() -> Iterator[SharedCache]:
    made = SharedCache.create(1)
    yield made
    made.close()


def test_values_round_trip_by_namespace_and_key(cache: SharedCache) -> None:
    assert cache.slots == 512  # 1 MB of 2 kB slots
    assert cache.put("embedding:m", "hello", b"\x01\x02\x03")
    assert cache.get("embedding:m", "hello") == b"\x01\x02\x03"
    assert cache.get("embedding:other", "hello") is None
    assert cache.get("embedding:m", "hello!") is None
    assert cache.put("embedding:m", "hello", b"")  # empty values are values too
    assert cache.get("embedding:m", "hello") == b""
    assert (cache.stats.hits, cache.stats.misses, cache.stats.writes) == (2, 2, 2)


def test_odd_keys_are_keys(cache: SharedCache) -> None:
    for key in ("", "\ud800 lone surrogate", "x" * 3_000_000, "caf\u00e9\x00null"):
        assert cache.put("ns", key, key[:10].encode("utf-8", "surrogatepass"))
        assert cache.get("ns", key) == key[:10].encode("utf-8", "surrogatepass")


def test_a_colliding_key_replaces_the_slot_and_the_old_key_misses() -> None:
    small = SharedCache.create(SLOT_BYTES * 2 / 1024 / 1024)
    try:
        assert small.slots == 2
        keys = [f"k{i}" for i in range(6)]
        for key in keys:
            small.put("ns", key, key.encode())
        held = [k for k in keys if small.get("ns", k) is not None]
        assert 1 <= len(held) <= 2
        assert all(small.get("ns", k) == k.encode() for k in held)
    finally:
        small.close()


def test_a_value_too_large_for_a_slot_is_not_shared(cache: SharedCache) -> None:
    assert cache.put("ns", "fits", b"x" * CAPACITY)
    assert cache.get("ns", "fits") == b"x" * CAPACITY
    assert not cache.put("ns", "big", b"x" * (CAPACITY + 1))
    assert cache.get("ns", "big") is None
    assert cache.stats.too_large == 1


def test_a_slot_caught_mid_write_is_a_miss_not_a_wrong_value(cache: SharedCache) -> None:
    cache.put("ns", "key", b"the stored value")
    start = cache._slot(shared_cache.key_digest("ns", "key"))
    header = struct.calcsize("<16sI8s")
    # Another process has begun writing a different value into the slot: the header still
    # names "key", the value bytes are already someone else's.
    cache._buf[start + header : start + header + 3] = b"XYZ"
    assert cache.get("ns", "key") is None
    assert cache.stats.torn == 1
    # A length beyond the slot (a header half written) is a miss too.
    struct.pack_into("<I", cache._buf, start + 16, CAPACITY + 5)
    assert cache.get("ns", "key") is None
    assert cache.stats.torn == 2


def _write(name: str, keys: list[str]) -> None:
    other = SharedCache.attach(name)
    for key in keys:
        other.put("ns", key, f"value of {key}".encode())
    other.close()


def test_another_process_sees_what_one_wrote(cache: SharedCache) -> None:
    process = multiprocessing.get_context("spawn").Process(
        target=_write, args=(cache.name, ["a", "b"])
    )
    process.start()
    process.join(60)
    assert process.exitcode == 0
    assert cache.get("ns", "a") == b"value of a"
    assert cache.get("ns", "b") == b"value of b"


def _hammer(
    name: str, writer: int, rounds: int, queue: multiprocessing.Queue[tuple[int, int, int]]
) -> None:
    """Write and read eight keys that share four slots; report any value read for the wrong key."""
    other = SharedCache.attach(name)
    wrong = 0
    for i in range(rounds):
        key = f"k{(i + writer) % 8}"
        other.put("ns", key, (key * (50 + i % 400)).encode())
        for probe in ("k0", "k3", "k5"):
            value = other.get("ns", probe)
            if value is not None and value.decode().replace(probe, ""):
                wrong += 1
    queue.put((wrong, other.stats.hits, other.stats.torn))
    other.close()


def test_processes_writing_the_same_slots_never_read_a_wrong_value() -> None:
    tiny = SharedCache.create(SLOT_BYTES * 4 / 1024 / 1024)
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[tuple[int, int, int]] = context.Queue()
    try:
        processes = [
            context.Process(target=_hammer, args=(tiny.name, w, 20_000, queue)) for w in range(3)
        ]
        for p in processes:
            p.start()
        results = [queue.get(timeout=120) for _ in processes]
        for p in processes:
            p.join(60)
        assert [wrong for wrong, _, _ in results] == [0, 0, 0]
        assert sum(hits for _, hits, _ in results) > 0
    finally:
        tiny.close()


def test_closing_the_owner_removes_the_segment() -> None:
    made = SharedCache.create(1)
    name = made.name
    SharedCache.attach(name).close()  # a non-owner's close leaves it
    SharedCache.attach(name).close()
    made.close()
    made.close()  # twice is harmless
    with pytest.raises(FileNotFoundError):
        SharedCache.attach(name)


def test_size_comes_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(shared_cache.SIZE_ENV, raising=False)
    assert shared_cache.configured_mb() == shared_cache.DEFAULT_MB
    monkeypatch.setenv(shared_cache.SIZE_ENV, "8")
    assert shared_cache.configured_mb() == 8.0
    assert shared_cache.configured_mb(2) == 2.0
    monkeypatch.setenv(shared_cache.SIZE_ENV, "0")
    assert shared_cache.create_for_pool() is None
    monkeypatch.setenv(shared_cache.SIZE_ENV, "lots")
    with pytest.raises(ValueError, match="RAGTRACE_SHARED_CACHE_MB must be a number"):
        shared_cache.configured_mb()
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number >= 0"):
            shared_cache.configured_mb(bad)
    with pytest.raises(ValueError, match="> 0 MB"):
        SharedCache.create(0)


# -- in a pool, with the packaged models --------------------------------------------------------


@evaluator(name="embed_passages", requires={"response"})
def embed_passages(r: RagRecord) -> Score:
    """Embeds the record's chunks here and says how many came from where."""
    from ragtrace._backends.embeddings import get_embedder

    embedder = get_embedder()
    before = (embedder.misses, embedder.shared_hits)
    vectors = embedder.encode([c.text for c in r.chunks])
    return Score(
        "embed_passages",
        1.0,
        details={
            "pid": os.getpid(),
            "embedded": embedder.misses - before[0],
            "from_shared": embedder.shared_hits - before[1],
            "vectors": vectors.tolist(),
        },
    )


@evaluator(name="passage_entities", requires={"response"})
def passage_entities(r: RagRecord) -> Score:
    """NER over the record's chunks here, with the shared cache's hit count after it."""
    from ragtrace._backends.ner import get_ner

    found = get_ner().analyze([c.text for c in r.chunks])
    cache = shared_cache.current()
    return Score(
        "passage_entities",
        1.0,
        details={
            "entities": [[(e.entity_type, e.start, e.end) for e in row] for row in found],
            "shared_hits": None if cache is None else cache.stats.hits,
        },
    )


def _record() -> RagRecord:
    return RagRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        query="Who wrote the first algorithm?",
        chunks=tuple(Chunk(text, id=f"c{i}") for i, text in enumerate(PASSAGES)),
        response="Ada Lovelace.",
    )


def _details(pool: ProcessPool, index: int, slot: int) -> dict[str, Any]:
    outputs: Any = pool.call(index, [_record()], timeout_s=120, slot=slot)
    (scores,) = outputs
    return dict(scores[0].details)


def test_a_pool_embeds_a_passage_once_between_its_processes() -> None:
    pool = ProcessPool([embed_passages, passage_entities], 2, shared_cache_mb=4)
    try:
        first = _details(pool, 0, slot=0)
        second = _details(pool, 0, slot=1)
        assert first["pid"] != second["pid"]
        assert (first["embedded"], first["from_shared"]) == (3, 0)
        assert (second["embedded"], second["from_shared"]) == (0, 3)
        assert np.array_equal(np.asarray(first["vectors"]), np.asarray(second["vectors"]))

        ner_first = _details(pool, 1, slot=0)
        ner_second = _details(pool, 1, slot=1)
        assert ner_second["entities"] == ner_first["entities"]
        assert ["PERSON", 0, 12] in [list(e) for e in ner_first["entities"][0]]
        assert ner_second["shared_hits"] - ner_first["shared_hits"] >= 3
        name = pool.shared_cache.name  # type: ignore[union-attr]
    finally:
        pool.close()
    with pytest.raises(FileNotFoundError):
        SharedCache.attach(name)


def test_without_the_shared_cache_each_process_embeds_for_itself() -> None:
    pool = ProcessPool([embed_passages], 2, shared_cache_mb=0)
    try:
        assert pool.shared_cache is None
        first = _details(pool, 0, slot=0)
        second = _details(pool, 0, slot=1)
        assert (first["embedded"], second["embedded"]) == (3, 3)
        assert second["from_shared"] == 0
        assert np.allclose(np.asarray(first["vectors"]), np.asarray(second["vectors"]), atol=1e-6)
    finally:
        pool.close()
