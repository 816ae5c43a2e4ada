"""Lookups in the cache tiers, counted by tier and result and exported as
``ragtrace_cache_lookups_total``, worker processes' lookups included.

Real SQLite stores and shared memory; the pipeline test runs the packaged MiniLM in a real
``spawn`` process (the evaluator lives at module level so it can import it).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from prometheus_client import CollectorRegistry

from ragtrace._backends import cache_tiers, passage_store, shared_cache
from ragtrace._backends.passage_store import PassageStore
from ragtrace._backends.tier_counts import (
    COUNTS,
    ERROR,
    HIT,
    MISS,
    PASSAGE_STORE,
    SHARED_CACHE,
    TierCounts,
    by_tier,
    line,
    since,
)
from ragtrace._metrics.collection import Metrics
from tests.components import missing_component
from tests.test_passage_store import (  # store_misses: a module-level evaluator
    SENTENCES,
    sentence_records,
    sentence_store,
    store_misses,
)

FAMILY = "ragtrace_cache_lookups_total"


def store_at(path: Path, items: dict[tuple[str, str], bytes]) -> PassageStore:
    writer = PassageStore(path, writable=True)
    for (namespace, key), value in items.items():
        writer.put(namespace, key, value)
    writer.close()
    return PassageStore(path)


def test_counts_only_grow_and_odd_reports_are_ignored() -> None:
    counts = TierCounts()
    counts.add(PASSAGE_STORE, HIT)
    counts.add(PASSAGE_STORE, HIT, 4)
    before = counts.snapshot()
    counts.merge(
        {
            (SHARED_CACHE, MISS): 3,
            ("disk", HIT): 9,  # no such tier
            (PASSAGE_STORE, "maybe"): 9,  # no such result
            (PASSAGE_STORE, MISS): -2,  # counts never go down
            (PASSAGE_STORE, ERROR): True,  # type: ignore[dict-item]
            "passage_store": 1,  # type: ignore[dict-item]
        }
    )
    counts.add(PASSAGE_STORE, HIT)
    assert counts.snapshot() == {(PASSAGE_STORE, HIT): 6, (SHARED_CACHE, MISS): 3}
    assert since(counts.snapshot(), before) == {(PASSAGE_STORE, HIT): 1, (SHARED_CACHE, MISS): 3}
    assert since(before, before) == {}
    run = {(PASSAGE_STORE, HIT): 1180, (PASSAGE_STORE, MISS): 18, (PASSAGE_STORE, ERROR): 2}
    assert by_tier(run) == {PASSAGE_STORE: {HIT: 1180, MISS: 18, ERROR: 2}}
    assert line(run) == "cache tiers: passage_store 1,180 of 1,200 lookups hit (98.3%), 2 errors"


def test_each_lookup_is_counted_by_tier_and_result(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    passage_store.install(store_at(path, {("ns", "a"): b"va"}))
    cache = shared_cache.SharedCache.create(1)
    shared_cache.install(cache)
    try:
        before = COUNTS.snapshot()
        assert cache_tiers.lookup("ns", "a") == b"va"  # shared miss, store hit (then shared)
        assert cache_tiers.lookup("ns", "a") == b"va"  # shared hit
        assert cache_tiers.lookup("ns", "b") is None  # shared miss, store miss
        path.write_bytes(b"\x00garbage" * 512)
        failed: list[bytes | None] = []  # a new thread opens its own connection to the file
        reader = threading.Thread(target=lambda: failed.append(cache_tiers.lookup("ns", "c")))
        reader.start()
        reader.join()
        assert failed == [None]
        assert since(COUNTS.snapshot(), before) == {
            (SHARED_CACHE, MISS): 3,
            (SHARED_CACHE, HIT): 1,
            (PASSAGE_STORE, HIT): 1,
            (PASSAGE_STORE, MISS): 1,
            (PASSAGE_STORE, ERROR): 1,
        }
    finally:
        shared_cache.install(None)
        cache.close()


def test_nothing_is_counted_without_tiers() -> None:
    before = COUNTS.snapshot()
    assert not cache_tiers.active()
    assert cache_tiers.lookup("ns", "a") is None
    assert COUNTS.snapshot() == before


def test_metrics_export_the_process_counts_at_each_scrape(tmp_path: Path) -> None:
    passage_store.install(store_at(tmp_path / "s.sqlite", {("ns", "a"): b"va"}))
    first = Metrics(CollectorRegistry(), app="a")
    second = Metrics(CollectorRegistry(), app="b")  # ragtrace.init twice: both see everything
    try:
        hit = {"tier": PASSAGE_STORE, "result": HIT}
        miss = {"tier": PASSAGE_STORE, "result": MISS}
        start = first.registry.get_sample_value(FAMILY, hit) or 0.0
        assert start == COUNTS.snapshot().get((PASSAGE_STORE, HIT), 0)  # from the process start
        for key in ("a", "a", "a", "zz"):
            cache_tiers.lookup("ns", key)
        assert first.registry.get_sample_value(FAMILY, hit) == start + 3
        assert second.registry.get_sample_value(FAMILY, hit) == start + 3
        assert (first.registry.get_sample_value(FAMILY, miss) or 0) >= 1
        assert first.registry.get_sample_value(FAMILY, hit) == start + 3  # a scrape adds nothing
    finally:
        first.unregister()
        second.unregister()


def test_worker_processes_report_their_lookups_to_the_pipeline_metrics(tmp_path: Path) -> None:
    from ragtrace._config import Config
    from ragtrace._pipeline import PipelineOptions

    from .test_pipeline import Harness

    path = sentence_store(tmp_path / "s.sqlite")
    config = Config(
        batch_wait_s=0.01, processes=1, workers=1, shared_cache_mb=1, passage_store=str(path)
    )
    opts = PipelineOptions(config)
    h = Harness([store_misses], options=opts)
    try:
        before = {
            (tier, result): h.value(FAMILY, tier=tier, result=result)
            for tier, result in ((PASSAGE_STORE, HIT), (PASSAGE_STORE, MISS), (SHARED_CACHE, MISS))
        }
        for record in sentence_records(3):
            h.pipeline.submit(record)
        assert h.pipeline.flush(120)
        assert [s.value for s in h.sink.scores()["store_misses"]] == [0.0] * 3
        # The worker process looked each sentence up once (then its own cache had it): the
        # pool's shared cache missed and the store answered; none of that ran in this process.
        added = {key: h.value(FAMILY, tier=key[0], result=key[1]) - n for key, n in before.items()}
        assert added == {(PASSAGE_STORE, HIT): 2, (PASSAGE_STORE, MISS): 0, (SHARED_CACHE, MISS): 2}
    finally:
        h.pipeline.shutdown(timeout_s=5)


def test_eval_over_an_indexed_corpus_reports_the_stores_answers(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from ragtrace._offline.index import index_passages
    from ragtrace.evaluators._suites import online_suite

    passages = [f"{s} It was chapter {i}." for i, s in enumerate(SENTENCES * 2)]
    store = PassageStore(tmp_path / "p.sqlite", writable=True)
    index_passages(passages, store, [e for e in online_suite() if e.name == "context_relevance"])
    store.close()
    data = tmp_path / "in.jsonl"
    rows = [
        {"id": str(i), "query": f"Who is person number {i}?", "response": "Ada.",
         "contexts": passages}
        for i in range(4)
    ]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [sys.executable, "-m", "ragtrace", "eval", "--input", str(data), "-e",
         "context_relevance", "--processes", "2", "--output", str(tmp_path / "out.jsonl"),
         "--summary-json", str(summary), "--no-progress"],
        env={**os.environ, passage_store.ENV: str(store.path)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lookups = json.loads(summary.read_text(encoding="utf-8"))["cache_lookups"]
    # Each of the 10 passage values (4 sentence splits, 6 distinct sentence vectors) came from
    # the store at least once (a second process may find some in the pool's shared memory);
    # the store missed only the 4 questions, which nobody indexed.
    assert lookups["passage_store"]["miss"] == 4
    assert 10 <= lookups["passage_store"]["hit"] <= 20
    assert "error" not in lookups["passage_store"]
    assert "\ncache tiers: shared_cache " in done.stdout
    assert "passage_store " in done.stdout and "lookups hit (" in done.stdout


def test_a_forked_child_counts_and_scrapes_though_the_parent_held_the_locks() -> None:
    """A thread of the parent holds the counts' lock and the metrics batch's lock at the fork
    (a lookup and a scrape under way): the child must neither wait on them nor lose counts."""
    import os

    if not hasattr(os, "fork"):
        missing_component("os.fork is not available on this platform")
    metrics = Metrics(CollectorRegistry(), app="a")
    list(metrics.registry.collect())  # the batch has run in this process
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with COUNTS._lock, metrics.deferred._apply_lock:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(5)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            signal.alarm(10)  # a deadlock ends the child, and the parent reads no answer
            before = COUNTS.snapshot().get((PASSAGE_STORE, HIT), 0)
            COUNTS.add(PASSAGE_STORE, HIT, 3)
            labels = {"tier": PASSAGE_STORE, "result": HIT}
            value = metrics.registry.get_sample_value(FAMILY, labels)
            os.write(write, b"1" if value == before + 3 else b"0")
        finally:
            os._exit(0)
    release.set()
    holder.join()
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    os.close(read)
    metrics.unregister()
    assert answer == b"1"
